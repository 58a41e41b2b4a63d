"""The one owner of cards, end to end: a card reads the same whichever process redraws
it, and a deleted pending card is posted again wherever its absence is noticed, in both
interrupt modes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_bridge.models import RunState
from agent_bridge.scripted_model import DEMO_TASK
from agent_bridge.settings import WorkerConfig
from tests.harness import DBA, Harness
from tests.test_expiry import Clock

FIXTURES = Path(__file__).parent / "fixtures"
WRITE_ONLY = {"tool_calls": [{"name": "write_file", "args": {"path": "a.txt", "content": "x"}}]}


def card_json(harness: Harness, channel_id: str | None, ts: str | None) -> str:
    return json.dumps(harness.sandbox.message(channel_id or "", ts or "")["blocks"])


async def test_a_card_reads_the_same_whoever_redraws_it(harness: Harness) -> None:
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    await harness.click(write, "approve")

    async def sibling_redrawn() -> bool | None:
        return "1 of 2 decided" in card_json(harness, sql.channel_id, sql.message_ts) or None

    await harness.wait_for(sibling_redrawn)  # the web process redrew it after the click
    updates = len([c for c in harness.sandbox.calls if c["method"] == "chat.update"])
    # The worker redraws the same card (as after a reopen or an expiry): same drawing.
    await harness.worker.driver.notifier.approval_updated(sql, run=run)
    assert len([c for c in harness.sandbox.calls if c["method"] == "chat.update"]) > updates
    assert "1 of 2 decided" in card_json(harness, sql.channel_id, sql.message_ts)
    await harness.reject(sql, "not now", user_id=DBA)
    assert (await harness.finished(run)).state == RunState.DONE


class TestPerCall:
    @pytest.fixture
    def agent_settings(self, settings: WorkerConfig) -> WorkerConfig:
        return settings.model_copy(update={"policy": FIXTURES / "per_call_expiry_policy.yml"})

    async def test_a_deleted_per_call_card_is_posted_again_by_its_reminder(
        self, harness: Harness
    ) -> None:
        clock = Clock()
        harness.store.clock = clock  # the worker's store: it decides what is due
        run = await harness.start_run(WRITE_ONLY)
        (card,) = await harness.requests(run, count=1)
        assert card.mode == "per_call"
        await harness.client.chat_delete(channel=card.channel_id, ts=card.message_ts)

        clock.now += 1801  # past half of the hour: the reminder notices the card is gone

        async def reposted() -> object:
            current = await harness.store.get_request(card.request_id)
            moved = current is not None and current.message_ts != card.message_ts
            return current if moved else None

        again = await harness.wait_for(reposted)
        assert "Approve" in card_json(harness, again.channel_id, again.message_ts)
        await harness.click(again, "approve")
        done = await harness.finished(run)
        assert done.state == RunState.DONE
        texts = harness.thread_texts(done)
        assert sum(t.startswith("Reminder:") for t in texts) == 1

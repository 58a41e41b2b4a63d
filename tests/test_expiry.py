"""Review time limits, on a clock the test controls: a reminder at half-time, the
policy's default decision at expiry, and a click after that told it is too late."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from agent_bridge.errors import ConfigurationError
from agent_bridge.models import ApprovalState, RunState
from agent_bridge.policy_file import load_policy
from agent_bridge.scripted_model import DEMO_TASK
from agent_bridge.settings import WorkerConfig
from bot import ids
from slack_sandbox.delivery import payload_body
from tests.clocks import ManualClock
from tests.harness import DBA, Harness
from tests.slack_bodies import card_click

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def agent_settings(settings: WorkerConfig) -> WorkerConfig:
    return settings.model_copy(update={"policy": FIXTURES / "expiry_policy.yml"})


async def test_a_request_is_reminded_then_expires_with_the_default_decision(
    harness: Harness,
) -> None:
    clock = ManualClock(time.time())
    harness.store.clock = clock  # the worker's store: it decides what is due
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    assert write.expires_at == pytest.approx(write.created_at + 3600)
    await harness.click(sql, "approve", user_id=DBA)

    clock.now += 1801  # past half of write_file's hour, not of execute_sql's two
    reminders = await harness.wait_for(lambda: _reminders(harness, run))
    assert len(reminders) == 1 and "write_file" in reminders[0]
    stored = await harness.store.get_request(write.request_id)
    assert stored is not None and stored.state == ApprovalState.PENDING

    clock.now += 1800  # past the hour
    done = await harness.finished(run)
    assert done.state == RunState.DONE
    expired = await harness.store.get_request(write.request_id)
    assert expired is not None and expired.decided_by is None
    assert expired.decision is not None and expired.decision.type == "reject"
    assert "No reviewer decided within 1 h" in (expired.decision.message or "")
    assert "No reviewer decided within 1 h" in (done.final_answer or "")
    assert not (harness.settings.workspace_dir / "files/archive/old_orders.csv").exists()
    card = harness.sandbox.message(write.channel_id or "", write.message_ts or "")
    assert "Expired: no reviewer decided in time" in json.dumps(card["blocks"])
    await harness.settled()  # a second reminder, were one due, would be posted by now
    assert len(await _reminders(harness, run) or []) == 1  # once, however many sweeps

    # A client still showing the old buttons clicks Approve: it is told, privately.
    stale = card_click(harness.sandbox, write, ids.decision_action_id("approve"), user_id=DBA)
    status, _ = await harness.sandbox.post_signed(payload_body(stale))
    assert status == 200
    note = await harness.wait_for(lambda: harness.ephemeral("already decided"))
    assert note["user"] == DBA and "Rejected" in note["text"]


async def _reminders(harness: Harness, run: object) -> list[str] | None:
    current = await harness.store.get_run(run.run_id)  # type: ignore[attr-defined]
    found = [t for t in harness.slack_thread_texts(current) if t.startswith("Reminder:")]
    return found or None


def test_a_timeout_decision_the_tool_does_not_allow_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "policy.yml"
    path.write_text(
        "tools:\n  execute_sql:\n    allowed_decisions: [reject]\n"
        "    review_timeout_s: 60\n    on_timeout: approve\n"
    )
    with pytest.raises(ConfigurationError, match="on_timeout 'approve' is not among"):
        load_policy(path)

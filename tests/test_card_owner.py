"""The one owner of cards, end to end: a card reads the same whichever process redraws
it, and a deleted pending card is posted again wherever its absence is noticed, in both
interrupt modes."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from agent_bridge.backend import open_backend
from agent_bridge.bus import InProcessBus
from agent_bridge.db import Database
from agent_bridge.expiry import ExpiryKeeper
from agent_bridge.models import ApprovalRequest, Decision, Recorded, Run, RunState
from agent_bridge.policy_file import POLICIES_DIR
from agent_bridge.run_driver import RunDriver
from agent_bridge.run_failure import RunFailures
from agent_bridge.scripted_model import DEMO_TASK
from agent_bridge.settings import WorkerConfig
from agent_bridge.store import ApprovalStore
from agent_bridge.wording import run_failed_note
from agent_bridge.worker import CARD_REDRAW_GRACE_S, Worker
from bot.card_owner import CardOwner, card_key
from bot.cards import draw_card
from bot.errors import SlackUnavailableError
from bot.outbox import metadata_key
from bot.slack_notifier import SlackNotifier
from bot.testing import MemoryGateway
from tests.clocks import ManualClock
from tests.harness import DBA, Harness
from tests.test_store import make_request

FIXTURES = Path(__file__).parent / "fixtures"
WRITE_ONLY = {"tool_calls": [{"name": "write_file", "args": {"path": "a.txt", "content": "x"}}]}
TWO_WRITES = {
    "tool_calls": [
        {"name": "write_file", "args": {"path": "a.txt", "content": "x"}},
        {"name": "write_file", "args": {"path": "b.txt", "content": "y"}},
    ]
}


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
        clock = ManualClock(time.time())
        harness.store.clock = clock  # the worker's store: it decides what is due
        run = await harness.start_run(WRITE_ONLY)
        (card,) = await harness.requests(run, count=1)
        assert card.mode == "per_call"
        assert card.channel_id is not None and card.message_ts is not None
        await harness.client.chat_delete(channel=card.channel_id, ts=card.message_ts)

        clock.now += 1801  # past half of the hour: the reminder notices the card is gone

        again = await harness.reposted(card)
        assert "Approve" in card_json(harness, again.channel_id, again.message_ts)
        await harness.click(again, "approve")
        done = await harness.finished(run)
        assert done.state == RunState.DONE
        texts = harness.slack_thread_texts(done)
        assert sum(t.startswith("Reminder:") for t in texts) == 1

    async def test_a_card_with_a_time_limit_shows_its_deadline_from_its_first_post(
        self, harness: Harness
    ) -> None:
        """The limit starts counting at the first post, and the first drawing already
        says when it ends (no later change is needed to show it)."""
        run = await harness.start_run(WRITE_ONLY)
        (card,) = await harness.requests(run, count=1)
        assert card.expires_at is not None
        blocks = card_json(harness, card.channel_id, card.message_ts)
        assert f"<!date^{int(card.expires_at)}^" in blocks
        assert "If no one decides by" in blocks
        redraws = [
            c
            for c in harness.sandbox.calls
            if c["method"] == "chat.update" and c["args"]["ts"] == card.message_ts
        ]
        assert redraws == []  # drawn right the first time, not mended by a redraw


class TestPerCallWithoutTimeLimit:
    @pytest.fixture
    def agent_settings(self, settings: WorkerConfig) -> WorkerConfig:
        return settings.model_copy(update={"policy": POLICIES_DIR / "per_call.yml"})

    async def test_a_deleted_card_is_posted_again_when_another_decision_is_applied(
        self, harness: Harness
    ) -> None:
        """Per-call cards have no siblings; the worker notices a deleted one when it
        applies another decision of the run, and posts it again."""
        run = await harness.start_run(TWO_WRITES)
        first, second = await harness.requests(run, count=2)
        assert first.mode == second.mode == "per_call"
        assert second.channel_id is not None and second.message_ts is not None
        await harness.client.chat_delete(channel=second.channel_id, ts=second.message_ts)

        await harness.click(first, "approve")

        again = await harness.reposted(second)
        assert "Approve" in card_json(harness, again.channel_id, again.message_ts)
        await harness.click(again, "approve")
        assert (await harness.finished(run)).state == RunState.DONE


@dataclass
class PostedCard:
    store: ApprovalStore
    slack: MemoryGateway
    card: ApprovalRequest


@pytest.fixture
def posted(pending_card: PostedCard) -> PostedCard:
    """One pending card posted on the gateway's twin, then deleted in Slack."""
    card = pending_card.card
    assert card.channel_id is not None and card.message_ts is not None
    pending_card.slack.delete(card.channel_id, card.message_ts)  # someone deletes it
    return pending_card


async def test_two_processes_noticing_one_deleted_card_post_it_again_once(
    posted: PostedCard,
) -> None:
    store, slack = posted.store, posted.slack
    web, worker = CardOwner(store=store, slack=slack), CardOwner(store=store, slack=slack)

    await asyncio.gather(web.redraw("r1"), worker.redraw("r1", siblings=False))

    stored = await store.get_request("r1")
    assert stored is not None and stored.message_ts != posted.card.message_ts
    assert list(slack.messages) == [("C1", stored.message_ts)]  # one card, the recorded one


async def test_a_card_decided_while_it_is_posted_again_shows_no_buttons(
    posted: PostedCard,
) -> None:
    store, slack = posted.store, posted.slack
    real_post = slack.post_message

    async def post_then_decide(**kwargs: Any) -> str:
        ts = await real_post(**kwargs)  # the re-post lands; a reviewer decides meanwhile
        await store.record_decision("r1", Decision(type="approve"), user_id="U2")
        return ts

    slack.post_message = post_then_decide  # type: ignore[method-assign]
    await CardOwner(store=store, slack=slack).redraw("r1")

    stored = await store.get_request("r1")
    assert stored is not None and stored.message_ts is not None
    blocks = json.dumps(slack.messages[("C1", stored.message_ts)]["blocks"])
    assert "Approved" in blocks and '"actions"' not in blocks


@pytest.fixture(params=["postgres", "sqlite"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store's database: PostgreSQL marks a card drawn and reads its batch's
    revisions in one statement, SQLite in two."""
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return f"sqlite:///{tmp_path / 'cards.db'}"


@pytest.fixture
async def pending_card(store_url: str) -> AsyncIterator[PostedCard]:
    """One pending card posted on the gateway's twin."""
    backend = await open_backend(store_url)
    await backend.release()
    store = ApprovalStore(backend.db)
    run = await store.create_run(
        Run(run_id="run-1", thread_id="thread-run-1", task="t", channel_id="C1", user_id="U1")
    )
    (request,) = await store.add_requests([make_request("r1")])
    slack = MemoryGateway()
    card = await CardOwner(store=store, slack=slack).post(request, run)
    yield PostedCard(store, slack, card)
    await backend.close()


def card_blocks(posted: PostedCard) -> str:
    assert posted.card.channel_id and posted.card.message_ts
    return json.dumps(posted.slack.messages[(posted.card.channel_id, posted.card.message_ts)])


async def test_a_redraw_from_older_state_that_lands_last_is_drawn_again(
    pending_card: PostedCard,
) -> None:
    """The web process draws the pending card; before its ``chat.update`` lands, a
    reviewer decides and another process redraws the card as decided; then the stale
    update lands. The first redraw reads the card's state again and draws it again."""
    store, slack = pending_card.store, pending_card.slack
    real_update = slack.update_message
    overtaken: list[bool] = []

    async def overtaken_update(**kwargs: Any) -> None:
        if not overtaken:  # the first draw, of the pending card, is slow to land
            overtaken.append(True)
            await store.record_decision("r1", Decision(type="approve"), user_id="U2")
            await CardOwner(store=store, slack=slack).redraw("r1")
        await real_update(**kwargs)

    slack.update_message = overtaken_update  # type: ignore[method-assign]
    await CardOwner(store=store, slack=slack).redraw("r1")

    blocks = card_blocks(pending_card)
    assert "Approved" in blocks and '"actions"' not in blocks
    stored = await store.get_request("r1")
    assert stored is not None and stored.drawn_revision == stored.revision


class ReadCountingStore(ApprovalStore):
    """A store counting the reads a redraw may skip: the run, the interrupt's batch."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.reads: list[str] = []

    async def get_run(self, run_id: str) -> Run:
        self.reads.append("run")
        return await super().get_run(run_id)

    async def requests_for_interrupt(self, interrupt_id: str) -> list[ApprovalRequest]:
        self.reads.append("batch")
        return await super().requests_for_interrupt(interrupt_id)


async def run_in_its_thread(store: ApprovalStore, slack: MemoryGateway) -> Run:
    """A stored run whose first message is posted on the gateway's twin (its thread)."""
    run = await store.create_run(
        Run(run_id="run-1", thread_id="thread-run-1", task="t", channel_id="C1", user_id="U1")
    )
    thread_ts = await slack.post_message(team_id=None, channel_id="C1", text="run", blocks=[])
    await store.set_run_thread_ts(run.run_id, thread_ts)
    return run.model_copy(update={"thread_ts": thread_ts})


@pytest.fixture
async def lone_card(store_url: str) -> AsyncIterator[tuple[ReadCountingStore, MemoryGateway, Run]]:
    """One pending card alone in its batch (``batch_size`` 1), posted on the gateway's
    twin in its run's Slack thread, on a store counting its reads."""
    backend = await open_backend(store_url)
    await backend.release()
    store = ReadCountingStore(backend.db)
    slack = MemoryGateway()
    run = await run_in_its_thread(store, slack)
    lone = make_request("r1").model_copy(update={"batch_size": 1, "thread_ts": run.thread_ts})
    (request,) = await store.add_requests([lone])
    await CardOwner(store=store, slack=slack).post(request, run)
    store.reads.clear()
    yield store, slack, run
    await backend.close()


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[ApprovalStore]:
    """A fresh, empty store."""
    backend = await open_backend(store_url)
    await backend.release()
    yield ApprovalStore(backend.db)
    await backend.close()


async def card_a_dead_worker_posted(
    store: ApprovalStore, slack: MemoryGateway
) -> tuple[Run, ApprovalRequest]:
    """A timed request whose card a worker posted 15 minutes ago and died before
    recording where: its intention without a ``ts``, its card in Slack (drawn with that
    worker's deadline). Returns its run and the request as stored."""
    run = await run_in_its_thread(store, slack)
    (request,) = await store.add_requests([timed_request(run)])
    await store.intend_notice(run.run_id, card_key("r1"))
    text, blocks = draw_card(request.posted_at(time.time() - 900), [request], run)
    await slack.post_message(
        team_id=None,
        channel_id="C1",
        text=text,
        blocks=blocks,
        thread_ts=run.thread_ts,
        key=metadata_key(run.run_id, card_key("r1")),
    )
    return run, request


async def test_a_timed_card_a_dead_worker_posted_is_adopted_and_drawn_with_its_limit(
    store: ApprovalStore,
) -> None:
    """A worker died after its card landed and before it recorded where: the next one
    adopts the card (no second post), and its time limit, counted from the adoption,
    is drawn on it (the dead worker's drawing counted from its own post)."""
    slack = MemoryGateway()
    run, request = await card_a_dead_worker_posted(store, slack)

    posted = await CardOwner(store=store, slack=slack).post(request, run)

    stored = await store.get_request("r1")
    assert stored is not None and stored.expires_at is not None
    assert len(slack.messages) == 2  # the run's message and the one card
    shown = json.dumps(slack.messages[("C1", posted.message_ts or "")]["blocks"])
    assert f"<!date^{int(stored.expires_at)}^" in shown
    assert stored.drawn_revision == stored.revision


def timed_request(run: Run) -> ApprovalRequest:
    """A request alone in its batch, in its run's Slack thread, with an hour to decide."""
    return make_request("r1").model_copy(
        update={
            "batch_size": 1,
            "thread_ts": run.thread_ts,
            "review_timeout_s": 3600.0,
            "timeout_decision": Decision(type="reject"),
        }
    )


async def test_an_adopted_timed_card_whose_redraw_fails_lags_for_the_sweep(
    store: ApprovalStore,
) -> None:
    """A card adopted from a dead worker (its deadline drawn from that worker's own post,
    15 minutes before the one stored) whose redraw fails (Slack is slow: that is how a
    post is lost) still lags, so the worker's time-keeping draws the stored deadline."""
    slack = MemoryGateway()
    run, request = await card_a_dead_worker_posted(store, slack)
    real_update = slack.update_message

    async def failing_update(**kwargs: Any) -> None:
        slack.outage = 1  # the redraw meets an outage (past slack_sdk's retries)
        await real_update(**kwargs)

    slack.update_message = failing_update  # type: ignore[method-assign]

    posted = await CardOwner(store=store, slack=slack).post(request, run)

    stored = await store.get_request("r1")
    assert stored is not None and stored.expires_at is not None
    shown = json.dumps(slack.messages[("C1", posted.message_ts or "")]["blocks"])
    assert f"<!date^{int(stored.expires_at)}^" not in shown  # still the dead worker's
    lagging = await store.undrawn_cards(changed_before=time.time() + 3600, limit=10)
    assert [r.request_id for r in lagging] == ["r1"]  # time-keeping will draw it


async def test_a_request_decided_just_after_its_reminder_mark_keeps_no_mark(
    store: ApprovalStore,
) -> None:
    """A reviewer decides between the sweep's ``mark_reminded`` and the reminder's post,
    which posts nothing for a decided request and takes the mark back: the request's
    state never says a reminder was sent when none was."""
    clock = ManualClock(time.time())
    store.clock = clock
    slack = MemoryGateway()
    run = await run_in_its_thread(store, slack)
    (request,) = await store.add_requests([timed_request(run)])
    cards = CardOwner(store=store, slack=slack)
    await cards.post(request, run)
    clock.now += 1801  # half-time: a reminder is due
    real_mark = store.mark_reminded

    async def mark_then_decided(request_id: str) -> bool:
        marked = await real_mark(request_id)
        await store.record_decision(request_id, Decision(type="reject"), user_id="U2")
        return marked

    store.mark_reminded = mark_then_decided  # type: ignore[method-assign]
    await ExpiryKeeper(store=store, notifier=SlackNotifier(slack=slack, cards=cards)).sweep()

    assert reminders(slack) == 0  # decided: none posted...
    decided = await store.get_request("r1")
    assert decided is not None and decided.reminded_at is None  # ...and the mark taken back


def reminders(slack: MemoryGateway) -> int:
    return sum(m["text"].startswith("Reminder") for m in slack.messages.values())


async def test_a_reminded_request_reopened_is_reminded_again_in_its_new_window(
    store: ApprovalStore,
) -> None:
    """Reopened after its reminder was posted, a request has a new review window: its
    card shows the new deadline without "Reminder sent", and at the new half-time a
    second reminder is posted (never a mark without a post)."""
    clock = ManualClock(time.time())
    store.clock = clock
    slack = MemoryGateway()
    run = await run_in_its_thread(store, slack)
    (request,) = await store.add_requests([timed_request(run)])
    cards = CardOwner(store=store, slack=slack)
    keeper = ExpiryKeeper(store=store, notifier=SlackNotifier(slack=slack, cards=cards))
    posted = await cards.post(request, run)
    clock.now += 1801  # half-time: the reminder is due
    await keeper.sweep()
    assert reminders(slack) == 1
    await store.record_decision("r1", Decision(type="approve"), user_id="U2")
    reopened = await store.reopen("r1", note="The call changed")
    assert reopened is not None and reopened.expires_at == clock.now + 3600
    await cards.redraw("r1")
    card = json.dumps(slack.messages[("C1", posted.message_ts or "")]["blocks"])
    assert f"<!date^{int(reopened.expires_at)}^" in card and "Reminder sent" not in card
    await keeper.sweep()
    assert reminders(slack) == 1  # not half-time of the new window yet
    clock.now += 1801
    await keeper.sweep()
    assert reminders(slack) == 2
    stored = await store.get_request("r1")
    assert stored is not None and stored.reminded_at is not None


async def test_the_pointer_to_a_reopened_card_stops_showing_its_old_outcome(
    store: ApprovalStore,
) -> None:
    """A card in another channel than its run's thread is rejected, then reopened (the
    call changed): the thread's line pointing to it no longer says Rejected."""
    slack = MemoryGateway(channels={"C1", "C2"})
    run = await run_in_its_thread(store, slack)
    elsewhere = make_request("r1").model_copy(update={"batch_size": 1, "channel_id": "C2"})
    (request,) = await store.add_requests([elsewhere])
    cards = CardOwner(store=store, slack=slack)
    await cards.post(request, run)
    await store.record_decision("r1", Decision(type="reject"), user_id="U2")
    await cards.redraw("r1")
    stored = await store.get_request("r1")
    assert stored is not None and stored.pointer_ts is not None
    assert "Rejected" in slack.messages[("C1", stored.pointer_ts)]["text"]

    await store.reopen("r1", note="The call changed")
    await cards.redraw("r1")

    pointer = slack.messages[("C1", stored.pointer_ts)]["text"]
    assert "Rejected" not in pointer and "write_file" in pointer


async def assert_drawn_rejected(store: ApprovalStore, slack: MemoryGateway) -> None:
    """The lone card shows its rejection, with no buttons, and is marked drawn so."""
    stored = await store.get_request("r1")
    assert stored is not None and stored.drawn_revision == stored.revision
    blocks = json.dumps(slack.messages[("C1", stored.message_ts or "")]["blocks"])
    assert "Rejected" in blocks and '"actions"' not in blocks


async def test_a_lone_card_redrawn_from_its_change_reads_neither_its_batch_nor_its_run(
    lone_card: tuple[ReadCountingStore, MemoryGateway, Run],
) -> None:
    """The click's redraw (and the worker's, after a result) has the request as its
    write returned it, and the worker has the run: nothing is read before drawing."""
    store, slack, run = lone_card
    recorded = await store.record_decision("r1", Decision(type="reject"), user_id="U2")
    assert isinstance(recorded, Recorded)
    await CardOwner(store=store, slack=slack).redraw("r1", known=recorded.request, run=run)
    assert store.reads == []
    await assert_drawn_rejected(store, slack)


async def test_a_lone_card_given_older_than_the_store_is_drawn_again_from_the_store(
    lone_card: tuple[ReadCountingStore, MemoryGateway, Run],
) -> None:
    """A caller's copy drawn as it is, but the store changed since (a decision came
    between the caller's read and its redraw): the revisions read as the card is marked
    drawn say so, and the card is drawn again from the store."""
    store, slack, run = lone_card
    older = await store.get_request("r1")
    assert older is not None
    await store.record_decision("r1", Decision(type="reject"), user_id="U2")
    await CardOwner(store=store, slack=slack).redraw("r1", known=older, run=run)
    assert store.reads == ["batch"]
    await assert_drawn_rejected(store, slack)


async def test_a_run_given_without_its_thread_link_is_read_for_a_card_outside_the_thread(
    lone_card: tuple[ReadCountingStore, MemoryGateway, Run],
) -> None:
    """A card in another channel links back to its run's thread; a run given by a
    caller that has not seen the link (set when the card was posted) is read again."""
    store, slack, run = lone_card
    await store.set_run_thread_link(run.run_id, "https://sandbox.slack.test/archives/C1/p10")
    moved = await store.get_request("r1")
    assert moved is not None
    elsewhere = moved.model_copy(update={"channel_id": "C0APPROVALS"})
    store.reads.clear()
    await CardOwner(store=store, slack=slack).redraw("r1", known=elsewhere, run=run)  # no link
    assert store.reads[0] == "run"


async def test_a_run_given_as_claimed_before_its_thread_was_posted_is_read(
    lone_card: tuple[ReadCountingStore, MemoryGateway, Run],
) -> None:
    """A worker's run as it claimed it may predate its Slack thread (a failure in the
    drive that posted it): it is read again, so the card shows the thread."""
    store, slack, run = lone_card
    request = await store.get_request("r1")
    store.reads.clear()
    claimed = run.model_copy(update={"thread_ts": None})
    await CardOwner(store=store, slack=slack).redraw("r1", known=request, run=claimed)
    assert store.reads == ["run"]


async def test_a_copy_read_before_a_reminder_does_not_wipe_the_reminder_off_its_card(
    store_url: str,
) -> None:
    """A worker holds a pending request read before the reminder sweep marked it (as
    ``RunDriver._post_approvals`` holds the run's posted cards while it posts others);
    the reminder's own redraw shows "Reminder sent"; then the worker redraws from its
    copy. The reminder bumped the revision, so the copy is seen to be old and the card
    is drawn again from the store: the line stays."""
    backend = await open_backend(store_url)
    await backend.release()
    store = ApprovalStore(backend.db)
    run = await store.create_run(
        Run(run_id="run-1", thread_id="thread-run-1", task="t", channel_id="C1", user_id="U1")
    )
    timed = make_request("r1").model_copy(
        update={
            "batch_size": 1,
            "review_timeout_s": 3600,
            "timeout_decision": Decision(type="reject"),
        }
    )
    (request,) = await store.add_requests([timed])
    slack = MemoryGateway()
    cards = CardOwner(store=store, slack=slack)
    await cards.post(request, run)
    held = await store.get_request("r1")  # the worker's copy
    assert held is not None
    assert await store.mark_reminded("r1")  # the reminder sweep...
    await cards.redraw("r1", siblings=False)  # ...and its redraw
    assert "Reminder sent" in json.dumps(list(slack.messages.values()))
    await SlackNotifier(slack=slack, cards=cards).approval_updated(held, run=run)
    assert "Reminder sent" in json.dumps(list(slack.messages.values()))
    stored = await store.get_request("r1")
    assert stored is not None and stored.drawn_revision == stored.revision
    await backend.close()


async def test_a_card_that_missed_its_redraw_is_redrawn_by_the_worker_sweep(
    pending_card: PostedCard,
) -> None:
    """A decision recorded by a process that died before its redraw: the worker's sweep
    redraws the card once the change is older than ``CARD_REDRAW_GRACE_S`` (its
    time-keeping pass does)."""
    store, slack = pending_card.store, pending_card.slack
    clock = ManualClock(time.time())
    store.clock = clock
    claimed = await store.claim_run("run-1", owner="w", lease_s=60, from_state=RunState.QUEUED)
    assert claimed is not None
    await store.release_run("run-1", owner="w", state=RunState.WAITING)
    await store.record_decision("r1", Decision(type="reject"), user_id="U2")  # no redraw
    worker = time_keeper(store, slack)
    await worker.keep_time()
    assert '"actions"' in card_blocks(pending_card)  # too recent: left to its process
    clock.now += CARD_REDRAW_GRACE_S + 1
    await worker.keep_time()
    assert "Rejected" in card_blocks(pending_card) and '"actions"' not in card_blocks(pending_card)


async def test_a_cancelled_card_whose_redraw_was_lost_is_redrawn_by_time_keeping(
    pending_card: PostedCard,
) -> None:
    """A run failed by a worker that died right after ``fail_run`` committed, before any
    card was redrawn: the time-keeping pass redraws the cancelled card."""
    store, slack = pending_card.store, pending_card.slack
    clock = ManualClock(time.time())
    store.clock = clock
    claimed = await store.claim_run("run-1", owner="w", lease_s=60, from_state=RunState.QUEUED)
    assert claimed is not None
    closed = await store.fail_run("run-1", owner="w", error="boom", note=run_failed_note("run-1"))
    assert [r.request_id for r in closed] == ["r1"]
    assert '"actions"' in card_blocks(pending_card)
    clock.now += CARD_REDRAW_GRACE_S + 1
    await time_keeper(store, slack).keep_time()
    assert '"actions"' not in card_blocks(pending_card)
    stored = await store.get_request("r1")
    assert stored is not None and stored.drawn_revision == stored.revision


def time_keeper(store: ApprovalStore, slack: MemoryGateway) -> Worker:
    """A worker whose only use is its time-keeping pass (``keep_time``) over ``slack``."""
    notifier = SlackNotifier(slack=slack, cards=CardOwner(store=store, slack=slack))
    return Worker(
        store=store,
        bus=InProcessBus(),
        driver=cast(RunDriver, SimpleNamespace(notifier=notifier)),
        failures=RunFailures(store=store, notifier=notifier),
    )


async def test_a_sibling_drawn_from_older_state_is_drawn_again(store_url: str) -> None:
    """A click on r1 redraws its pending sibling r2; before that draw lands, r2 is
    decided and redrawn by another process; the stale draw of r2 lands last. The first
    redraw sees r2 changed and draws it again, decided as it now is."""
    backend = await open_backend(store_url)
    await backend.release()
    store = ApprovalStore(backend.db)
    run = await store.create_run(
        Run(run_id="run-1", thread_id="thread-run-1", task="t", channel_id="C1", user_id="U1")
    )
    stored = await store.add_requests([make_request("r1"), make_request("r2", index=1)])
    slack = MemoryGateway()
    posted = [await CardOwner(store=store, slack=slack).post(r, run) for r in stored]
    real_update = slack.update_message
    overtaken: list[bool] = []

    async def overtaken_update(**kwargs: Any) -> None:
        if kwargs["ts"] == posted[1].message_ts and not overtaken:
            overtaken.append(True)  # the draw of r2 as pending is slow to land
            await store.record_decision("r2", Decision(type="reject"), user_id="U3")
            await CardOwner(store=store, slack=slack).redraw("r2")
        await real_update(**kwargs)

    slack.update_message = overtaken_update  # type: ignore[method-assign]
    await store.record_decision("r1", Decision(type="approve"), user_id="U2")
    await CardOwner(store=store, slack=slack).redraw("r1")

    assert posted[1].message_ts is not None
    blocks = json.dumps(slack.messages[("C1", posted[1].message_ts)]["blocks"])
    assert "Rejected" in blocks and '"actions"' not in blocks
    await backend.close()


async def test_a_card_posted_while_its_sibling_is_decided_shows_the_progress(
    store_url: str,
) -> None:
    """While r2's card is being posted, r1 is approved and its redraw skips r2 (no ``ts``
    yet): r2 lands drawn from the batch read before the click ("0 of 2"). Its post sees
    the batch changed meanwhile and draws it again ("1 of 2")."""
    backend = await open_backend(store_url)
    await backend.release()
    store = ApprovalStore(backend.db)
    run = await store.create_run(
        Run(run_id="run-1", thread_id="thread-run-1", task="t", channel_id="C1", user_id="U1")
    )
    r1, r2 = await store.add_requests([make_request("r1"), make_request("r2", index=1)])
    slack = MemoryGateway()
    worker, web = CardOwner(store=store, slack=slack), CardOwner(store=store, slack=slack)
    await worker.post(r1, run)
    real_post = slack.post_message

    async def clicked_while_posting(**kwargs: Any) -> str:
        await store.record_decision("r1", Decision(type="approve"), user_id="U2")
        await web.redraw("r1")  # the click's redraw: r2 has no message yet
        return await real_post(**kwargs)

    slack.post_message = clicked_while_posting  # type: ignore[method-assign]
    posted = await worker.post(r2, run)

    assert posted.message_ts is not None
    blocks = json.dumps(slack.messages[("C1", posted.message_ts)]["blocks"])
    assert "1 of 2 decided" in blocks and "0 of 2" not in blocks
    await backend.close()


async def test_a_re_post_whose_answer_was_lost_is_recorded_not_posted_again(
    posted: PostedCard,
) -> None:
    """Slack posted the card again, but its answer was lost (a 503 after the post):
    the next redraw finds that post by its key and records it, so one live card stays,
    the one clicks are taken from."""
    store, slack = posted.store, posted.slack
    real_post = slack.post_message

    async def post_then_fail(**kwargs: Any) -> str:
        await real_post(**kwargs)
        slack.post_message = real_post  # type: ignore[method-assign]
        raise SlackUnavailableError(
            "chat.postMessage failed: HTTP 503", method="chat.postMessage", retryable=True
        )

    slack.post_message = post_then_fail  # type: ignore[method-assign]
    owner = CardOwner(store=store, slack=slack)
    await owner.redraw("r1")
    before = await store.get_request("r1")
    assert before is not None and before.message_ts == posted.card.message_ts  # not known
    await owner.redraw("r1")
    stored = await store.get_request("r1")
    assert stored is not None and stored.message_ts != posted.card.message_ts
    assert list(slack.messages) == [("C1", stored.message_ts)]  # one card, recorded

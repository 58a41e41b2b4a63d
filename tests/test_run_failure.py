"""A failed run ends in one step (``RunFailures.end`` → ``ApprovalStore.fail_run``): the
run released as failed and its open cards cancelled in one transaction, so nobody reads
the run as ended while a card of it can still be decided; only by the worker that still
holds its lease; never in a lock cycle with a workspace's closing. A card whose redraw
was lost to a crash: ``tests/test_card_owner.py``."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from agent_bridge.audit import AuditKind, read_events
from agent_bridge.models import ApprovalRequest, ApprovalState, Run, RunState
from agent_bridge.run_failure import RunFailures
from agent_bridge.scripted_model import DEMO_TASK
from agent_bridge.settings import WorkerConfig
from agent_bridge.store import ApprovalStore
from agent_bridge.wording import run_failed_call_may_have_run_note
from bot.testing import RecordingNotifier
from tests.clocks import ManualClock
from tests.harness import Harness
from tests.test_faults import rows_locked, waiting_on_lock
from tests.test_run_driver import driver_for, new_run

FIXTURES = Path(__file__).parent / "fixtures"
APPROVALS = "C0APPROVAL"
OWNER = "test-failing-worker"
TWO_CALLS = json.dumps(
    {
        "tool_calls": [
            {"name": "write_file", "args": {"path": "a.txt", "content": "x"}},
            {"name": "execute_sql", "args": {"query": "DELETE FROM orders"}},
        ]
    }
)


async def test_a_failed_run_and_the_closing_of_its_cards_are_seen_together(
    harness: Harness,
) -> None:
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    assert (await harness.released(run)).state == RunState.WAITING  # the worker let go
    claimed = await harness.store.claim_run(
        run.run_id, owner=OWNER, lease_s=60.0, from_state=RunState.WAITING
    )
    assert claimed is not None
    url = harness.settings.database_url
    async with rows_locked(url, [sql.request_id], "FOR UPDATE"):
        failing = asyncio.create_task(
            harness.worker.failures.end(
                claimed, owner=OWNER, error="RuntimeError: boom", lease_s=60.0
            )
        )
        await harness.wait_for(lambda: waiting_on_lock(url, "UPDATE approval_requests"))
        # The cards' closing waits on the lock: the run's end is not seen before it.
        assert (await harness.store.get_run(run.run_id)).state == RunState.RUNNING
    await asyncio.wait_for(failing, 20.0)
    ended = await harness.store.get_run(run.run_id)
    assert ended.state == RunState.FAILED and ended.error == "RuntimeError: boom"
    stored = {r.request_id: r.state for r in await harness.store.requests_for_run(run.run_id)}
    assert stored == {
        write.request_id: ApprovalState.CANCELLED,
        sql.request_id: ApprovalState.CANCELLED,
    }


async def test_a_worker_that_lost_its_lease_leaves_the_new_owners_cards_open(
    sqlite_store: ApprovalStore, tmp_path: Path
) -> None:
    store = sqlite_store
    clock = ManualClock(time.time())
    store.clock = clock
    notifier = RecordingNotifier(store)
    driver, _ = driver_for(store, tmp_path, notifier, {})
    run = await new_run(store, TWO_CALLS)
    state, _ = await driver.drive(run)
    await store.release_run(run.run_id, owner="w", state=state)
    assert state == RunState.WAITING
    # Worker A's drive raised near the end of its lease and its failure ran past it
    # (nothing renews a lease after the drive); worker B's sweep took the run.
    a = await store.claim_run(run.run_id, owner="A", lease_s=30, from_state=RunState.WAITING)
    assert a is not None
    clock.now += 31
    b = await store.claim_run(run.run_id, owner="B", lease_s=30, from_state=RunState.WAITING)
    assert b is not None

    told = len(notifier.events)
    lease = "SELECT state, lease_owner, lease_until FROM runs WHERE run_id = :r"
    held = await store.db.fetch_one(lease, {"r": run.run_id})
    assert held is not None and held["lease_owner"] == "B"
    failures = RunFailures(store=store, notifier=notifier)
    await failures.end(a, owner="A", error="RuntimeError", lease_s=60)

    assert await store.db.fetch_one(lease, {"r": run.run_id}) == held  # B's, as it was
    assert {r.state for r in await store.requests_for_run(run.run_id)} == {ApprovalState.PENDING}
    # Nor is B's run said to have failed in its Slack thread: A says nothing at all.
    assert notifier.events[told:] == []

    # B's own failure is B's to tell: said, released as failed, its cards closed.
    await failures.end(b, owner="B", error="RuntimeError", lease_s=30)
    assert ("failed", run.run_id) in notifier.events[told:]
    assert (await store.get_run(run.run_id)).state == RunState.FAILED
    assert {r.state for r in await store.requests_for_run(run.run_id)} == {ApprovalState.CANCELLED}


async def test_failing_a_run_and_closing_its_workspace_at_once_do_not_deadlock(
    harness: Harness,
) -> None:
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    run = await harness.released(run)  # the worker let go
    assert run.state == RunState.WAITING and run.team_id
    claimed = await harness.store.claim_run(
        run.run_id, owner=OWNER, lease_s=60.0, from_state=RunState.WAITING
    )
    assert claimed is not None
    url = harness.settings.database_url
    # Both transactions queue behind the cards' row locks, then run interleaved.
    async with rows_locked(url, [write.request_id, sql.request_id], "FOR UPDATE"):
        closing = asyncio.create_task(harness.store.close_workspace(run.team_id, note="gone"))
        await harness.wait_for(lambda: waiting_on_lock(url, "UPDATE"))
        failing = asyncio.create_task(
            harness.store.fail_run(run.run_id, owner=OWNER, error="boom", note="failed")
        )
        await harness.wait_for(lambda: _waiting_on_locks(harness, 2))
    await asyncio.wait_for(asyncio.gather(closing, failing), 20.0)  # neither aborted
    assert (await harness.store.get_run(run.run_id)).state == RunState.FAILED
    states = {r.state for r in await harness.store.requests_for_run(run.run_id)}
    assert states == {ApprovalState.CANCELLED}


async def _waiting_on_locks(harness: Harness, count: int) -> bool:
    rows = await harness.store.db.fetch_all(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock'"
    )
    return len(rows) >= count


class TestFailingInItsFirstDrive:
    """``/agent`` queues a run with no Slack thread; its first drive posts the thread and
    the first card (in #approvals, linking back to the thread), then Slack refuses the
    second card for good, and the worker fails the run with the run as it claimed it,
    before the thread existed."""

    @pytest.fixture
    def agent_settings(self, settings: WorkerConfig) -> WorkerConfig:
        return settings.model_copy(update={"policy": FIXTURES / "cards_elsewhere_policy.yml"})

    async def fail_in_first_drive(self, harness: Harness) -> tuple[Run, ApprovalRequest]:
        """The failed run, as stored, and its first card, as posted (pending)."""
        header = harness.sandbox.stall_next("chat.postMessage", key_contains="/header")
        pointer = harness.sandbox.stall_next("chat.postMessage", key_contains="pointer:")
        run = await harness.start_run(TWO_CALLS)
        await asyncio.wait_for(header.reached.wait(), 20)  # the thread is being posted
        assert run.thread_ts is None  # as the worker claims it
        header.released.set()
        await asyncio.wait_for(pointer.reached.wait(), 20)
        first = await harness.wait_for(lambda: _first_posted(harness, run))
        # the next card: refused for good (a passing error, internal_error, would be retried)
        harness.sandbox.fail_next("chat.postMessage", status=200, error="invalid_blocks")
        assert LINK_TEXT in _card_text(harness, first)
        pointer.released.set()
        ended = await harness.finished(run)
        assert ended.state == RunState.FAILED and ended.thread_ts and ended.thread_link
        return ended, first

    async def test_its_closed_card_keeps_the_link_to_the_runs_thread(
        self, harness: Harness
    ) -> None:
        _, first = await self.fail_in_first_drive(harness)

        await harness.closed_and_drawn(first)
        text = _card_text(harness, first)
        assert '"actions"' not in text and LINK_TEXT in text

    async def test_its_failure_is_told_in_the_runs_thread(self, harness: Harness) -> None:
        ended, _ = await self.fail_in_first_drive(harness)
        failed = [
            m for m in harness.sandbox.messages(ended.channel_id) if "run failed" in m["text"]
        ]
        assert failed and all(m.get("thread_ts") == ended.thread_ts for m in failed), failed


async def test_a_card_whose_approved_call_ran_then_failed_the_run_says_it_may_have_run(
    harness: Harness,
) -> None:
    """The approved call ran and raised (a file over a directory: not a ToolException,
    so the run fails): its closed card in Slack says the call may have run, never that
    it will not run; the audit trail gives the same reason."""
    (harness.settings.workspace_dir / "files" / "adir").mkdir(parents=True)
    run = await harness.start_run(
        json.dumps(
            {"tool_calls": [{"name": "write_file", "args": {"path": "adir", "content": "x"}}]}
        )
    )
    (write,) = await harness.requests(run, count=1)
    status, _ = await harness.click(write, "approve")
    assert status == 200
    assert (await harness.finished(run)).state == RunState.FAILED

    closed = await harness.closed_and_drawn(write)
    assert closed.note == run_failed_call_may_have_run_note(run.run_id)
    card = json.dumps(harness.sandbox.message(closed.channel_id or "", closed.message_ts or ""))
    assert "may have run" in card and "will not run" not in card and "Approved" in card
    (event,) = [e for e in await read_events(harness.store.db) if e.kind == AuditKind.CANCELLED]
    assert event.reason == closed.note


LINK_TEXT = "Open the run's thread"


async def _first_posted(harness: Harness, run: Run) -> ApprovalRequest | None:
    found = [r for r in await harness.store.requests_for_run(run.run_id) if r.message_ts]
    return found[0] if found else None


def _card_text(harness: Harness, request: ApprovalRequest) -> str:
    return json.dumps(harness.sandbox.message(APPROVALS, request.message_ts or "")["blocks"])

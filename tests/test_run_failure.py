"""A failed run ends in one step (``RunFailures.fail`` → ``ApprovalStore.fail_run``): the
run released as failed and its open cards cancelled in one transaction, so nobody reads
the run as ended while a card of it can still be decided."""

from __future__ import annotations

import asyncio

from agent_bridge.models import ApprovalState, RunState
from agent_bridge.scripted_model import DEMO_TASK
from tests.harness import Harness
from tests.test_faults import rows_locked
from tests.test_web_stop import waiting_on_lock

OWNER = "test-failing-worker"


async def test_a_failed_run_and_the_closing_of_its_cards_are_seen_together(
    harness: Harness,
) -> None:
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    claimed = await harness.store.claim_run(
        run.run_id, owner=OWNER, lease_s=60.0, from_state=RunState.WAITING
    )
    assert claimed is not None
    url = harness.settings.database_url
    async with rows_locked(url, [sql.request_id], "FOR UPDATE"):
        failing = asyncio.create_task(
            harness.worker.failures.fail(claimed, owner=OWNER, error="RuntimeError: boom")
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

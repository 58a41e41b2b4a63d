"""SIGTERM of a real worker process while it resumes a run.

The worker is ``tests.crash_worker`` with the ledger agent (one ledger line per real
execution of ``append_line``). Within its stop grace it finishes the resume it is in
(the tool returns, the decision is applied, the next card is posted, the run is left
``waiting``) and starts nothing new; a resume still going past the grace is cut, and
its run given back to the queue, so another worker continues it at once.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import pytest

from agent_bridge.models import ApprovalState, Run, RunState
from tests.harness import Harness
from tests.ledger_agent import ledger_lines
from tests.worker_processes import (
    EXIT_TIMEOUT_S,
    LEDGER_AGENT,
    TWO_TURNS,
    start_worker,
    stop,
)

LATER = {"tool_calls": [{"name": "append_line", "args": {"line": "later"}}]}
LEASE_OF = "SELECT state, lease_owner FROM runs WHERE run_id = :run_id"


@pytest.fixture
def harness_options() -> dict[str, Any]:
    """Sandbox and web app in this process; the workers are child processes."""
    return {"workers": 0}


async def logged(harness: Harness, log: Path, text: str) -> None:
    async def found() -> bool:
        return text in log.read_text()

    await harness.wait_for(found)


async def lease(harness: Harness, run: Run) -> dict[str, Any]:
    row = await harness.store.db.fetch_one(LEASE_OF, {"run_id": run.run_id})
    assert row is not None
    return row


async def test_sigterm_mid_resume_finishes_the_resume_and_starts_nothing_new(
    harness: Harness, tmp_path: Path
) -> None:
    log = tmp_path / "worker.log"
    workspace = harness.settings.workspace_dir
    worker = await start_worker(harness, log, "slow_in_tool", LEDGER_AGENT)
    later_worker: asyncio.subprocess.Process | None = None
    try:
        run = await harness.start_run(TWO_TURNS)
        (first,) = await harness.requests(run, count=1)
        await harness.click(first, "approve")
        await harness.wait_for(lambda: _ran(workspace))  # the resume is inside the tool
        worker.send_signal(signal.SIGTERM)
        await logged(harness, log, "stopping: finishing 1 in-flight runs")
        later = await harness.start_run(LATER)  # queued and signalled after the stop
        worker.send_signal(signal.SIGUSR1)  # the tool returns
        assert await asyncio.wait_for(worker.wait(), EXIT_TIMEOUT_S) == 0, log.read_text()

        # The resume was finished: its decision applied, the next turn's card posted,
        # the run left waiting and unleased. The run queued after the stop was not
        # touched (no Slack thread, still queued).
        applied, second = await harness.store.requests_for_run(run.run_id)
        assert applied.state == ApprovalState.APPLIED
        assert second.state == ApprovalState.PENDING and second.message_ts
        assert await lease(harness, run) == {"state": "waiting", "lease_owner": None}
        assert ledger_lines(workspace) == ["first"]
        untouched = await harness.store.get_run(later.run_id)
        assert untouched.state == RunState.QUEUED and untouched.thread_ts is None
        assert "given back" not in log.read_text()

        later_worker = await start_worker(harness, log, None, LEDGER_AGENT)
        await harness.click(second, "approve")
        done = await harness.finished(run)
        assert done.state == RunState.DONE
        assert ledger_lines(workspace)[:2] == ["first", "second"]
    finally:
        await stop(worker)
        if later_worker is not None:
            await stop(later_worker)


async def test_a_resume_past_the_stop_grace_is_given_back_and_continued(
    harness: Harness, tmp_path: Path
) -> None:
    log = tmp_path / "worker.log"
    workspace = harness.settings.workspace_dir
    quick: dict[str, str | None] = {"STOP_GRACE_S": "0.5", "LEASE_S": "30"}  # lease > grace
    worker = await start_worker(harness, log, "hang_in_tool", LEDGER_AGENT, env_changes=quick)
    second: asyncio.subprocess.Process | None = None
    try:
        run = await harness.start_run(
            {"tool_calls": [{"name": "append_line", "args": {"line": "slow"}}]}
        )
        (request,) = await harness.requests(run, count=1)
        await harness.click(request, "approve")
        await harness.wait_for(lambda: _ran(workspace))
        worker.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(worker.wait(), EXIT_TIMEOUT_S) == 0, log.read_text()
        assert "given back to the queue" in log.read_text()
        # Given back at once, not left to a 30 s lease: any worker may take it now.
        assert await lease(harness, run) == {"state": "queued", "lease_owner": None}

        second = await start_worker(harness, log, None, LEDGER_AGENT)
        done = await harness.finished(run)
        assert done.state == RunState.DONE, log.read_text()
        # The cut step had not saved the tool's result: its body ran again (LangGraph's
        # at-least-once rule for a tool; the README tells tool authors).
        assert ledger_lines(workspace) == ["slow", "slow"]
        (stored,) = await harness.store.requests_for_run(run.run_id)
        assert stored.state == ApprovalState.APPLIED
    finally:
        await stop(worker)
        if second is not None:
            await stop(second)


async def _ran(workspace: Path) -> bool:
    return bool(ledger_lines(workspace))

"""A real ``agent-bridge worker`` process whose agent's tool raises ``SystemExit(0)``
(a command-line program wrapped as a tool): asyncio lets it end the event loop, and
with it every run being driven; the process must then exit non-zero, saying why, so
that its supervisor starts it again (a clean exit 0 would leave the worker down)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import pytest

from agent_bridge.models import RunState
from bot.cli import STOPPED_BY_ITS_CODE_EXIT
from bot.worker_threads import THREADS_STOP_S
from tests.exiting_agent import EXIT_TASK, EXITING_AGENT
from tests.hanging_agent import (
    BLOCK_TASK,
    BLOCKED_FILE,
    HANGING_AGENT,
    HANGING_POLICY,
    LEAVE_BEHIND_TASK,
    QUIT_TASK,
)
from tests.harness import Harness
from tests.worker_processes import EXIT_TIMEOUT_S, start_cli_worker, stop


@pytest.fixture
def harness_options() -> dict[str, Any]:
    """Sandbox and web app in this process; the worker is ``agent-bridge worker``."""
    return {"workers": 0}


async def test_a_tool_raising_system_exit_makes_the_worker_exit_non_zero(
    harness: Harness, tmp_path: Path
) -> None:
    log = tmp_path / "worker.log"
    worker = await start_cli_worker(harness, log, EXITING_AGENT)
    try:
        run = await harness.start_run(EXIT_TASK)
        code = await asyncio.wait_for(worker.wait(), EXIT_TIMEOUT_S)
    finally:
        await stop(worker)
    text = log.read_text()
    assert code == STOPPED_BY_ITS_CODE_EXIT, text
    assert "SystemExit" in text and "exit_now" in text  # the line and the tool's traceback
    stuck = await harness.store.get_run(run.run_id)
    assert stuck is not None and stuck.state == RunState.RUNNING  # its lease will expire


@pytest.mark.parametrize("task", [BLOCK_TASK, LEAVE_BEHIND_TASK], ids=["blocked", "left_behind"])
async def test_a_worker_stops_on_sigterm_though_a_thread_never_returns(
    harness: Harness, tmp_path: Path, task: str
) -> None:
    """A sync tool blocked for good (its run given back past ``STOP_GRACE_S``), or one
    that returned leaving a thread of its own blocked: the process exits 0 within
    ``THREADS_STOP_S`` of its loop's end, naming what it left (before, asyncio's
    shutdown or Python's exit waited for the thread for good: two reviews)."""
    log = tmp_path / "worker.log"
    worker = await start_cli_worker(harness, log, HANGING_WORKER)
    try:
        run = await harness.start_run(task)
        await harness.wait_for(lambda: _exists(harness.settings.workspace_dir / BLOCKED_FILE))
        worker.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(worker.wait(), 2 * THREADS_STOP_S + EXIT_TIMEOUT_S)
    finally:
        await stop(worker)
    text = log.read_text()
    assert code == 0, text
    assert "threads still run" in text
    if task == BLOCK_TASK:
        given_back = await harness.store.get_run(run.run_id)
        assert given_back.state == RunState.QUEUED  # at once, not left to its lease


async def test_a_tools_system_exit_ends_the_worker_though_a_sync_tool_never_returns(
    harness: Harness, tmp_path: Path
) -> None:
    """``SystemExit`` out of the event loop while another run's sync tool is blocked: the
    worker still exits 70, saying why (before, it hung silently in asyncio's shutdown of
    the executor, a review)."""
    log = tmp_path / "worker.log"
    worker = await start_cli_worker(harness, log, HANGING_WORKER)
    try:
        await harness.start_run(BLOCK_TASK)
        await harness.wait_for(lambda: _exists(harness.settings.workspace_dir / BLOCKED_FILE))
        await harness.start_run(QUIT_TASK)
        code = await asyncio.wait_for(worker.wait(), 2 * THREADS_STOP_S + EXIT_TIMEOUT_S)
    finally:
        await stop(worker)
    text = log.read_text()
    assert code == STOPPED_BY_ITS_CODE_EXIT, text
    assert "SystemExit" in text and "threads still run" in text


HANGING_WORKER = {"AGENT": HANGING_AGENT, "POLICY": str(HANGING_POLICY), "STOP_GRACE_S": "0.5"}


async def _exists(path: Path) -> bool:
    return path.exists()

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
from bot.cli import STOPPED_BY_ITS_CODE_EXIT, TOOL_THREADS_STOP_S
from tests.exiting_agent import EXIT_TASK, EXITING_AGENT
from tests.hanging_agent import BLOCK_TASK, BLOCKED_FILE, HANGING_AGENT, HANGING_POLICY
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


async def test_a_worker_stops_on_sigterm_though_a_sync_tool_never_returns(
    harness: Harness, tmp_path: Path
) -> None:
    """The tool's thread cannot be stopped: past ``STOP_GRACE_S`` its run is given back,
    and past ``TOOL_THREADS_STOP_S`` the process exits without the thread, saying so
    (before, it waited for it for good: a review)."""
    log = tmp_path / "worker.log"
    worker = await start_cli_worker(
        harness, log, {"AGENT": HANGING_AGENT, "POLICY": str(HANGING_POLICY), "STOP_GRACE_S": "0.5"}
    )
    try:
        run = await harness.start_run(BLOCK_TASK)
        blocked = harness.settings.workspace_dir / BLOCKED_FILE
        await harness.wait_for(lambda: _exists(blocked))
        worker.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(worker.wait(), TOOL_THREADS_STOP_S + EXIT_TIMEOUT_S)
    finally:
        await stop(worker)
    text = log.read_text()
    assert code == 0, text
    assert "a sync tool's thread still runs" in text
    given_back = await harness.store.get_run(run.run_id)
    assert given_back.state == RunState.QUEUED  # at once, not left to its lease


async def _exists(path: Path) -> bool:
    return path.exists()

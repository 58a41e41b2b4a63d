"""A real ``agent-bridge worker`` process serves its own figures on ``METRICS_PORT``:
what happens in the worker (click → resume) reaches a ``/metrics``, while the web
process's ``/metrics`` has the database's figures, whichever process did the work.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from agent_bridge.models import RunState
from agent_bridge.scripted_model import DEMO_TASK
from bot.metrics_http import METRICS_PATH
from tests.harness import Harness
from tests.test_metrics import scrape, value
from tests.worker_processes import start_cli_worker, stop

LISTENING = re.compile(rb"worker metrics on port (\d+)/metrics")


@pytest.fixture
def harness_options() -> dict[str, Any]:
    """Sandbox and web app in this process; the worker is ``agent-bridge worker``."""
    return {"workers": 0}


async def metrics_port(log: Path, process: asyncio.subprocess.Process) -> int:
    """The port the worker says it serves its metrics on (its log line)."""
    async with asyncio.timeout(30):
        while True:
            found = LISTENING.search(log.read_bytes()) if log.exists() else None
            if found:
                return int(found.group(1))
            assert process.returncode is None, log.read_text()
            await asyncio.sleep(0.05)


async def test_the_workers_figures_are_on_its_own_metrics_port(
    harness: Harness, tmp_path: Path
) -> None:
    log = tmp_path / "worker.log"
    process = await start_cli_worker(harness, log, {"METRICS_PORT": "0", "LOG_FORMAT": "json"})
    try:
        worker_url = f"http://127.0.0.1:{await metrics_port(log, process)}{METRICS_PATH}"
        run = await harness.start_run(DEMO_TASK)
        write, sql = await harness.requests(run, count=2)
        assert (await harness.click(write, "approve"))[0] == 200
        await harness.reject(sql, "Not today.")
        assert (await harness.finished(run)).state == RunState.DONE

        worker = await scrape(worker_url)  # a fresh process: its figures are exact
        assert value(worker, "agent_bridge_click_to_resume_seconds_count") == 2
        assert value(worker, "agent_bridge_resume_failures_total", reason="graph") == 0
        assert harness.server is not None
        web = await scrape(harness.server.url + METRICS_PATH)
        assert value(web, "agent_bridge_runs", state="done") == 1
    finally:
        await stop(process)
    assert process.returncode == 0, log.read_text()

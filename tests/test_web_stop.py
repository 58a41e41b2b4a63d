"""SIGTERM of a real ``agent-bridge web`` process while an acked click is being recorded.

The database is made slow on purpose: another connection holds a lock on the request's
row, so the click's compare-and-set waits on it after the click was acked. The process
is stopped in that window; the decision must still be recorded, and the process must
stop taking requests at once.
"""

from __future__ import annotations

import asyncio
import signal
import socket
from pathlib import Path

import pytest

from agent_bridge.models import ApprovalState, RunState
from agent_bridge.scripted_model import DEMO_TASK
from bot.app import EVENTS_PATH
from tests import web_process as web_processes
from tests.harness import REVIEWER, Harness
from tests.ports import free_port
from tests.test_faults import rows_locked, waiting_on_lock
from tests.web_process import EXIT_TIMEOUT_S, answers, start_web_process


async def test_sigterm_while_an_acked_click_waits_on_the_database_records_it(
    harness: Harness, tmp_path: Path
) -> None:
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    log = tmp_path / "web.log"
    web, url = await start_web_process(harness, log)
    url_db = harness.settings.database_url
    async with rows_locked(url_db, [write.request_id], "FOR UPDATE"):
        status, _ = await harness.click(write, "approve")
        assert status == 200  # acked: for Slack the click is done
        # the approval and its audit event, one statement (audit.with_event)
        approving = "WITH changed AS (UPDATE approval_requests"
        await harness.wait_for(lambda: waiting_on_lock(url_db, approving))
        web.send_signal(signal.SIGTERM)
        # It stops taking requests at once, while the acked click is still unrecorded.
        await harness.wait_for(lambda: _refuses(url))
        assert web.returncode is None
        stored = await harness.store.get_request(write.request_id)
        assert stored is not None and stored.state == ApprovalState.PENDING
    # The lock is gone: the acked click's work finishes, then the process exits.
    assert await asyncio.wait_for(web.wait(), EXIT_TIMEOUT_S) == 0, log.read_text()
    recorded = await harness.store.get_request(write.request_id)
    assert recorded is not None and recorded.state != ApprovalState.PENDING
    assert recorded.decision is not None and recorded.decision.type == "approve"
    assert recorded.decided_by == REVIEWER
    text = log.read_text()
    assert "finishing the work of 1 acked requests" in text
    assert "stopped before the work" not in text
    # The run goes on with it (the other card decided through the in-process web app).
    assert harness.server is not None
    harness.sandbox.request_url = harness.server.url + EVENTS_PATH
    await harness.reject(sql, "Not today.")
    assert (await harness.finished(run)).state == RunState.DONE
    applied = await harness.store.get_request(write.request_id)
    assert applied is not None and applied.state == ApprovalState.APPLIED


async def _refuses(url: str) -> bool:
    return not await answers(url)


async def test_a_web_process_whose_port_was_taken_meanwhile_starts_on_another(
    harness: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The port chosen free is taken before the process binds it (another test session's
    server): the process exits saying so, and the next port is tried (``tests.ports``)."""
    with socket.socket() as taker:
        taker.bind(("127.0.0.1", 0))
        taker.listen()
        taken = taker.getsockname()[1]
        ports = iter([taken])
        monkeypatch.setattr(web_processes, "free_port", lambda: next(ports, None) or free_port())
        log = tmp_path / "web.log"
        web, url = await start_web_process(harness, log)
    try:
        assert url != f"http://127.0.0.1:{taken}" and await answers(url)
        assert "address already in use" in log.read_text().lower()
        run = await harness.start_run(DEMO_TASK)  # Slack's deliveries reach the new port
        assert len(await harness.requests(run, count=2)) == 2
    finally:
        web.send_signal(signal.SIGTERM)
        await asyncio.wait_for(web.wait(), EXIT_TIMEOUT_S)

"""A worker process killed with SIGKILL at each risky point, then restarted.

In every case: no decision lost, no second approval message, the run finishes after the
restart, and the checkpoint shows each approved call run once. For a kill *during* a
tool, LangGraph's guarantee is at-least-once for the tool's body (the node is re-run
from the last checkpoint) and exactly-once for its recorded result; the tool gets its
``tool_call_id`` so it can make itself idempotent (``write_file`` simply rewrites).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agent_bridge.models import ApprovalRequest, ApprovalState, Run, RunState
from agent_bridge.scripted_model import DEMO_TASK
from tests.crash_worker import POINTS
from tests.harness import Harness
from tests.ledger_agent import ledger_entries, ledger_lines
from tests.worker_processes import LEDGER_AGENT, TWO_TURNS, killed, restarted, start_worker, stop

REASON = "Archive the rows before deleting them."


@pytest.fixture
def harness_options() -> dict[str, Any]:
    """Sandbox and web app in this process; the worker is a child process (see below)."""
    return {"workers": 0}


async def waiting_on(harness: Harness, run: Run, request: ApprovalRequest) -> str:
    """Wait until ``run``'s header says it waits for approval on ``request``'s card
    alone, linked to it; return its blocks as JSON."""
    current = await harness.store.get_run(run.run_id)
    card = f"/p{(request.message_ts or '').replace('.', '')}"

    async def shown() -> str | None:
        header = json.dumps(
            harness.sandbox.message(current.channel_id, current.thread_ts or "")["blocks"]
        )
        waiting = "Waiting for approval" in header and header.count("/archives/") == 1
        return header if waiting and card in header else None

    return await harness.wait_for(shown)


def approval_cards(harness: Harness) -> int:
    return sum(
        1
        for c in harness.sandbox.calls
        if c["method"] == "chat.postMessage"
        and "Approval needed" in json.dumps(c["args"].get("blocks", ""))
    )


@pytest.mark.parametrize("crash_at", POINTS)
async def test_a_killed_worker_loses_nothing_and_does_nothing_twice(
    harness: Harness, crash_at: str, tmp_path: Path
) -> None:
    log = tmp_path / "worker.log"
    worker = await start_worker(harness, log, crash_at)
    try:
        run = await harness.start_run(DEMO_TASK)
        if crash_at == "before_post":
            worker = await restarted(worker, harness, log)
        write, sql = await harness.requests(run, count=2)
        await harness.click(write, "approve")
        await harness.reject(sql, REASON)
        if crash_at != "before_post":
            worker = await restarted(worker, harness, log)
        done = await harness.finished(run)
    finally:
        await stop(worker)

    assert done.state == RunState.DONE, log.read_text()
    assert approval_cards(harness) == 2
    stored = await harness.store.requests_for_run(run.run_id)
    assert [(r.tool_name, r.state) for r in stored] == [
        ("write_file", ApprovalState.APPLIED),
        ("execute_sql", ApprovalState.APPLIED),
    ]
    assert stored[1].decision is not None and stored[1].decision.message == REASON
    names = sorted(m.name for m in await harness.tool_messages(run))
    assert names == ["execute_sql", "read_data", "write_file"]
    written = harness.settings.workspace_dir / "files/archive/old_orders.csv"
    assert written.read_text().startswith("id,customer")
    answers = [t for t in harness.slack_thread_texts(done) if t.startswith("Done.")]
    assert len(answers) == 1 and REASON in answers[0]


async def test_a_statement_committed_before_a_kill_is_not_run_again(
    harness: Harness, tmp_path: Path
) -> None:
    """The tool re-runs after the kill (LangGraph: at least once), but ``execute_sql``
    keys its commit on the tool call ID, so the UPDATE is applied exactly once."""
    log = tmp_path / "worker.log"
    worker = await start_worker(harness, log, "in_sql")
    try:
        run = await harness.start_run(
            {
                "tool_calls": [
                    {
                        "name": "execute_sql",
                        "args": {"query": "UPDATE orders SET total = total + 100 WHERE id = 1"},
                    }
                ]
            }
        )
        (update,) = await harness.requests(run, count=1)
        await harness.click(update, "approve", user_id="U0DBA")
        worker = await restarted(worker, harness, log)
        done = await harness.finished(run)
    finally:
        await stop(worker)
    assert done.state == RunState.DONE, log.read_text()
    with sqlite3.connect(harness.settings.workspace_dir / "orders.db") as conn:
        assert conn.execute("SELECT total FROM orders WHERE id = 1").fetchone()[0] == 220.0
    (result,) = await harness.tool_messages(run)
    assert result.content == "1 rows affected"


async def test_a_run_killed_after_its_tools_ran_goes_on_to_its_next_turn(
    harness: Harness, tmp_path: Path
) -> None:
    """The kill leaves the turn's result saved as a pending write and no ``next`` node:
    the restarted worker replays that result (the tool is not run again) and the agent's
    next turn, which calls the tool again, runs; the run is not taken as finished."""
    log = tmp_path / "worker.log"
    worker = await start_worker(harness, log, "after_tools", agent=LEDGER_AGENT)
    try:
        run = await harness.start_run(TWO_TURNS)
        (first,) = await harness.requests(run, count=1)
        await harness.click(first, "approve")
        worker = await restarted(worker, harness, log, agent=LEDGER_AGENT)
        _, second = await harness.requests(run, count=2)
        await waiting_on(harness, run, second)  # the restarted worker's header, truthful
        await harness.click(second, "approve")
        done = await harness.finished(run)
    finally:
        await stop(worker)
    assert done.state == RunState.DONE, log.read_text()
    lines = ledger_lines(harness.settings.workspace_dir)
    assert lines == ["first", "second"]
    assert done.final_answer and "appended first" in done.final_answer
    assert "appended second" in done.final_answer
    results = [t for t in harness.slack_thread_texts(done) if "returned" in t]
    assert [("appended first" in t, "appended second" in t) for t in results] == [
        (True, False),
        (False, True),
    ], results


async def test_a_worker_with_prepared_statements_drives_a_run_to_its_end(
    harness: Harness, tmp_path: Path
) -> None:
    """``DATABASE_PREPARED_STATEMENTS=true``: the checkpointer's statements are prepared
    (``tests/test_faults.py``), and a run still starts, pauses on its card, resumes once
    approved and ends, its tool run once."""
    log = tmp_path / "worker.log"
    worker = await start_worker(
        harness, log, None, LEDGER_AGENT, env_changes={"DATABASE_PREPARED_STATEMENTS": "true"}
    )
    try:
        run = await harness.start_run(
            {"tool_calls": [{"name": "append_line", "args": {"line": "prepared"}}]}
        )
        (request,) = await harness.requests(run, count=1)
        await harness.click(request, "approve")
        done = await harness.finished(run)
    finally:
        await stop(worker)
    assert done.state == RunState.DONE, log.read_text()
    assert ledger_lines(harness.settings.workspace_dir) == ["prepared"]


async def test_a_dead_workers_run_is_continued_within_5_s(harness: Harness, tmp_path: Path) -> None:
    """With the default ``LEASE_S`` and a poll interval far longer than that, a second
    worker takes up the run of a worker killed in the middle of a slow tool within 5 s
    of the kill: it wakes when the dead worker's lease ends, not at its next poll."""
    log = tmp_path / "worker.log"
    defaults: dict[str, str | None] = {"LEASE_S": None, "POLL_INTERVAL_S": "60"}
    first = await start_worker(
        harness,
        log,
        "hang_in_tool",
        LEDGER_AGENT,
        options=("--owner", "worker-a"),
        env_changes=defaults,
    )
    ready = tmp_path / "second.ready"
    second: asyncio.subprocess.Process | None = None
    workspace = harness.settings.workspace_dir
    try:
        run = await harness.start_run(
            {"tool_calls": [{"name": "append_line", "args": {"line": "slow"}}]}
        )
        (request,) = await harness.requests(run, count=1)
        await harness.click(request, "approve")

        async def slow_tool_running() -> bool:
            return bool(ledger_lines(workspace))

        await harness.wait_for(slow_tool_running)
        second = await start_worker(
            harness,
            log,
            None,
            LEDGER_AGENT,
            options=("--owner", "worker-b", "--ready-file", str(ready)),
            env_changes=defaults,
        )

        async def second_ready() -> bool:
            return ready.exists()

        await harness.wait_for(second_ready)
        first.kill()
        killed_at = asyncio.get_running_loop().time()
        await killed(first)

        async def taken_over() -> bool:
            # the second worker ran the tool again: a durable mark of its takeover (its
            # lease is released as soon as the run ends, which can be before a look at it)
            return any(e.pid == second_pid for e in ledger_entries(workspace))

        second_pid = second.pid
        await harness.wait_for(taken_over)
        waited_s = asyncio.get_running_loop().time() - killed_at
        done = await harness.finished(run)
    finally:
        await stop(first)
        if second is not None:
            await stop(second)
    assert waited_s < 5.0, f"the run waited {waited_s:.1f} s after the kill"
    assert done.state == RunState.DONE, log.read_text()
    # killed inside the tool: its body ran again (at least once), its result once
    assert ledger_lines(workspace) == ["slow", "slow"]
    (result,) = await harness.tool_messages(run)
    assert result.content == "appended slow"

"""Finished runs' checkpoints deleted after the retention period, their audit trail kept.

On the real PostgreSQL and ``AsyncPostgresSaver``: a real ``agent-bridge worker``
process prunes a run that finished more than ``CHECKPOINT_RETENTION_DAYS`` ago and
keeps a waiting one's; ``CheckpointPruner`` works in batches, oldest first, and keeps
what is younger than the retention.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

import psycopg
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint

from agent_bridge.audit import read_events
from agent_bridge.backend import Backend
from agent_bridge.models import DEFAULT_AGENT, Run, RunState
from agent_bridge.pruning import DAY_S, CheckpointPruner
from agent_bridge.scripted_model import DEMO_TASK
from agent_bridge.store import ApprovalStore
from tests.harness import Harness
from tests.test_faults import finish_demo
from tests.worker_processes import EXIT_TIMEOUT_S

REPO = Path(__file__).resolve().parent.parent
CHECKPOINT_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
NOW = 1_000 * DAY_S


async def checkpoint_rows(url: str, thread_id: str) -> int:
    """Rows of ``thread_id`` in LangGraph's three checkpoint tables."""
    async with await psycopg.AsyncConnection.connect(url) as conn:
        total = 0
        for table in CHECKPOINT_TABLES:
            cur = await conn.execute(
                f"SELECT count(*) FROM {table} WHERE thread_id = %s", (thread_id,)
            )
            row = await cur.fetchone()
            total += row[0] if row else 0
        return total


async def test_a_worker_prunes_a_run_finished_before_the_retention_and_keeps_its_audit(
    harness: Harness, tmp_path: Path
) -> None:
    url = harness.settings.database_url
    done = await finish_demo(harness)
    assert done.state == RunState.DONE
    waiting = await harness.start_run(DEMO_TASK)
    await harness.requests(waiting, count=2)
    await harness.settled()
    audit_before = [e for e in await read_events(harness.store.db) if e.run_id == done.run_id]
    assert audit_before and await checkpoint_rows(url, done.thread_id) > 0
    # Both runs were last changed 31 days ago; only the finished one may be pruned.
    await harness.store.db.execute("UPDATE runs SET updated_at = updated_at - 31 * 86400")

    log = tmp_path / "worker.log"
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "SLACK_API_URL": harness.settings.slack_api_url,
        "SLACK_BOT_TOKEN": harness.settings.slack_bot_token or "",
        "POLICY": str(harness.settings.policy),
        "WORKSPACE_DIR": str(harness.settings.workspace_dir),
    }
    env.pop("CHECKPOINT_RETENTION_DAYS", None)  # the default, 30 days
    with log.open("ab") as out:
        worker = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot.cli", "worker", cwd=REPO, env=env, stdout=out, stderr=out
        )
    try:

        async def pruned() -> bool:
            return await checkpoint_rows(url, done.thread_id) == 0

        await harness.wait_for(pruned, timeout_s=EXIT_TIMEOUT_S)
    finally:
        worker.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(worker.wait(), EXIT_TIMEOUT_S) == 0, log.read_text()
    assert f"run={done.run_id} thread_id={done.thread_id} checkpoints pruned" in log.read_text()
    assert await checkpoint_rows(url, waiting.thread_id) > 0
    config: RunnableConfig = {"configurable": {"thread_id": done.thread_id}}
    assert await harness.backend.checkpointer.aget_tuple(config) is None
    audit_after = [e for e in await read_events(harness.store.db) if e.run_id == done.run_id]
    assert audit_after == audit_before
    assert (await harness.store.get_run(done.run_id)).final_answer == done.final_answer


async def finished_run(store: ApprovalStore, backend: Backend, run_id: str, *, at: float) -> Run:
    """A run that finished at ``at`` (Unix seconds), with a checkpoint."""
    timed = ApprovalStore(store.db, clock=lambda: at)
    run = await timed.create_run(
        Run(run_id=run_id, thread_id=f"thread-{run_id}", task="t", channel_id="C1", user_id="U1")
    )
    assert await timed.claim_run(run_id, owner="w", lease_s=30.0, from_state=RunState.QUEUED)
    await timed.release_run(run_id, owner="w", state=RunState.DONE, final_answer="ok")
    config: RunnableConfig = {"configurable": {"thread_id": run.thread_id, "checkpoint_ns": ""}}
    await backend.checkpointer.aput(config, empty_checkpoint(), {}, {})
    return run


async def has_checkpoint(backend: Backend, run: Run) -> bool:
    config: RunnableConfig = {"configurable": {"thread_id": run.thread_id}}
    return await backend.checkpointer.aget_tuple(config) is not None


async def test_pruning_goes_in_batches_oldest_first_and_keeps_younger_runs(
    pg_backend: Backend,
) -> None:
    store = ApprovalStore(pg_backend.db)
    old = [
        await finished_run(store, pg_backend, f"old-{i}", at=NOW - (40 + i) * DAY_S)
        for i in range(5)
    ]
    young = await finished_run(store, pg_backend, "young", at=NOW - 29 * DAY_S)
    pruner = CheckpointPruner(
        db=pg_backend.db,
        checkpointer=pg_backend.checkpointer,
        retention_days=30,
        agent=DEFAULT_AGENT,
        clock=lambda: NOW,
        batch=2,
    )
    assert [await pruner.prune() for _ in range(4)] == [2, 2, 1, 0]
    assert [await has_checkpoint(pg_backend, run) for run in old] == [False] * 5
    assert await has_checkpoint(pg_backend, young)


async def test_the_oldest_are_pruned_first_and_a_retention_of_zero_keeps_everything(
    pg_backend: Backend,
) -> None:
    store = ApprovalStore(pg_backend.db)
    newer = await finished_run(store, pg_backend, "newer", at=NOW - 50 * DAY_S)
    older = await finished_run(store, pg_backend, "older", at=NOW - 60 * DAY_S)
    kept: dict[str, Any] = {
        "db": pg_backend.db,
        "checkpointer": pg_backend.checkpointer,
        "agent": DEFAULT_AGENT,
    }
    never = CheckpointPruner(**kept, retention_days=0, clock=lambda: NOW)
    await never.run(asyncio.Event())  # returns at once: nothing is ever pruned
    assert await has_checkpoint(pg_backend, older) and await has_checkpoint(pg_backend, newer)
    one = CheckpointPruner(**kept, retention_days=30, clock=lambda: NOW, batch=1)
    assert await one.prune() == 1
    assert not await has_checkpoint(pg_backend, older)
    assert await has_checkpoint(pg_backend, newer)


async def test_a_worker_prunes_its_own_agent_s_runs_only(pg_backend: Backend) -> None:
    """The retention is each agent's: workers of an agent that keeps 30 days never delete
    the checkpoints of another agent's runs, kept forever by theirs."""
    store = ApprovalStore(pg_backend.db)
    mine = await finished_run(store, pg_backend, "mine", at=NOW - 40 * DAY_S)
    theirs = await finished_run(store, pg_backend, "theirs", at=NOW - 40 * DAY_S)
    await pg_backend.db.execute(
        "UPDATE runs SET agent = 'sql' WHERE run_id = :run_id", {"run_id": theirs.run_id}
    )
    pruner = CheckpointPruner(
        db=pg_backend.db,
        checkpointer=pg_backend.checkpointer,
        retention_days=30,
        agent=DEFAULT_AGENT,
        clock=lambda: NOW,
    )
    assert await pruner.prune() == 1
    assert not await has_checkpoint(pg_backend, mine)
    assert await has_checkpoint(pg_backend, theirs)

"""A bare resumer process: the baseline of the workers' throughput.

``python -m bench.bare_resumer DATABASE_URL WORKSPACE PREFIX COUNT`` builds the
benchmark agent's graph on an ``AsyncPostgresSaver`` (the product's pool, untimed),
pauses ``COUNT`` ``thread_id``s on their gated call, prints ``ready``, waits for a line
on stdin, then resumes them all with bare ``Command(resume=...)``, ``CONCURRENCY`` at a
time, and prints one JSON line: ``{"count", "ended" (wall clock, s), "cpu_s"}``
(``cpu_s``: this process's user + system CPU time over the resumes).

With ``--slack-url URL --slack-calls N --round-trips M`` each resume is a drive's, as
docs/architecture.md invariant 3 has it (the checkpoint's state read first, with
``aget_state``, then the resume with ``durability="sync"``, each step saved before the
next), and is followed by the I/O a decision makes in the product, done bare: ``N``
``chat.postMessage`` calls with slack_sdk's ``AsyncWebClient`` (one HTTP session) and
``M`` ``SELECT 1`` on the pool (the floor of the worker's figures: what the same steps,
Slack calls and round trips cost with nothing of the product around them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command
from slack_sdk.web.async_client import AsyncWebClient

from agent_bridge import event_loop, heap
from agent_bridge.backend import open_backend
from agent_bridge.postgres_db import PostgresDatabase
from bench.latency import bare_graph, pause
from bench.stage import agent_settings
from tests.harness import CHANNEL, TEST_BOT_TOKEN

CONCURRENCY = 10
"""Resumes in flight at once: the product's pool size, as a worker's runs share it."""


def cpu_s() -> float:
    """This process's user + system CPU time so far, seconds."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@dataclass
class DecisionIo:
    """The Slack calls and database round trips done after each bare resume."""

    slack_url: str
    slack_calls: int
    round_trips: int


async def bare_io(io: DecisionIo, client: AsyncWebClient, pool: Any) -> None:
    """One decision's I/O, bare: ``io.slack_calls`` posts, then ``io.round_trips``
    statements, each on a connection of its own from the pool, as the store's are."""
    for _ in range(io.slack_calls):
        await client.chat_postMessage(channel=CHANNEL, text="bare")
    for _ in range(io.round_trips):
        async with pool.connection() as conn, conn.cursor() as cur:
            await cur.execute("SELECT 1", prepare=False)  # as the store's statements
            await cur.fetchall()


async def main(
    database_url: str, workspace: Path, prefix: str, count: int, io: DecisionIo | None
) -> None:
    settings = agent_settings(database_url, workspace)
    # the worker's pool as configured (DATABASE_PREPARED_STATEMENTS, WorkerConfig's default)
    backend = await open_backend(
        database_url, prepared_statements=settings.database_prepared_statements
    )
    session = aiohttp.ClientSession()
    client = AsyncWebClient(
        token=TEST_BOT_TOKEN, base_url=io.slack_url if io else "", session=session
    )
    try:
        graph = bare_graph(settings, backend.checkpointer)
        paused = [await pause(graph, f"{prefix}-{i}") for i in range(count)]
        heap.freeze_startup_objects()  # as the worker (bot.processes)
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        limit = asyncio.Semaphore(CONCURRENCY)
        assert isinstance(backend.db, PostgresDatabase)  # the benchmark runs on PostgreSQL
        pool = backend.db.pool

        async def resume(config: RunnableConfig, command: Command[Any]) -> None:
            async with limit:
                if io is None:
                    await graph.ainvoke(command, config)
                    return
                await graph.aget_state(config, subgraphs=True)
                await graph.ainvoke(command, config, durability="sync")
                await bare_io(io, client, pool)

        before = cpu_s()
        await asyncio.gather(*(resume(c, k) for c, k in paused))
        used = cpu_s() - before
        print(json.dumps({"count": count, "ended": time.time(), "cpu_s": used}), flush=True)
    finally:
        await session.close()
        await backend.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("database_url")
    parser.add_argument("workspace", type=Path)
    parser.add_argument("prefix")
    parser.add_argument("count", type=int)
    parser.add_argument("--slack-url")
    parser.add_argument("--slack-calls", type=int, default=0)
    parser.add_argument("--round-trips", type=int, default=0)
    args = parser.parse_args()
    decision_io = (
        DecisionIo(args.slack_url, args.slack_calls, args.round_trips) if args.slack_url else None
    )
    event_loop.run(main(args.database_url, args.workspace, args.prefix, args.count, decision_io))

"""A bare resumer process: the baseline of the workers' throughput.

``python -m bench.bare_resumer DATABASE_URL WORKSPACE PREFIX COUNT`` builds the
benchmark agent's graph on an ``AsyncPostgresSaver`` (the product's pool, untimed),
pauses ``COUNT`` ``thread_id``s on their gated call, prints ``ready``, waits for a line
on stdin, then resumes them all with bare ``Command(resume=...)``, ``CONCURRENCY`` at a
time, and prints one JSON line: ``{"count", "ended" (wall clock, s), "cpu_s"}``
(``cpu_s``: this process's user + system CPU time over the resumes).
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from agent_bridge.backend import open_backend
from agent_bridge.settings import WorkerConfig
from bench.agent import AGENT, POLICY
from bench.latency import bare_graph, pause
from tests.harness import TEST_BOT_TOKEN

CONCURRENCY = 10
"""Resumes in flight at once: the product's pool size, as a worker's runs share it."""


def cpu_s() -> float:
    """This process's user + system CPU time so far, seconds."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def main(database_url: str, workspace: Path, prefix: str, count: int) -> None:
    backend = await open_backend(database_url)
    try:
        settings = WorkerConfig(
            slack_bot_token=TEST_BOT_TOKEN,
            database_url=database_url,
            workspace_dir=workspace,
            agent=AGENT,
            policy=POLICY,
        )
        graph = bare_graph(settings, backend.checkpointer)
        paused = [await pause(graph, f"{prefix}-{i}") for i in range(count)]
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        limit = asyncio.Semaphore(CONCURRENCY)

        async def resume(config: RunnableConfig, command: Command[Any]) -> None:
            async with limit:
                await graph.ainvoke(command, config)

        before = cpu_s()
        await asyncio.gather(*(resume(c, k) for c, k in paused))
        used = cpu_s() - before
        print(json.dumps({"count": count, "ended": time.time(), "cpu_s": used}), flush=True)
    finally:
        await backend.close()


if __name__ == "__main__":
    url, where, label, many = sys.argv[1:5]
    asyncio.run(main(url, Path(where), label, int(many)))

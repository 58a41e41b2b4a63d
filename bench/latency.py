"""Click -> gated tool starts, beside a bare ``Command(resume)`` -> tool starts.

- baseline: the benchmark agent's graph on the product's own ``AsyncPostgresSaver``,
  paused on its gated ``mark`` call, resumed with a bare ``Command(resume=...)``: the
  time from the call to the tool's first line. Measured in a process of its own, on the
  product's event loop (``bench.bare_latency``), as the drive floor below is.
- product: a signed Approve click from the sandbox to the web app, the decision
  recorded, the Redis signal, a worker's sweep, claim and resume, until the same tool
  starts. One run at a time, so each click is the only work in flight;
- floor: the same signed click to a bare Bolt app (``bench.bare_bolt``), until its
  listener starts: the hop every click makes before the product does anything, which
  with a bare resume is the least the product's path can take.
- drive floor: a bare drive, the steps docs/architecture.md invariant 3 puts on every
  resume, done with raw SQL and LangGraph alone: claim a lease (one ``UPDATE ...
  RETURNING``, committed), read the checkpoint's state (``aget_state``) and a row at
  once, then resume with ``durability="sync"`` (each step saved before the next). With
  the Bolt hop, the least a path that applies each decision exactly once can take.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command

from agent_bridge import heap
from agent_bridge.agent import build_agent, load_model, load_tools
from agent_bridge.backend import Backend
from agent_bridge.models import ApprovalRequest
from agent_bridge.policy_file import load_policy
from agent_bridge.postgres_db import PostgresDatabase
from agent_bridge.settings import WorkerConfig
from bench.agent import marks, task
from bench.stage import Stage
from bench.stats import settle_heap, until
from bench.web_process import bare_bolt_process
from tests.harness import Harness
from tests.worker_processes import REPO


def bare_graph(settings: WorkerConfig, checkpointer: BaseCheckpointSaver[Any]) -> Any:
    """The benchmark agent's graph on ``checkpointer``, as a worker builds it."""
    return build_agent(
        tools=load_tools(settings),
        model=load_model("scripted"),
        policy=load_policy(settings.policy),
        checkpointer=checkpointer,
    )


async def pause(graph: Any, label: str) -> tuple[RunnableConfig, Command[Any]]:
    """Start a ``thread_id`` of ``graph`` on ``mark(label)``; return its config and the
    ``Command`` that approves its interrupt."""
    config: RunnableConfig = {"configurable": {"thread_id": f"bare-{label}"}}
    content = json.dumps(task(label))
    await graph.ainvoke({"messages": [{"role": "user", "content": content}]}, config)
    (interrupt,) = (await graph.aget_state(config)).interrupts
    return config, Command(resume={interrupt.id: {"decisions": [{"type": "approve"}]}})


async def tool_started(workspace: Path, label: str) -> float:
    """Wait until ``mark(label)`` has run; return when it started (wall clock, s)."""

    async def found() -> float | None:
        return marks(workspace).get(label)

    return await until(found)


async def bare_resumes(settings: WorkerConfig, backend: Backend, count: int) -> list[float]:
    """``count`` bare resumes, one at a time: seconds from ``Command`` to tool start
    (run by ``bench.bare_latency``, in a process of its own)."""
    graph = bare_graph(settings, backend.checkpointer)
    heap.freeze_startup_objects()  # as the worker (bot.processes)
    timings = []
    for _ in range(count):
        label = f"bare-{secrets.token_hex(4)}"
        config, command = await pause(graph, label)
        started = time.time()
        await graph.ainvoke(command, config)
        timings.append(await tool_started(settings.workspace_dir, label) - started)
    return timings


LEASES_TABLE = """CREATE TABLE IF NOT EXISTS bench_leases (thread_id text PRIMARY KEY,
    owner text, lease_until double precision NOT NULL)"""
CLAIM = """UPDATE bench_leases SET owner = %(owner)s, lease_until = %(until)s
    WHERE thread_id = %(thread_id)s AND (owner IS NULL OR lease_until < %(now)s)
    RETURNING *"""


async def lease_row(pool: Any, thread_id: str) -> list[Any]:
    """The bare drive's read of its own row, beside the checkpoint's (the requests' read
    of a drive)."""
    async with pool.connection() as conn:
        found = await conn.execute(
            "SELECT * FROM bench_leases WHERE thread_id = %(t)s", {"t": thread_id}
        )
        return list(await found.fetchall())


async def bare_drives(settings: WorkerConfig, backend: Backend, count: int) -> list[float]:
    """``count`` bare drives (the drive floor above), one at a time: seconds from the
    claim to tool start (run by ``bench.bare_latency``, in a process of its own).

    Raises:
        RuntimeError: If a lease was not claimed (the table is the benchmark's own).
    """
    graph = bare_graph(settings, backend.checkpointer)
    if not isinstance(backend.db, PostgresDatabase):
        raise RuntimeError("the bare drive runs on PostgreSQL")
    pool = backend.db.pool
    async with pool.connection() as conn:
        await conn.execute(LEASES_TABLE)
    heap.freeze_startup_objects()  # as the worker (bot.processes)
    timings = []
    for _ in range(count):
        label = f"drive-{secrets.token_hex(4)}"
        config, command = await pause(graph, label)
        thread_id = config["configurable"]["thread_id"]
        async with pool.connection() as conn:
            await conn.execute("INSERT INTO bench_leases VALUES (%(t)s, NULL, 0)", {"t": thread_id})
        started = time.time()
        async with pool.connection() as conn:
            lease = {"owner": "bare", "until": started + 60, "now": started, "thread_id": thread_id}
            claimed = await conn.execute(CLAIM, lease)
            if await claimed.fetchone() is None:
                raise RuntimeError(f"bare lease on {thread_id} not claimed")
        await asyncio.gather(graph.aget_state(config, subgraphs=True), lease_row(pool, thread_id))
        async for _chunk in graph.astream(
            command, config, stream_mode="values", version="v2", durability="sync"
        ):
            pass
        timings.append(await tool_started(settings.workspace_dir, label) - started)
    return timings


@dataclass
class BareTimes:
    """Seconds from each bare resume's ``Command``, and from each bare drive's claim, to
    tool start."""

    resume: list[float]
    drive: list[float]


async def bare_times(stage: Stage, count: int, *, drives: bool = True) -> BareTimes:
    """``count`` bare resumes and (``drives``) ``count`` bare drives, in a process of their
    own on the product's event loop (``bench.bare_latency``), as the worker is one.

    Raises:
        RuntimeError: If that process failed.
    """
    measured = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.bare_latency",
        stage.settings.database_url,
        str(stage.workspace),
        str(count),
        *(() if drives else ("--no-drives",)),
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await measured.communicate()
    if measured.returncode != 0:
        raise RuntimeError(f"the bare latency process failed ({measured.returncode})")
    times = json.loads(out.decode().strip().splitlines()[-1])
    return BareTimes(resume=times["resume"], drive=times["drive"])


async def bare_listener_times(
    harness: Harness, request: ApprovalRequest, count: int
) -> list[float]:
    """``count`` clicks on ``request``'s card, one at a time, to a bare Bolt app: seconds
    from each click to its listener starting."""
    settle_heap()
    timings = []
    async with bare_bolt_process(harness) as bare:
        await harness.click(request, "approve")  # Bolt's first call, untimed
        for _ in range(count):
            bare.forget()
            started = time.time()
            status, _ = await harness.click(request, "approve")
            if status != 200:
                raise RuntimeError(f"a click to the bare app was answered {status}")

            async def reached() -> float | None:
                return bare.reached().get(str(request.message_ts))

            timings.append(await until(reached) - started)
    return timings


@dataclass
class ClickTimes:
    """Seconds from each Approve click to its gated tool starting, and the part of it
    until its decision was recorded (the request's ``decided_at``, the web process's
    clock: the rest is the signal, the worker's claim and reads, and the resume)."""

    tool: list[float] = field(default_factory=list)
    recorded: list[float] = field(default_factory=list)


async def product_clicks(harness: Harness, workspace: Path, count: int) -> ClickTimes:
    """``count`` Approve clicks, one run at a time."""
    settle_heap()
    times = ClickTimes()
    for _ in range(count):
        label = f"click-{secrets.token_hex(4)}"
        run = await harness.start_run(task(label))
        (request,) = await harness.requests(run, count=1)
        started = time.time()
        status, _ = await harness.click(request, "approve")
        if status != 200:
            raise RuntimeError(f"the click was answered {status}")
        times.tool.append(await tool_started(workspace, label) - started)
        decided = await harness.store.get_request(request.request_id)
        if decided is None or decided.decided_at is None:
            raise RuntimeError(f"request {request.request_id} ran its tool undecided")
        times.recorded.append(decided.decided_at - started)
        await harness.finished(run)
    return times

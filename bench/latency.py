"""Click -> gated tool starts, beside a bare ``Command(resume)`` -> tool starts.

- baseline: the benchmark agent's graph on the product's own ``AsyncPostgresSaver``,
  paused on its gated ``mark`` call, resumed with a bare ``Command(resume=...)``: the
  time from the call to the tool's first line.
- product: a signed Approve click from the sandbox to the web app, the decision
  recorded, the Redis signal, a worker's sweep, claim and resume, until the same tool
  starts. One run at a time, so each click is the only work in flight;
- floor: the same signed click to a bare Bolt app (``bench.bare_bolt``), until its
  listener starts: the hop every click makes before the product does anything, which
  with a bare resume is the least the product's path can take.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command

from agent_bridge.agent import build_agent, load_model, load_tools
from agent_bridge.models import ApprovalRequest
from agent_bridge.policy_file import load_policy
from agent_bridge.settings import WorkerConfig
from bench.agent import marks, task
from bench.stage import Stage
from bench.stats import until
from bench.web_process import bare_bolt_process
from tests.harness import Harness


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


async def bare_resumes(stage: Stage, count: int) -> list[float]:
    """``count`` bare resumes, one at a time: seconds from ``Command`` to tool start."""
    graph = bare_graph(stage.settings, stage.backend.checkpointer)
    timings = []
    for _ in range(count):
        label = f"bare-{secrets.token_hex(4)}"
        config, command = await pause(graph, label)
        started = time.time()
        await graph.ainvoke(command, config)
        timings.append(await tool_started(stage.workspace, label) - started)
    return timings


async def bare_listener_times(
    harness: Harness, request: ApprovalRequest, count: int
) -> list[float]:
    """``count`` clicks on ``request``'s card, one at a time, to a bare Bolt app: seconds
    from each click to its listener starting."""
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

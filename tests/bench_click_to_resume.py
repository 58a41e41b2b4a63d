"""Benchmark: click-to-resume latency against a bare LangGraph resume, in one run.

``python -m tests.bench_click_to_resume [N]`` (PostgreSQL and Redis as for the tests).

- baseline: the same agent graph on the same ``AsyncPostgresSaver``, paused on a gated
  ``write_file``, resumed with a bare ``Command(resume=...)`` until the ``thread_id`` is done;
- product: a signed Approve click through the sandbox to the Bolt app (ack), the
  compare-and-set, the Redis signal, the worker's checkpoint check and resume, until
  the request is marked applied.

Prints medians and p90 in milliseconds and the product/baseline ratio. Ack latency (the
click's HTTP answer) is printed too: Slack's deadline is 3,000 ms.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from agent_bridge.agent import build_agent, load_model, load_tools
from agent_bridge.backend import Backend, open_backend
from agent_bridge.models import ApprovalState
from agent_bridge.policy_file import POLICIES_DIR, load_policy
from agent_bridge.settings import WebConfig, WorkerConfig
from agent_bridge.store import ApprovalStore
from tests import services
from tests.harness import TEST_BOT_TOKEN, TEST_SIGNING_SECRET, Harness

RUNS = 30
POLL_S = 0.001


def task(i: int) -> dict[str, object]:
    return {"tool_calls": [{"name": "write_file", "args": {"path": f"b{i}.txt", "content": "x"}}]}


async def baseline(settings: WorkerConfig, backend: Backend, n: int) -> list[float]:
    """Bare ``Command(resume)`` on the same saver: the floor."""
    graph: CompiledStateGraph[Any, Any, Any, Any] = build_agent(
        tools=load_tools(settings),
        model=load_model("scripted"),
        policy=load_policy(settings.policy),
        checkpointer=backend.checkpointer,
    )
    timings: list[float] = []
    for i in range(n):
        config: RunnableConfig = {"configurable": {"thread_id": f"bare-{i}"}}
        content = json.dumps(task(i))
        await graph.ainvoke({"messages": [{"role": "user", "content": content}]}, config)
        (interrupt,) = (await graph.aget_state(config)).interrupts
        started = time.perf_counter()
        await graph.ainvoke(Command(resume={interrupt.id: {"type": "approve"}}), config)
        timings.append(time.perf_counter() - started)
    return timings


async def product(harness: Harness, n: int) -> tuple[list[float], list[float]]:
    """Signed click -> ack, and signed click -> request applied."""
    acks, resumes = [], []
    for i in range(n):
        run = await harness.start_run(task(i))
        (request,) = await harness.requests(run, count=1)
        started = time.perf_counter()
        status, _ = await harness.click(request, "approve")
        acks.append(time.perf_counter() - started)
        assert status == 200
        while (await harness.store.get_request(request.request_id)).state != (  # type: ignore[union-attr]
            ApprovalState.APPLIED
        ):
            await asyncio.sleep(POLL_S)
        resumes.append(time.perf_counter() - started)
        await harness.finished(run)
    return acks, resumes


def summary(name: str, values: list[float]) -> float:
    ms = sorted(v * 1000 for v in values)
    median = statistics.median(ms)
    print(f"{name:<28} median {median:8.1f} ms   p90 {ms[int(len(ms) * 0.9) - 1]:8.1f} ms")
    return median


async def main(n: int) -> None:
    problem = services.check_services()
    if problem:
        sys.exit(problem)
    name = services.unique_name("agent_bridge_bench")
    url = services.recreate_database(name)
    workspace = Path(tempfile.mkdtemp(prefix="bench-"))
    settings = WorkerConfig(
        slack_bot_token=TEST_BOT_TOKEN,
        database_url=url,
        redis_url=services.redis_url(),
        workspace_dir=workspace,
        policy=POLICIES_DIR / "per_call.yml",
        poll_interval_s=5.0,
    )
    backend = await open_backend(url)
    try:
        await backend.release()
        floor = summary("bare Command(resume)", await baseline(settings, backend, n))
        harness = Harness(
            settings=settings,
            web_settings=WebConfig(
                slack_signing_secret=TEST_SIGNING_SECRET,
                slack_bot_token=TEST_BOT_TOKEN,
                database_url=url,
                redis_url=services.redis_url(),
            ),
            backend=backend,
            store=ApprovalStore(backend.db),
            channel=services.unique_name("bench"),
        )
        await harness.start()
        try:
            acks, resumes = await product(harness, n)
        finally:
            await harness.stop()
        summary("click -> ack", acks)
        full = summary("click -> resumed + applied", resumes)
        print(f"ratio click-to-resume / bare resume: {full / floor:.1f}x  (n={n})")
    finally:
        await backend.close()
        services.drop_database(name)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else RUNS))

"""A real worker process that SIGKILLs itself once at a chosen point (crash tests).

``python -m tests.crash_worker --crash-at POINT`` runs the configured worker (settings
from the environment, as ``agent-bridge worker``) with one part wrapped so that the
process kills itself, without any cleanup, at POINT:

- ``before_post``: an interrupt is saved, its approval message not yet posted;
- ``before_resume``: decisions are recorded, the resume not yet started;
- ``in_tool``: inside ``write_file``, after it wrote the file, before it returned;
- ``in_sql``: inside ``execute_sql``, after its statement committed, before it returned;
- ``before_mark_applied``: the resume finished, the requests not yet marked applied;
- ``after_tools``: a turn's ``append_line`` result is saved as a pending write of its
  step, the step's checkpoint not yet written (the ledger agent's flow).

Without ``--crash-at`` it is a plain worker (the restart).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, NoReturn

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool

from agent_bridge.agent import build_agent, load_model, load_tools
from agent_bridge.arguments import tool_args_schema
from agent_bridge.backend import open_backend
from agent_bridge.graph import AgentGraph
from agent_bridge.models import ApprovalRequest, Run
from agent_bridge.policy import load_policy
from agent_bridge.run_driver import RunDriver
from agent_bridge.run_failure import RunFailures
from agent_bridge.settings import WorkerSettings, read_settings
from agent_bridge.store import ApprovalStore
from agent_bridge.worker import Worker
from bot.card_owner import CardOwner
from bot.processes import open_bus, stop_on_signals
from bot.slack_client import make_client
from bot.slack_gateway import single_workspace
from bot.slack_notifier import SlackNotifier
from tests.graph_wrappers import ResumeInterceptor

POINTS = ("before_post", "before_resume", "in_tool", "before_mark_applied")
"""The points of the demo task's flow; ``in_sql`` has a test of its own."""
TOOL_POINTS = {"in_tool": "write_file", "in_sql": "execute_sql"}
OTHER_POINTS = ("in_sql", "after_tools")
"""Points with a test of their own."""


def die() -> NoReturn:
    """End this process at once, as a power cut or the OOM killer would."""
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable: SIGKILL ends the process")


class CrashingNotifier(SlackNotifier):
    async def approval_requested(self, request: ApprovalRequest, *, run: Run) -> None:
        die()
        raise AssertionError("unreachable")


def has_tool_result(value: Any, tool_name: str) -> bool:
    """Whether a checkpoint write's value holds a ``ToolMessage`` of ``tool_name``."""
    values = value if isinstance(value, list | tuple) else [value]
    return any(isinstance(v, ToolMessage) and v.name == tool_name for v in values)


def die_after_tool_writes(checkpointer: Any, tool_name: str) -> None:
    """Make ``checkpointer`` die once it has saved a task's write of a ``tool_name``
    result and is asked for the step's checkpoint: the tool ran and its result is
    saved (a pending write), the step is not.

    LangGraph saves writes and checkpoints in the background (``durability="async"``),
    so the checkpoint waits for the saved write before the process dies.
    """
    original_writes = checkpointer.aput_writes
    original_put = checkpointer.aput
    saved: list[asyncio.Event] = []

    async def aput_writes(config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        done = asyncio.Event()
        if any(has_tool_result(value, tool_name) for _, value in writes):
            saved.append(done)
        await original_writes(config, writes, task_id, task_path)
        done.set()

    async def aput(config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        if saved:
            await saved[0].wait()
            die()
        return await original_put(config, checkpoint, metadata, new_versions)

    checkpointer.aput_writes = aput_writes
    checkpointer.aput = aput


class CrashingStore(ApprovalStore):
    async def mark_applied(self, request_ids: Any) -> None:
        if request_ids:
            die()
        await super().mark_applied(request_ids)


def crashing_tools(tools: list[BaseTool], name: str) -> list[BaseTool]:
    """``tools`` with ``name`` doing its real work (under the real tool call ID), then
    dying before it returns."""
    original = next(t for t in tools if t.name == name)

    async def run_then_die(args: dict[str, Any], tool_call_id: str) -> str:
        call = {"name": name, "args": args, "id": tool_call_id, "type": "tool_call"}
        await original.ainvoke(call)
        die()
        raise AssertionError("unreachable")

    async def write_file(
        path: str, content: str, tool_call_id: Annotated[str, InjectedToolCallId]
    ) -> str:
        """Write text content to a file at a path relative to the workspace."""
        return await run_then_die({"path": path, "content": content}, tool_call_id)

    async def execute_sql(query: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Execute one SQL statement against the orders database."""
        return await run_then_die({"query": query}, tool_call_id)

    by_name: dict[str, Callable[..., Awaitable[str]]] = {
        "write_file": write_file,
        "execute_sql": execute_sql,
    }
    function = by_name[name]
    crashing = StructuredTool.from_function(coroutine=function, handle_tool_error=True)
    return [crashing if t.name == name else t for t in tools]


async def main(crash_at: str | None) -> None:
    settings = read_settings(WorkerSettings)
    backend = await open_backend(settings.database_url)
    bus = open_bus(settings)
    store_type = CrashingStore if crash_at == "before_mark_applied" else ApprovalStore
    store = store_type(backend.db)
    policy = load_policy(settings.policy)
    tools = load_tools(settings)
    if crash_at in TOOL_POINTS:
        tools = crashing_tools(tools, TOOL_POINTS[crash_at])
    if crash_at == "after_tools":
        die_after_tool_writes(backend.checkpointer, "append_line")
    graph: AgentGraph = build_agent(
        tools=tools,
        model=load_model(settings.model),
        policy=policy,
        checkpointer=backend.checkpointer,
    )
    if crash_at == "before_resume":
        graph = ResumeInterceptor(graph, on_resume=lambda _: die())
    client = make_client(token=settings.slack_bot_token, base_url=settings.slack_api_url)
    notifier_type = CrashingNotifier if crash_at == "before_post" else SlackNotifier
    slack = single_workspace(client)
    notifier = notifier_type(slack=slack, cards=CardOwner(store=store, slack=slack))
    driver = RunDriver(
        store=store,
        graph=graph,
        notifier=notifier,
        policy=policy,
        args_schemas={t.name: tool_args_schema(t) for t in tools},
    )
    worker = Worker(
        store=store,
        bus=bus,
        driver=driver,
        failures=RunFailures(store=store, notifier=notifier),
        poll_interval_s=settings.poll_interval_s,
        lease_s=settings.lease_s,
    )
    try:
        await worker.run(stop_on_signals())
    finally:
        await bus.close()
        await backend.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--crash-at", choices=[*POINTS, *OTHER_POINTS])
    asyncio.run(main(parser.parse_args().crash_at))

"""A real worker process that SIGKILLs itself once at a chosen point (crash tests).

``python -m tests.crash_worker --crash-at POINT`` runs the configured worker (settings
from the environment, as ``agent-bridge worker``) with one part wrapped so that the
process kills itself, without any cleanup, at POINT:

- ``before_post``: an interrupt is saved, its approval message not yet posted;
- ``before_resume``: decisions are recorded, the resume not yet started;
- ``in_tool``: inside ``write_file``, after it wrote the file, before it returned;
- ``in_sql``: inside ``execute_sql``, after its statement committed, before it returned;
- ``before_mark_applied``: the resume finished, the requests not yet marked applied.

Without ``--crash-at`` it is a plain worker (the restart).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, NoReturn

from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool

from agent_bridge.agent import build_agent, load_model, load_tools
from agent_bridge.arguments import tool_args_schema
from agent_bridge.backend import open_backend
from agent_bridge.graph import AgentGraph
from agent_bridge.models import ApprovalRequest, Run
from agent_bridge.policy_file import load_policy
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


def die() -> NoReturn:
    """End this process at once, as a power cut or the OOM killer would."""
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable: SIGKILL ends the process")


class CrashingNotifier(SlackNotifier):
    async def approval_requested(self, request: ApprovalRequest, *, run: Run) -> None:
        die()
        raise AssertionError("unreachable")


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
        start_rules=policy.start_rules(),
    )
    try:
        await worker.run(stop_on_signals())
    finally:
        await bus.close()
        await backend.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--crash-at", choices=[*POINTS, "in_sql"])
    asyncio.run(main(parser.parse_args().crash_at))

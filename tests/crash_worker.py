"""A real worker process that SIGKILLs itself once at a chosen point (crash tests).

``python -m tests.crash_worker --crash-at POINT`` runs the configured worker (settings
from the environment, as ``agent-bridge worker``) with one part wrapped so that the
process kills itself, without any cleanup, at POINT:

- ``before_post``: an interrupt is saved, its approval message not yet posted;
- ``before_resume``: decisions are recorded, the resume not yet started;
- ``in_tool``: inside ``write_file``, after it wrote the file, before it returned;
- ``in_sql``: inside ``execute_sql``, after its statement committed, before it returned;
- ``before_mark_applied``: the resume finished, the requests not yet marked applied;
- ``in_server_run``: with ``AGENT_URL``, the resume's run is created on the Agent Server
  and has streamed its first chunk (it goes on there without the worker);
- ``after_tools``: a turn's ``append_line`` result is saved as a pending write of its
  step, the step's checkpoint not yet written (the ledger agent's flow);
- ``hang_in_tool``: not a kill but a slow tool: ``append_line`` writes its line, then
  never returns, so the test can kill the worker from outside while it holds the run;
- ``slow_in_tool``: not a kill either: ``append_line`` writes its line, then returns
  only once the process gets SIGUSR1, so the test can stop the worker mid-resume.

``--owner`` names the worker in leases; ``--bus-channel`` is the test's Redis channel;
``--ready-file`` is created once its first sweep is done (the event a test waits for
before it relies on this worker).

Without ``--crash-at`` it is a plain worker (the restart).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool

from agent_bridge import event_loop, heap
from agent_bridge.agent import build_agent, load_model, load_tools, when_rules_of
from agent_bridge.arguments import tool_args_schema
from agent_bridge.backend import open_backend
from agent_bridge.graph import AgentGraph
from agent_bridge.models import ApprovalRequest, Run
from agent_bridge.policy_file import load_policy
from agent_bridge.redis_bus import RedisBus
from agent_bridge.remote_agent import RemoteAgent, open_client
from agent_bridge.run_driver import RunDriver
from agent_bridge.run_failure import RunFailures
from agent_bridge.settings import WorkerSettings, read_settings
from agent_bridge.store import ApprovalStore
from agent_bridge.when_rules import WhenRules
from agent_bridge.worker import Worker
from bot.card_owner import CardOwner
from bot.metrics_http import start_metrics_server
from bot.processes import open_bus, stop_on_signals
from bot.slack_client import make_client, open_session
from bot.slack_gateway import single_workspace
from bot.slack_notifier import SlackNotifier
from tests.graph_wrappers import ResumeInterceptor, ResumeStreamTap

POINTS = ("before_post", "before_resume", "in_tool", "before_mark_applied")
"""The points of the demo task's flow; ``in_sql`` has a test of its own."""
TOOL_POINTS = {"in_tool": "write_file", "in_sql": "execute_sql"}
OTHER_POINTS = ("in_sql", "after_tools", "hang_in_tool", "slow_in_tool", "in_server_run")
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
    async def mark_applied(self, request_ids: Any, *, known: Any = None) -> None:
        if request_ids:
            die()
        await super().mark_applied(request_ids, known=known)


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


def hanging_tools(tools: list[BaseTool], name: str) -> list[BaseTool]:
    """``tools`` with ``name`` doing its real work, then never returning (a slow tool)."""
    original = next(t for t in tools if t.name == name)

    async def append_line(line: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Append one line to the ledger."""
        call = {"name": name, "args": {"line": line}, "id": tool_call_id, "type": "tool_call"}
        await original.ainvoke(call)
        await asyncio.Event().wait()
        raise AssertionError("unreachable: the event is never set")

    hanging = StructuredTool.from_function(coroutine=append_line)
    return [hanging if t.name == name else t for t in tools]


def slow_tools(tools: list[BaseTool], name: str, go: asyncio.Event) -> list[BaseTool]:
    """``tools`` with ``name`` doing its real work, then returning its result only once
    ``go`` is set."""
    original = next(t for t in tools if t.name == name)

    async def append_line(line: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Append one line to the ledger."""
        call = {"name": name, "args": {"line": line}, "id": tool_call_id, "type": "tool_call"}
        message = await original.ainvoke(call)
        await go.wait()
        return str(message.content)

    slow = StructuredTool.from_function(coroutine=append_line)
    return [slow if t.name == name else t for t in tools]


class ReadyWorker(Worker):
    """A worker that creates ``ready_file`` once its first sweep is done, and writes in it
    how many sweeps it has finished after each one."""

    ready_file: Path | None = None

    async def sweep(self) -> None:
        await super().sweep()
        if self.ready_file is not None:
            self.ready_file.write_text(str(self.sweeps))


async def main(
    crash_at: str | None, owner: str | None, ready_file: Path | None, channel: str | None
) -> None:
    settings = read_settings(WorkerSettings)
    backend = await open_backend(
        settings.database_url, prepared_statements=settings.database_prepared_statements
    )
    bus = (
        RedisBus(settings.redis_url, channel=channel)
        if channel and settings.redis_url
        else open_bus(settings)
    )
    store_type = CrashingStore if crash_at == "before_mark_applied" else ApprovalStore
    store = store_type(backend.db)
    policy = load_policy(settings.policy)
    tools = load_tools(settings)
    if crash_at in TOOL_POINTS:
        tools = crashing_tools(tools, TOOL_POINTS[crash_at])
    if crash_at == "hang_in_tool":
        tools = hanging_tools(tools, "append_line")
    if crash_at == "slow_in_tool":
        go = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, go.set)
        tools = slow_tools(tools, "append_line", go)
    if crash_at == "after_tools":
        die_after_tool_writes(backend.checkpointer, "append_line")
    graph: AgentGraph
    when_rules = WhenRules()
    if settings.agent_url:
        graph = RemoteAgent(
            client=open_client(settings.agent_url, api_key=settings.langgraph_api_key),
            assistant_id=settings.assistant_id,
            agent_name=settings.agent_name,
        )
    else:
        built = build_agent(
            tools=tools,
            model=load_model(settings.model),
            policy=policy,
            checkpointer=backend.checkpointer,
        )
        when_rules = when_rules_of(built)  # its middleware's, as assemble_agent reads them
        graph = built
    if crash_at == "before_resume":
        graph = ResumeInterceptor(graph, on_resume=lambda _: die())
    if crash_at == "in_server_run":
        graph = ResumeStreamTap(graph, on_first_chunk=die)
    session = open_session()  # one HTTP session for the workspace, as production's worker
    client = make_client(
        token=settings.slack_bot_token, base_url=settings.slack_api_url, session=session
    )
    notifier_type = CrashingNotifier if crash_at == "before_post" else SlackNotifier
    slack = single_workspace(client)
    notifier = notifier_type(slack=slack, cards=CardOwner(store=store, slack=slack))
    driver = RunDriver(
        store=store,
        graph=graph,
        notifier=notifier,
        policy=policy,
        args_schemas={t.name: tool_args_schema(t) for t in tools},
        deployed=bool(settings.agent_url),
        when_rules=when_rules,
        progress=notifier.progress,  # the run's header drawn as production's worker does
    )
    worker = ReadyWorker(
        store=store,
        bus=bus,
        driver=driver,
        failures=RunFailures(store=store, notifier=notifier),
        poll_interval_s=settings.poll_interval_s,
        lease_s=settings.lease_s,
        max_concurrent_runs=settings.max_concurrent_runs,
        start_rules=policy.start_rules(),
        owner=owner,
        stop_grace_s=settings.stop_grace_s,
    )
    worker.ready_file = ready_file
    served = None
    if settings.metrics_port is not None:  # as production's worker (bot.processes)
        served = await start_metrics_server(host="127.0.0.1", port=settings.metrics_port)
    heap.freeze_startup_objects()  # as production's worker (bot.processes)
    try:
        await worker.run(stop_on_signals())
    finally:
        if served is not None:
            await served.stop()
        await session.close()
        await bus.close()
        await backend.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--crash-at", choices=[*POINTS, *OTHER_POINTS])
    parser.add_argument("--owner")
    parser.add_argument("--ready-file", type=Path)
    parser.add_argument("--bus-channel", help="the Redis pub/sub channel of the test")
    options = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(process)d %(name)s %(message)s")
    event_loop.run(main(options.crash_at, options.owner, options.ready_file, options.bus_channel))

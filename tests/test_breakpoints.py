"""A graph that stops at a static breakpoint the start check cannot see (a deployed
graph's, a sub-agent's run inside a tool): the run fails, saying why, instead of ending
done with its tools never run (``errors.PausedWithoutInterruptError``)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from agent_bridge.arguments import tool_args_schema
from agent_bridge.errors import PausedWithoutInterruptError
from agent_bridge.graph_agent import check_runnable
from agent_bridge.models import Run, RunState
from agent_bridge.policy import Policy
from agent_bridge.remote_agent import RemoteAgent, open_client
from agent_bridge.run_driver import RunDriver
from agent_bridge.store import ApprovalStore
from bot.testing import RecordingNotifier
from tests import breakpoint_graphs
from tests.agent_server import AgentServer


async def claimed_run(store: ApprovalStore, task: str, thread_id: str = "t-1") -> Run:
    run = Run(run_id="run-1", thread_id=thread_id, task=task, channel_id="C1", user_id="U1")
    await store.create_run(run)
    claimed = await store.claim_run("run-1", owner="w", lease_s=60, from_state=RunState.QUEUED)
    assert claimed is not None
    return claimed


async def test_a_sub_agent_stopped_at_a_breakpoint_inside_a_tool_fails_the_run(
    sqlite_store: ApprovalStore,
) -> None:
    """The start check walks the graph's own subgraphs, not an agent a tool runs: the
    helper stops before sending, the tools node with it, and no interrupt is left."""
    check_runnable(breakpoint_graphs.delegating_agent(), reference="tests:delegating")
    graph = breakpoint_graphs.delegating_agent(InMemorySaver())
    driver = RunDriver(
        store=sqlite_store,
        graph=graph,
        notifier=RecordingNotifier(sqlite_store),
        policy=Policy(),
        args_schemas={"delegate": tool_args_schema(breakpoint_graphs.delegate)},
    )
    call = {"name": "delegate", "args": {"subject": "inner"}}
    run = await claimed_run(sqlite_store, json.dumps({"tool_calls": [call]}))
    with pytest.raises(PausedWithoutInterruptError, match="static breakpoint"):
        await driver.drive(run)
    assert breakpoint_graphs.SENT["inner"] == 0
    assert (await graph.aget_state({"configurable": {"thread_id": "t-1"}})).next == ("tools",)


async def test_a_deployed_graph_stopped_at_a_breakpoint_fails_the_run(
    sqlite_store: ApprovalStore, agent_server: AgentServer
) -> None:
    """On a real Agent Server (``langgraph dev``), whose graphs the worker cannot check
    at start: the run stops at ``interrupt_before=["tools"]``; it fails, and the mail
    was never sent (no tool message on the server's thread)."""
    client = open_client(agent_server.url, api_key=None)
    agent = RemoteAgent(client=client, assistant_id="breakpoint", agent_name="default")
    driver = RunDriver(
        store=sqlite_store,
        graph=agent,
        notifier=RecordingNotifier(sqlite_store),
        policy=Policy(),
        args_schemas={"send_mail": tool_args_schema(breakpoint_graphs.send_mail)},
        deployed=True,
    )
    thread_id = str(uuid.uuid4())
    run = await claimed_run(sqlite_store, breakpoint_graphs.mail_task("served"), thread_id)
    with pytest.raises(PausedWithoutInterruptError, match="before tools"):
        await driver.drive(run)
    server = agent_server.client()
    try:
        state: Any = await server.threads.get_state(thread_id)
    finally:
        await server.aclose()
    assert state["next"] == ["tools"]
    assert not [m for m in state["values"]["messages"] if m["type"] == "tool"]

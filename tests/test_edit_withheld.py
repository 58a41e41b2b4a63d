"""A batched card offers no Edit it could not confine to its own call: LangChain's
``HumanInTheLoopMiddleware`` (batched) runs a reviewer's edit in place of the call whose
tool call ID it was recorded under, so a model that gives a call no ID, or gives one ID
to two calls of a turn, would have the edit dropped or run twice, once in place of a call
nobody reviewed. Against the real middleware and the scripted model."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from agent_bridge.graph_agent import attach_checkpointer, discover
from agent_bridge.graph_policy import policy_for_graph
from agent_bridge.interrupts import Placement, approval_requests, edits_withheld
from agent_bridge.models import ApprovalRequest, MiddlewareMode, Run
from agent_bridge.policy import Policy
from agent_bridge.scripted_model import ScriptedChatModel

ran: list[tuple[str, str]] = []


@tool
def send_email(to: str) -> str:
    """Send an email."""
    ran.append(("send_email", to))
    return f"sent to {to}"


@tool
def lookup_customer(name: str) -> str:
    """Find a customer's email address."""
    ran.append(("lookup_customer", name))
    return f"{name}@example.com"


def task(first_id: str, second_id: str) -> str:
    """A turn calling ``send_email`` (gated) and ``lookup_customer`` (not), with these
    tool call IDs."""
    return json.dumps(
        {
            "tool_calls": [
                {"name": "send_email", "args": {"to": "a@example.com"}, "id": first_id},
                {"name": "lookup_customer", "args": {"name": "ann"}, "id": second_id},
            ]
        }
    )


def agent(mode: MiddlewareMode) -> Any:
    return create_agent(
        ScriptedChatModel(),
        tools=[send_email, lookup_customer],
        middleware=[
            HumanInTheLoopMiddleware(interrupt_on={"send_email": True}, interrupt_mode=mode)
        ],
    )


async def paused(ids: tuple[str, str], mode: MiddlewareMode) -> tuple[Any, RunnableConfig]:
    """The agent paused on ``send_email``, its turn's calls given ``ids``."""
    graph = attach_checkpointer(agent(mode), InMemorySaver(), reference="x:g")
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    await graph.ainvoke({"messages": [{"role": "user", "content": task(*ids)}]}, config)
    return graph, config


async def card(ids: tuple[str, str], mode: MiddlewareMode) -> ApprovalRequest:
    """The approval request of ``send_email``'s card."""
    graph, config = await paused(ids, mode)
    snapshot = await graph.aget_state(config)
    run = Run(run_id="r", thread_id="t", task="t", channel_id="C1", user_id="U1")
    policy = policy_for_graph(Policy(), discover(agent(mode)))
    (request,) = approval_requests(
        snapshot.interrupts,
        messages=snapshot.values["messages"],
        placement=Placement(run=run, policy=policy, args_schemas={}),
    )
    return request


@pytest.mark.parametrize(
    ("ids", "edited_run"),
    [
        (("a", "b"), [("send_email", "b@example.com"), ("lookup_customer", "ann")]),
        # one ID for both calls: the unreviewed lookup runs as the reviewer's edit
        (("x", "x"), [("send_email", "b@example.com"), ("send_email", "b@example.com")]),
        # no ID: the edit is dropped, the model's own call runs
        (("", "b"), [("send_email", "a@example.com"), ("lookup_customer", "ann")]),
    ],
)
async def test_langchains_batched_edit_is_run_by_tool_call_id(
    ids: tuple[str, str], edited_run: list[tuple[str, str]]
) -> None:
    # Why Edit is withheld (the middleware's behaviour, langchain 1.5): should this
    # change, edits_withheld may offer Edit again.
    graph, config = await paused(ids, "batched")
    ran.clear()
    edit = {
        "type": "edit",
        "edited_action": {"name": "send_email", "args": {"to": "b@example.com"}},
    }
    await graph.ainvoke(Command(resume={"decisions": [edit]}), config)
    assert sorted(ran) == sorted(edited_run)


@pytest.mark.parametrize(
    ("ids", "why"), [(("a", "b"), None), (("x", "x"), "shared_call_id"), (("", "b"), "no_call_id")]
)
async def test_a_batched_card_withholds_edit_only_where_it_would_not_be_its_own(
    ids: tuple[str, str], why: str | None
) -> None:
    request = await card(ids, "batched")
    assert request.edit_withheld == why
    offered = ["approve", "reject", "respond"] if why else ["approve", "edit", "reject", "respond"]
    assert request.allowed_decisions == offered


@pytest.mark.parametrize("ids", [("x", "x"), ("", "b")])
async def test_a_per_call_card_keeps_edit_its_answer_is_its_own(ids: tuple[str, str]) -> None:
    request = await card(ids, "per_call")
    assert request.edit_withheld is None and "edit" in request.allowed_decisions
    ran.clear()
    graph, config = await paused(ids, "per_call")
    assert ran == [("lookup_customer", "ann")]  # the ungated call ran as asked, once
    (interrupt,) = (await graph.aget_state(config)).interrupts
    edit = {
        "type": "edit",
        "edited_action": {"name": "send_email", "args": {"to": "b@example.com"}},
    }
    await graph.ainvoke(Command(resume={interrupt.id: edit}), config)
    assert ran == [("lookup_customer", "ann"), ("send_email", "b@example.com")]


def test_a_shared_id_withholds_edit_from_every_call_that_has_it() -> None:
    turn = AIMessage(
        "",
        id="m1",
        tool_calls=[
            {"name": "send_email", "args": {}, "id": "x", "type": "tool_call"},
            {"name": "send_email", "args": {}, "id": "y", "type": "tool_call"},
            {"name": "send_email", "args": {}, "id": "x", "type": "tool_call"},
            {"name": "send_email", "args": {}, "id": "", "type": "tool_call"},
        ],
    )
    assert edits_withheld([HumanMessage("t"), turn]) == {"x": "shared_call_id", "": "no_call_id"}
    assert edits_withheld([HumanMessage("t")]) == {}

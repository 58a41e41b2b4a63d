"""A batched card offers no Edit it could not confine to its own call: LangChain's
``HumanInTheLoopMiddleware`` (batched) runs a reviewer's edit in place of the call whose
tool call ID it was recorded under, so a model that gives a call no ID, or gives one ID
to two calls of a turn, would have the edit dropped or run twice, once in place of a call
nobody reviewed. Against the real middleware and the scripted model."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, Interrupt, PregelTask, StateSnapshot

from agent_bridge.errors import ConfigurationError, UndecidableCallError
from agent_bridge.graph import thread_config
from agent_bridge.graph_agent import attach_checkpointer, discover
from agent_bridge.graph_policy import policy_for_graph
from agent_bridge.interrupts import Placement, approval_requests, turn_calls
from agent_bridge.models import ApprovalRequest, MiddlewareMode, Run, RunState
from agent_bridge.policy import Policy
from agent_bridge.remote_agent import _local_snapshot
from agent_bridge.review_wording import edit_withheld_line
from agent_bridge.run_driver import RunDriver, messages_of, turn_messages
from agent_bridge.scripted_model import ScriptedChatModel
from agent_bridge.store import ApprovalStore
from bot.testing import RecordingNotifier

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
    # change, TurnCall.edit_withheld may offer Edit again.
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


def test_a_turns_calls_say_which_ids_are_shared_or_missing() -> None:
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
    whys = [call.edit_withheld() for _, call in turn_calls([HumanMessage("t"), turn])]
    assert whys == ["shared_call_id", None, "shared_call_id", "no_call_id"]
    assert turn_calls([HumanMessage("t")]) == []


class OneTurn(BaseChatModel):
    """One turn with exactly these tool calls (any IDs, ``None`` too), then an answer."""

    calls: list[dict[str, Any]]

    @property
    def _llm_type(self) -> str:
        return "one-turn"

    def bind_tools(self, tools: Any, **kwargs: Any) -> OneTurn:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        answered = any(isinstance(m, ToolMessage) for m in messages)
        calls = [dict(c, type="tool_call") for c in self.calls]
        message = AIMessage("done") if answered else AIMessage("", tool_calls=calls)
        return ChatResult(generations=[ChatGeneration(message=message)])


async def cards_of(model: BaseChatModel, interrupt_on: dict[str, Any]) -> list[ApprovalRequest]:
    """The batched cards of ``model``'s first turn."""

    def make() -> Any:
        return create_agent(
            model,
            tools=[send_email, lookup_customer],
            middleware=[HumanInTheLoopMiddleware(interrupt_on=interrupt_on)],
        )

    graph = attach_checkpointer(make(), InMemorySaver(), reference="x:g")
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    await graph.ainvoke({"messages": [{"role": "user", "content": "go"}]}, config)
    snapshot = await graph.aget_state(config)
    run = Run(run_id="r", thread_id="t", task="t", channel_id="C1", user_id="U1")
    policy = policy_for_graph(Policy(), discover(make()))
    return approval_requests(
        snapshot.interrupts,
        messages=snapshot.values["messages"],
        placement=Placement(run=run, policy=policy, args_schemas={}),
    )


async def test_a_turn_with_a_call_without_any_id_stops_before_a_tool_runs() -> None:
    # The middleware runs a None-ID call's tool and then fails on its result, and fails on
    # a rejection of it: no card could be decided safely
    model = OneTurn(
        calls=[
            {"name": "send_email", "args": {"to": "a@x"}, "id": "a"},
            {"name": "lookup_customer", "args": {"name": "ann"}, "id": None},
        ]
    )
    ran.clear()
    with pytest.raises(UndecidableCallError, match="'lookup_customer'"):
        await cards_of(model, {"send_email": True})
    assert ran == []


async def test_the_same_call_again_with_an_empty_id_withholds_edit_from_its_twin() -> None:
    # A `when` rule gates one of two identical calls (the one without an ID): the card
    # cannot tell which of them the middleware gated, so it must not offer Edit
    model = OneTurn(
        calls=[
            {"name": "send_email", "args": {"to": "a@x"}, "id": "Y"},
            {"name": "send_email", "args": {"to": "a@x"}, "id": ""},
        ]
    )
    only_the_second = {
        "send_email": {
            "allowed_decisions": ["approve", "edit", "reject"],
            "when": lambda request: not request.tool_call["id"],
        }
    }
    (card,) = await cards_of(model, only_the_second)
    assert card.edit_withheld == "ambiguous_call"
    assert card.allowed_decisions == ["approve", "reject"]


async def test_an_ungated_call_with_arguments_that_are_not_json_breaks_nothing() -> None:
    model = OneTurn(
        calls=[
            {"name": "send_email", "args": {"to": "a@x"}, "id": "a"},
            {"name": "lookup_customer", "args": {"name": "ann", "on": date(2024, 1, 1)}, "id": "b"},
        ]
    )
    (card,) = await cards_of(model, {"send_email": True})
    assert card.tool_call_id == "a" and card.edit_withheld is None


async def test_a_nan_argument_still_finds_its_call_and_its_shared_id() -> None:
    # json.loads takes NaN, as a model server's parser may; NaN != NaN, but the call is
    # matched by its canonical JSON, and its shared ID withholds Edit
    nan = json.loads("NaN")
    model = OneTurn(
        calls=[
            {"name": "send_email", "args": {"to": "a@x", "n": nan}, "id": "x"},
            {"name": "lookup_customer", "args": {"name": "ann"}, "id": "x"},
        ]
    )
    (card,) = await cards_of(model, {"send_email": True})
    assert card.tool_call_id == "x" and card.edit_withheld == "shared_call_id"


async def test_an_action_no_call_of_the_turn_matches_offers_no_edit() -> None:
    # As for a sub-agent run inside a tool: its interrupt's action is in no message of the
    # state the bridge reads
    model = OneTurn(calls=[{"name": "send_email", "args": {"to": "a@x"}, "id": "a"}])
    (card,) = await cards_of(model, {"send_email": True})
    action = {"name": "send_email", "args": {"to": "elsewhere@x"}, "description": ""}
    interrupt = Interrupt(value={"action_requests": [action], "review_configs": []}, id="i-sub")
    run = Run(run_id="r", thread_id="t", task="t", channel_id="C1", user_id="U1")
    (unknown,) = approval_requests(
        [interrupt],
        messages=[HumanMessage("go"), AIMessage("", tool_calls=[])],
        placement=Placement(run=run, policy=Policy(), args_schemas={}),
    )
    assert card.edit_withheld is None
    assert unknown.tool_call_id is None and unknown.edit_withheld == "unknown_call"
    assert "edit" not in unknown.allowed_decisions


async def test_a_review_left_with_no_decision_fails_the_run_instead_of_a_dead_card() -> None:
    model = OneTurn(
        calls=[
            {"name": "send_email", "args": {"to": "a@x"}, "id": "x"},
            {"name": "lookup_customer", "args": {"name": "ann"}, "id": "x"},
        ]
    )
    with pytest.raises(UndecidableCallError, match="allows only Edit"):
        await cards_of(model, {"send_email": {"allowed_decisions": ["edit"]}})


async def test_a_card_left_with_only_respond_is_no_question() -> None:
    model = OneTurn(
        calls=[
            {"name": "send_email", "args": {"to": "a@x"}, "id": "x"},
            {"name": "lookup_customer", "args": {"name": "ann"}, "id": "x"},
        ]
    )
    (card,) = await cards_of(model, {"send_email": {"allowed_decisions": ["edit", "respond"]}})
    assert card.allowed_decisions == ["respond"] and not card.is_question()


def test_a_deployed_sub_agents_turn_is_read_as_messages_and_keeps_edit() -> None:
    # An Agent Server's state gives a paused sub-agent's own state as message dicts
    # (RemoteGraph); the worker reads every level as messages, so the card finds its call
    call = {"name": "send_email", "args": {"to": "a@x"}, "id": "c1", "type": "tool_call"}
    turn = {"type": "ai", "content": "", "id": "m1", "tool_calls": [call]}
    action = {"name": "send_email", "args": {"to": "a@x"}, "description": ""}
    review = {"action_name": "send_email", "allowed_decisions": ["approve", "edit", "reject"]}
    interrupt = Interrupt(value={"action_requests": [action], "review_configs": [review]}, id="i1")

    def snapshot(values: dict[str, Any], tasks: tuple[Any, ...] = ()) -> StateSnapshot:
        return StateSnapshot(
            values=values, next=("tools",), config={}, metadata=None, created_at=None,
            parent_config=None, tasks=tasks, interrupts=(interrupt,),
        )  # fmt: skip

    inner = snapshot({"messages": [{"type": "human", "content": "go"}, turn]})
    outer = snapshot({"messages": []}, (PregelTask("t", "sub", (), None, (interrupt,), inner),))
    run = Run(run_id="r", thread_id="t", task="t", channel_id="C1", user_id="U1")
    (card,) = approval_requests(
        [interrupt],
        messages=messages_of(_local_snapshot(outer), "i1"),
        placement=Placement(run=run, policy=Policy(), args_schemas={}),
    )
    assert card.tool_call_id == "c1" and card.edit_withheld is None
    assert "edit" in card.allowed_decisions


class SecondReview(HumanInTheLoopMiddleware):
    """A second batched middleware (create_agent takes it: another class name)."""


def test_an_agent_with_two_batched_middlewares_is_refused() -> None:
    # Both write the turn's edits to one state key: one's edits are lost, its call run
    # as the model asked
    graph = create_agent(
        OneTurn(calls=[]),
        tools=[send_email, lookup_customer],
        middleware=[
            HumanInTheLoopMiddleware(interrupt_on={"send_email": True}),
            SecondReview(interrupt_on={"lookup_customer": True}),
        ],
    )
    with pytest.raises(ConfigurationError, match="2 batched HumanInTheLoopMiddleware"):
        discover(graph)
    per_call = create_agent(
        OneTurn(calls=[]),
        tools=[send_email, lookup_customer],
        middleware=[
            HumanInTheLoopMiddleware(interrupt_on={"send_email": True}, interrupt_mode="per_call"),
            SecondReview(interrupt_on={"lookup_customer": True}, interrupt_mode="per_call"),
        ],
    )
    assert set(discover(per_call).gated) == {"send_email", "lookup_customer"}


def delegating_to(inner: Any) -> Any:
    """A ``delegate`` tool that runs the agent ``inner`` inside itself (a sub-agent
    whose turn is in no state the driver reads)."""

    @tool
    async def delegate(task: str) -> str:
        """Hand the task to another agent."""
        out = await inner.ainvoke({"messages": [{"role": "user", "content": task}]})
        return str(out["messages"][-1].content)

    return delegate


async def test_a_sub_agent_run_inside_a_tool_is_not_matched_to_its_parents_call() -> None:
    # The sub-agent's own call (an empty ID: its edit would be dropped) is the same as a
    # call of the parent's turn, whose messages are the only ones the driver can read
    inner = create_agent(
        OneTurn(calls=[{"name": "send_email", "args": {"to": "a@x"}, "id": ""}]),
        tools=[send_email],
        middleware=[HumanInTheLoopMiddleware(interrupt_on={"send_email": True})],
    )

    delegate = delegating_to(inner)
    parent = OneTurn(
        calls=[
            {"name": "send_email", "args": {"to": "a@x"}, "id": "p2"},
            {"name": "delegate", "args": {"task": "email a"}, "id": "p1"},
        ]
    )
    graph = attach_checkpointer(
        create_agent(parent, tools=[send_email, delegate]), InMemorySaver(), reference="x:g"
    )
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    await graph.ainvoke({"messages": [{"role": "user", "content": "go"}]}, config)
    snapshot = await graph.aget_state(config, subgraphs=True)
    (interrupt,) = snapshot.interrupts
    run = Run(run_id="r", thread_id="t", task="t", channel_id="C1", user_id="U1")
    (card,) = approval_requests(
        [interrupt],
        messages=turn_messages(snapshot, interrupt),
        placement=Placement(run=run, policy=Policy(), args_schemas={}),
    )
    assert card.edit_withheld == "unknown_call" and card.tool_call_id is None
    assert "edit" not in card.allowed_decisions


@pytest.mark.parametrize("mode", ["batched", "per_call"])
@pytest.mark.parametrize(
    ("inner_id", "outer_id"),
    [("s1", "p2"), ("call_0", "call_0"), ("", "")],
    ids=["own-ids", "ids-numbered-per-turn", "empty-ids"],
)
async def test_a_sub_agents_call_is_not_judged_by_its_parents_gating(
    sqlite_store: ApprovalStore, mode: str, inner_id: str, outer_id: str
) -> None:
    """A sub-agent run inside a tool gates ``send_email``, which its parent has too and
    does not gate; its call may even have the ID of one of the parent's (a model that
    numbers IDs per turn, or gives none). The parent's policy says nothing of the
    sub-agent's middleware: its card is drawn as its interrupt asks, and drawn so again
    once stored (as a later drive reads it), never refused as a call a deploy stopped
    gating."""
    inner = create_agent(
        OneTurn(calls=[{"name": "send_email", "args": {"to": "a@x"}, "id": inner_id}]),
        tools=[send_email],
        middleware=[
            HumanInTheLoopMiddleware(
                interrupt_on={"send_email": {"allowed_decisions": ["approve", "reject"]}},
                interrupt_mode=mode,  # type: ignore[arg-type]
            )
        ],
    )

    delegate = delegating_to(inner)
    source = create_agent(
        OneTurn(
            calls=[
                {"name": "send_email", "args": {"to": "b@x"}, "id": outer_id},
                {"name": "delegate", "args": {"task": "email a"}, "id": "call_1"},
            ]
        ),
        tools=[send_email, delegate],
    )
    shape = discover(source)
    # a Pregel is an AgentGraph at runtime, not to mypy (its astream's typed keywords)
    graph: Any = attach_checkpointer(source, InMemorySaver(), reference="x:g")
    driver = RunDriver(
        store=sqlite_store,
        graph=graph,
        notifier=RecordingNotifier(sqlite_store),
        policy=policy_for_graph(Policy(), shape),
        args_schemas=shape.args_schemas,
    )
    run = await sqlite_store.create_run(
        Run(run_id="run-1", thread_id="t-1", task="go", channel_id="C1", user_id="U1")
    )
    claimed = await sqlite_store.claim_run(
        run.run_id, owner="w", lease_s=60, from_state=RunState.QUEUED
    )
    assert claimed is not None
    assert await driver.drive(claimed) == (RunState.WAITING, None)
    (card,) = await sqlite_store.requests_for_run(run.run_id)
    assert card.tool_name == "send_email" and card.mode == mode
    assert card.allowed_decisions == ["approve", "reject"]

    snapshot = await graph.aget_state(thread_config("t-1"), subgraphs=True)
    (interrupt,) = snapshot.interrupts
    placement = Placement(
        run=claimed,
        policy=driver.policy,
        args_schemas=shape.args_schemas,
        drawn=frozenset({interrupt.id}),
    )
    (again,) = approval_requests(
        [interrupt], messages=turn_messages(snapshot, interrupt), placement=placement
    )
    assert again.allowed_decisions == ["approve", "reject"]


def test_the_cards_line_names_only_the_decisions_it_offers() -> None:
    both = edit_withheld_line("shared_call_id", ["approve", "reject", "respond"])
    assert both.endswith("and a rejection or a response would answer all of them.")
    approve_only = edit_withheld_line("shared_call_id", ["approve"])
    assert "rejection" not in approve_only and "response" not in approve_only
    assert edit_withheld_line("no_call_id", ["respond"]).endswith(
        "and a response would answer every call of the turn with an empty ID."
    )

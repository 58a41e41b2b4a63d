"""Small LangGraph graphs whose nodes call ``langgraph.types.interrupt`` themselves: one
per interrupt shape of ``agent_bridge.interrupt_shapes``, two parallel branches, and a
sub-graph. Each ends with an ``AIMessage`` holding the JSON of every answer its nodes
got (``answers``, by node), so a test reads what the graph was resumed with in the
run's final answer.

``graph_of(name, checkpointer)`` compiles one; ``inbox``, ``form``, ``plain``,
``parallel`` and ``subgraph`` are the same compiled without a checkpointer, for
``AGENT=tests.interrupt_graphs:<name>`` (the worker gives it its own).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer, interrupt

from agent_bridge.settings import WorkerConfig

INBOX_ACTION = "send_email"
INBOX_ARGS = {"to": "ops@example.com", "subject": "Weekly report"}
FORM_SCHEMA = {
    "type": "object",
    "properties": {
        "environment": {"type": "string", "enum": ["staging", "production"]},
        "replicas": {"type": "integer", "minimum": 1, "maximum": 5},
    },
    "required": ["environment", "replicas"],
}
PLAIN_QUESTION = "Which region should the report cover?"
POLICY = Path(__file__).parent / "fixtures" / "interrupts_policy.yml"
"""The graphs' policy: Slack-side rules only (they gate no tool)."""


def marked_graph(
    settings: WorkerConfig, request: pytest.FixtureRequest, module: str = __name__
) -> WorkerConfig:
    """``settings`` running the graph the test's ``graph`` mark names, as an engineer
    configures it (``AGENT=<module>:<name>`` naming a compiled graph), under ``POLICY``;
    for a test module's ``agent_settings`` fixture."""
    marker = request.node.get_closest_marker("graph")
    assert marker is not None, "mark the test @pytest.mark.graph(name)"
    (name,) = marker.args
    return settings.model_copy(update={"agent": f"{module}:{name}", "policy": POLICY})


def _merge(left: dict[str, Any], right: dict[str, Any]) -> dict[str, Any]:
    return {**left, **right}


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    answers: Annotated[dict[str, Any], _merge]


def human_interrupt(*, allow: tuple[str, ...]) -> dict[str, Any]:
    """An Agent Inbox ``HumanInterrupt`` for ``send_email`` allowing ``allow``
    (``accept``, ``edit``, ``respond``, ``ignore``)."""
    return {
        "action_request": {"action": INBOX_ACTION, "args": dict(INBOX_ARGS)},
        "config": {
            f"allow_{flag}": flag in allow for flag in ("accept", "edit", "respond", "ignore")
        },
        "description": "Send the weekly report?",
    }


def _inbox(state: State) -> State:
    # Agent Inbox's documented idiom: a list of one HumanInterrupt, the first response.
    response = interrupt([human_interrupt(allow=("accept", "edit", "respond", "ignore"))])[0]
    return {"answers": {"inbox": response}}


def _form(state: State) -> State:
    answer = interrupt({"question": "Where should it deploy?", "json_schema": FORM_SCHEMA})
    return {"answers": {"form": answer}}


def _plain(state: State) -> State:
    return {"answers": {"plain": interrupt(PLAIN_QUESTION)}}


LOOKALIKES = {
    "lookalike_type": {"type": "tool_approval", "tool": "deploy", "question": "Deploy?"},
    "lookalike_actions": {"action_requests": [{"action": "deploy"}], "question": "Deploy?"},
    "lookalike_text": {"action_requests": "deploy", "question": "Deploy?"},
}
"""A node's own interrupt values that carry a key of ``HumanInTheLoopMiddleware``'s
(``type: tool_approval``, ``action_requests``) but not its shape."""


def _lookalike(name: str) -> Any:
    def ask(state: State) -> State:
        return {"answers": {name: interrupt(LOOKALIKES[name])}}

    return ask


def _typed_list(state: State) -> State:
    # LangGraph converts the type to a JSON schema and checks the answer against it
    return {"answers": {"typed_list": interrupt("Which tags?", response_schema=list[str])}}


def _typed_count(state: State) -> State:
    # a dict schema LangGraph passes through unchecked
    count = interrupt("How many replicas?", response_schema={"type": "integer", "minimum": 1})
    return {"answers": {"typed_count": count}}


def _left(state: State) -> State:
    return {"answers": {"left": interrupt("Answer for the left branch?")}}


def _right(state: State) -> State:
    return {"answers": {"right": interrupt("Answer for the right branch?")}}


def _report(state: State) -> State:
    answers = json.dumps(state.get("answers", {}), sort_keys=True)
    return {"messages": [AIMessage(content=answers)]}


def graph_of(
    name: str, checkpointer: Checkpointer = None
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Compile the test graph ``name`` (``inbox``, ``form``, ``plain``, ``parallel``,
    ``subgraph``, ``typed_list``, ``typed_count``, or one of ``LOOKALIKES``) with
    ``checkpointer``."""
    builder = StateGraph(State)
    builder.add_node("report", _report)
    if name == "parallel":
        builder.add_node("left", _left)
        builder.add_node("right", _right)
        builder.add_edge(START, "left")
        builder.add_edge(START, "right")
        builder.add_edge(["left", "right"], "report")
    else:
        if name == "subgraph":
            inner = StateGraph(State)
            inner.add_node("plain", _plain)
            inner.add_edge(START, "plain")
            builder.add_node("ask", inner.compile())
        elif name == "inbox":
            builder.add_node("ask", _inbox)
        elif name == "form":
            builder.add_node("ask", _form)
        elif name in LOOKALIKES:
            builder.add_node("ask", _lookalike(name))
        elif name == "typed_list":
            builder.add_node("ask", _typed_list)
        elif name == "typed_count":
            builder.add_node("ask", _typed_count)
        else:
            builder.add_node("ask", _plain)
        builder.add_edge(START, "ask")
        builder.add_edge("ask", "report")
    return builder.compile(checkpointer=checkpointer)


inbox = graph_of("inbox")
form = graph_of("form")
plain = graph_of("plain")
parallel = graph_of("parallel")
subgraph = graph_of("subgraph")
lookalike_type = graph_of("lookalike_type")
lookalike_actions = graph_of("lookalike_actions")
lookalike_text = graph_of("lookalike_text")
typed_list = graph_of("typed_list")
typed_count = graph_of("typed_count")

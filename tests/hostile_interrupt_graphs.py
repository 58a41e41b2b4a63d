"""Graphs of a malicious agent: each one node raising one hostile interrupt value (a
broken JSON schema, a value nested too deeply, ...), then reporting the answer it got
(``answers``, as in ``tests.interrupt_graphs``). Compiled without a checkpointer, for
``AGENT=tests.hostile_interrupt_graphs:<name>`` (the worker gives it its own)."""

from __future__ import annotations

from itertools import count
from typing import Any

from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import interrupt

from tests.interrupt_graphs import State, _report

BROKEN_SCHEMAS: dict[str, dict[str, Any]] = {
    "unknown_type": {"type": "object", "properties": {"region": {"type": "nowhere"}}},
    "remote_ref": {
        "type": "object",
        "properties": {"region": {"$ref": "https://schemas.example.com/region.json"}},
    },
    "dangling_ref": {"type": "object", "properties": {"region": {"$ref": "#/$defs/Nope"}}},
    "ref_loop": {
        "type": "object",
        "$defs": {"Region": {"allOf": [{"$ref": "#/$defs/Region"}]}},
        "properties": {"region": {"$ref": "#/$defs/Region"}},
    },
    "bad_pattern": {
        "type": "object",
        "properties": {"region": {"type": "string", "pattern": "(["}},
    },
}
"""Object schemas an answer can never be checked against: ``jsonschema`` raises on each
(``SchemaError``, an unresolvable reference, a reference loop)."""
BROKEN_QUESTION = "Which region?"


def asking(value: Any) -> CompiledStateGraph[Any, Any, Any, Any]:
    """A graph whose one node asks ``interrupt(value)`` and reports the answer."""

    def ask(state: State) -> State:
        return {"answers": {"ask": interrupt(value)}}

    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_node("report", _report)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "report")
    return builder.compile()


unknown_type = asking({"question": BROKEN_QUESTION, "json_schema": BROKEN_SCHEMAS["unknown_type"]})
remote_ref = asking({"question": BROKEN_QUESTION, "json_schema": BROKEN_SCHEMAS["remote_ref"]})
dangling_ref = asking({"question": BROKEN_QUESTION, "json_schema": BROKEN_SCHEMAS["dangling_ref"]})
ref_loop = asking({"question": BROKEN_QUESTION, "json_schema": BROKEN_SCHEMAS["ref_loop"]})
bad_pattern = asking({"question": BROKEN_QUESTION, "json_schema": BROKEN_SCHEMAS["bad_pattern"]})


def _restless_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    """Two parallel branches; the right one asks a new question each time it runs (its
    interrupt keeps its ID: LangGraph derives it from the task). Answering the left
    branch runs the right one again, so its card's question is no longer the asked one."""
    runs = count(1)

    def left(state: State) -> State:
        return {"answers": {"left": interrupt("Left?")}}

    def right(state: State) -> State:
        return {"answers": {"right": interrupt(f"{RESTLESS_QUESTION} (asked {next(runs)})")}}

    builder = StateGraph(State)
    builder.add_node("left", left)
    builder.add_node("right", right)
    builder.add_node("report", _report)
    builder.add_edge(START, "left")
    builder.add_edge(START, "right")
    builder.add_edge(["left", "right"], "report")
    return builder.compile()


RESTLESS_QUESTION = "Delete which backups?"
restless = _restless_graph()


MARKUP = "<!channel> <@U0BOSS> <https://evil.example|docs> `x` ```y``` \n> quoted \u200b\u202e *b*"
"""Slack markup, mentions, a labelled link, code, a quote, zero-width and bidi characters."""
marked_up = asking(
    [
        {
            "action_request": {"action": MARKUP, "args": {MARKUP: MARKUP, "list": [MARKUP]}},
            "config": {"allow_accept": True, "allow_edit": True, "allow_respond": True},
            "description": MARKUP,
        }
    ]
)

"""``agent_bridge.call_ids``: the run's call IDs, unique whatever the model numbered (pure)."""

from __future__ import annotations

from typing import cast

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages

from agent_bridge import call_ids
from agent_bridge.interrupts import pending_tool_calls
from agent_bridge.message_text import call_message
from agent_bridge.progress import progress_of


def turn(*ids: str, text: str = "") -> AIMessage:
    return AIMessage(
        content=text,
        tool_calls=[
            {"name": "tool", "args": {"n": i}, "id": id_, "type": "tool_call"}
            for i, id_ in enumerate(ids)
        ],
    )


def grow(state: list[BaseMessage], new: list[BaseMessage]) -> list[BaseMessage]:
    """The state's messages after LangGraph's ``add_messages`` reducer took ``new``."""
    return cast(list[BaseMessage], add_messages(state, new))  # type: ignore[arg-type]


def result(call_id: str, text: str) -> ToolMessage:
    return ToolMessage(text, tool_call_id=call_id, name="tool")


def test_unique_ids_are_the_models_own() -> None:
    messages = [HumanMessage("task"), turn("a", "b"), result("b", "rb"), result("a", "ra")]
    assert [c["id"] for t in call_ids.turns(messages) for c in t.calls] == ["a", "b"]
    assert [(r.call_id, r.message.content) for r in call_ids.results(messages)] == [
        ("b", "rb"),
        ("a", "ra"),
    ]


def test_an_id_given_again_in_a_later_turn_is_that_turns_own() -> None:
    messages = [
        HumanMessage("task"),
        turn("call_0", "call_1"),
        result("call_0", "first"),
        result("call_1", "second"),
        turn("call_0", text="again"),
        result("call_0", "third"),
        turn("call_0"),
    ]
    assert [[c["id"] for c in t.calls] for t in call_ids.turns(messages)] == [
        ["call_0", "call_1"],
        ["call_0#2"],
        ["call_0#3"],
    ]
    assert [(r.call_id, r.message.content) for r in call_ids.results(messages)] == [
        ("call_0", "first"),
        ("call_1", "second"),
        ("call_0#2", "third"),
    ]
    assert [c["id"] for c in pending_tool_calls(messages)] == ["call_0#3"]
    assert call_ids.latest_call_id(messages, "call_0") == "call_0#3"
    assert call_ids.latest_call_id(messages, "call_9") == "call_9"
    assert call_message(messages, "call_0#2") is messages[4]
    assert call_message(messages, "call_0") is messages[1]


def test_an_id_a_model_gave_that_reads_as_a_run_call_id_is_not_shared() -> None:
    messages = [turn("x"), result("x", "1"), turn("x"), result("x", "2"), turn("x#2"), turn("x")]
    ids = [c["id"] for t in call_ids.turns(messages) for c in t.calls]
    assert ids == ["x", "x#2", "x#2#3", "x#3"]
    named = grow([], [turn("y"), turn("y")])  # LangGraph's reducer gives each its ID
    later = named[1].id
    hostile = grow(named, [turn(f"y#{later}"), turn("y")])
    ids = [c["id"] for t in call_ids.turns(hostile) for c in t.calls]
    assert ids[:2] == ["y", f"y#{later}"] and len(set(ids)) == 4, ids


def test_a_call_keeps_its_run_call_id_when_earlier_messages_are_removed() -> None:
    """A graph trimming its history (``RemoveMessage``, as ``SummarizationMiddleware``
    does): a later turn's reused ID is still its own, not one a removed call had."""
    state = grow(
        [],
        [
            HumanMessage("task"),
            turn("call_0"),
            result("call_0", "r1"),
            turn("call_0"),
            result("call_0", "r2"),
        ],
    )
    before = {r.call_id for r in call_ids.results(state)}
    kept = state[3:]
    state = grow(state, [RemoveMessage(id=REMOVE_ALL_MESSAGES), HumanMessage("summary"), *kept])
    state = grow(state, [turn("call_0"), result("call_0", "r3")])
    third = call_ids.results(state)[-1]
    assert third.message.content == "r3" and third.call_id not in before
    assert call_ids.latest_call_id(state, "call_0") == third.call_id


def test_an_empty_tool_call_id_names_its_call_and_its_result_alike() -> None:
    messages = [turn(""), result("", "r1")]
    (request_id,) = [c["id"] for c in pending_tool_calls(messages)]
    assert call_ids.results(messages)[0].call_id == request_id == ""
    assert call_ids.latest_call_id(messages, "") == ""


def test_a_result_whose_call_is_unknown_keeps_its_own_id() -> None:
    orphan = ToolMessage("lost", tool_call_id="nowhere", name="tool", id="m1")
    assert [r.call_id for r in call_ids.results([HumanMessage("t"), orphan])] == ["nowhere"]


def test_progress_counts_a_reused_ids_unreviewed_call_apart_from_its_reviewed_one() -> None:
    messages = [
        turn("call_0"),
        result("call_0", "ungated"),
        turn("call_0"),
        result("call_0", "reviewed"),
        AIMessage("done"),
    ]
    assert progress_of(messages, reviewed={"call_0#2"}).unreviewed == (("tool", 1),)


def test_many_reuses_of_one_id_in_messages_without_ids_get_the_next_free_suffix() -> None:
    # A state whose messages have no IDs (a reducer other than add_messages): each reuse
    # of "x" takes the next "x#<n>" no call has, the model's own look-alikes skipped; the
    # names a walk gives do not depend on how many came before (it remembers the next).
    crafted = turn("x#3", "x#4", "x#6")
    messages: list[BaseMessage] = [HumanMessage("t"), turn("x"), crafted]
    messages += [turn("x") for _ in range(5)]
    names = [c["id"] for t in call_ids.turns(messages) for c in t.calls]
    assert names == ["x", "x#3", "x#4", "x#6", "x#2", "x#5", "x#7", "x#8", "x#9"]
    assert len(set(names)) == len(names)

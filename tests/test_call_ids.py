"""``agent_bridge.call_ids``: the run's call IDs, unique whatever the model numbered (pure)."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

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
    messages = [turn("x"), result("x", "1"), turn("x"), result("x", "2"), turn("x#2")]
    ids = [c["id"] for t in call_ids.turns(messages) for c in t.calls]
    assert ids == ["x", "x#2", "x#2#2"]
    assert len(set(ids)) == 3


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

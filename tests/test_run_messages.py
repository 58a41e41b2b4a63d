"""``in_call_order``: which tool results can be posted now, and in which order (pure)."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from agent_bridge.run_messages import in_call_order

TURN = AIMessage(
    content="",
    tool_calls=[
        {"name": "append_line", "args": {}, "id": f"c{i}", "type": "tool_call"} for i in range(3)
    ],
)


def result(call_id: str) -> ToolMessage:
    return ToolMessage(f"ran {call_id}", tool_call_id=call_id, name="append_line")


def test_results_come_in_call_order_whatever_order_they_finished_in() -> None:
    messages = [HumanMessage("task"), TURN, result("c2"), result("c0"), result("c1")]
    assert [r.call_id for r in in_call_order(messages)] == ["c0", "c1", "c2"]


def test_a_later_result_waits_for_an_earlier_one_still_running() -> None:
    messages = [HumanMessage("task"), TURN, result("c2"), result("c0")]
    assert [r.call_id for r in in_call_order(messages)] == ["c0"]


def test_a_call_reviewed_apart_does_not_hold_the_others_back() -> None:
    messages = [HumanMessage("task"), TURN, result("c2")]
    ordered = in_call_order(messages, reviewed_apart=lambda name: name == "append_line")
    assert [r.call_id for r in ordered] == ["c2"]

"""The scripted model: the calls it proposes for a task, and the answer it gives after."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import HumanMessage, ToolMessage

from agent_bridge.scripted_model import DEMO_TASK, ScriptedChatModel


def test_the_demo_task_proposes_the_three_documentation_tools() -> None:
    turn = ScriptedChatModel().next_turn([HumanMessage(DEMO_TASK)])
    assert [c["name"] for c in turn.tool_calls] == ["write_file", "execute_sql", "read_data"]
    assert turn.tool_calls == ScriptedChatModel().next_turn([HumanMessage(DEMO_TASK)]).tool_calls


def test_a_json_task_proposes_exactly_its_calls() -> None:
    task = json.dumps({"tool_calls": [{"name": "read_data", "args": {"table": "orders"}}]})
    turn = ScriptedChatModel().next_turn([HumanMessage(task)])
    assert [(c["name"], c["args"]) for c in turn.tool_calls] == [("read_data", {"table": "orders"})]


def test_after_results_the_answer_quotes_each_result() -> None:
    answer = ScriptedChatModel().next_turn(
        [
            HumanMessage(DEMO_TASK),
            ToolMessage("Wrote 3 characters to a.txt", tool_call_id="1", name="write_file"),
            ToolMessage("User rejected: no", tool_call_id="2", name="execute_sql"),
        ]
    )
    assert not answer.tool_calls
    assert "Wrote 3 characters to a.txt" in answer.text and "User rejected: no" in answer.text


@pytest.mark.parametrize(
    ("task", "says"),
    [
        ('{"tool_calls": [bad', "does not parse"),
        ('{"calls": []}', '{"tool_calls"'),
        ("Hello", DEMO_TASK),
    ],
)
def test_a_task_without_calls_says_what_would_work(task: str, says: str) -> None:
    turn = ScriptedChatModel().next_turn([HumanMessage(task)])
    assert not turn.tool_calls and says in turn.text


def test_a_json_task_with_then_calls_tools_again_on_its_next_turn() -> None:
    task = json.dumps(
        {
            "tool_calls": [{"name": "append_line", "args": {"line": "one"}}],
            "then": [[{"name": "append_line", "args": {"line": "two"}}]],
        }
    )
    model = ScriptedChatModel()
    first = model.next_turn([HumanMessage(task)])
    assert [c["args"] for c in first.tool_calls] == [{"line": "one"}]
    result = ToolMessage("ok one", tool_call_id=first.tool_calls[0]["id"], name="append_line")
    second = model.next_turn([HumanMessage(task), first, result])
    assert [c["args"] for c in second.tool_calls] == [{"line": "two"}]
    assert second.tool_calls[0]["id"] != first.tool_calls[0]["id"]
    result_two = ToolMessage("ok two", tool_call_id=second.tool_calls[0]["id"], name="append_line")
    last = model.next_turn([HumanMessage(task), first, result, second, result_two])
    assert not last.tool_calls and "ok one" in str(last.content) and "ok two" in str(last.content)

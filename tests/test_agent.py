"""The scripted model, the policy file and the agent they build (in-memory checkpointer)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from agent_bridge.agent import build_agent, load_tools
from agent_bridge.errors import ConfigurationError
from agent_bridge.policy import Policy, load_policy
from agent_bridge.scripted_model import DEMO_TASK, ScriptedChatModel
from tests.harness import agent_config


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


def test_demo_policy_gates_write_and_sql_not_read() -> None:
    kwargs = load_policy(None).middleware_kwargs()
    assert set(kwargs["interrupt_on"]) == {"write_file", "execute_sql", "ask_user"}
    assert kwargs["interrupt_on"]["ask_user"]["allowed_decisions"] == ["respond"]
    assert kwargs["interrupt_on"]["execute_sql"] == {
        "allowed_decisions": ["approve", "reject"],
        "description": "🚨 SQL execution requires DBA approval",
    }


def test_a_broken_policy_names_the_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "policy.yml"
    path.write_text("tools:\n  write_file:\n    allowed_decision: [approve]\n")
    with pytest.raises(ConfigurationError, match=r"(?s)policy.yml.*allowed_decision"):
        load_policy(path)


async def test_write_file_refuses_a_path_outside_the_workspace(tmp_path: Path) -> None:
    settings = agent_config(tmp_path / "ws")
    tools = {t.name: t for t in load_tools(settings)}
    result = await tools["write_file"].ainvoke({"path": "../../escape.txt", "content": "x"})
    assert "outside the workspace" in result
    assert not (tmp_path / "escape.txt").exists()
    blank = await tools["write_file"].ainvoke({"path": "   ", "content": "x"})
    assert blank.startswith("Refused: the path is empty")
    ok = await tools["write_file"].ainvoke({"path": "a/b.txt", "content": "hello"})
    assert ok == "Wrote 5 characters to a/b.txt"


async def test_the_agent_pauses_once_for_the_turn_and_resumes(tmp_path: Path) -> None:
    settings = agent_config(tmp_path / "ws")
    graph = build_agent(
        tools=load_tools(settings),
        model=ScriptedChatModel(),
        policy=load_policy(None),
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t"}}
    await graph.ainvoke({"messages": [{"role": "user", "content": DEMO_TASK}]}, config)
    (interrupt,) = (await graph.aget_state(config)).interrupts
    assert json.loads(json.dumps(interrupt.value)) == interrupt.value  # JSON-primitive
    names = [a["name"] for a in interrupt.value["action_requests"]]
    assert names == ["write_file", "execute_sql"]
    await graph.ainvoke(
        Command(
            resume={
                interrupt.id: {
                    "decisions": [{"type": "approve"}, {"type": "reject", "message": "not yet"}]
                }
            }
        ),
        config,
    )
    snapshot = await graph.aget_state(config)
    assert not snapshot.interrupts and "not yet" in snapshot.values["messages"][-1].text


def test_a_policy_gating_a_missing_tool_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "policy.yml"
    path.write_text("tools:\n  send_email: true\n")
    with pytest.raises(ConfigurationError, match="send_email"):
        build_agent(
            tools=load_tools(agent_config(tmp_path)),
            model=ScriptedChatModel(),
            policy=load_policy(path),
            checkpointer=InMemorySaver(),
        )


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


@pytest.mark.parametrize(
    ("edit_notice", "expected"),
    [
        ("default", "a human reviewer replaced this tool call"),
        ("Edited by ops.", "Edited by ops."),
        (None, None),
    ],
)
async def test_the_edit_notice_is_configurable_including_none(
    tmp_path: Path, edit_notice: str | None, expected: str | None
) -> None:
    policy = Policy.model_validate({"edit_notice": edit_notice, "tools": {"write_file": True}})
    graph = build_agent(
        tools=load_tools(agent_config(tmp_path / "ws")),
        model=ScriptedChatModel(),
        policy=policy,
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t"}}
    task = json.dumps(
        {"tool_calls": [{"name": "write_file", "args": {"path": "a.txt", "content": "x"}}]}
    )
    await graph.ainvoke({"messages": [{"role": "user", "content": task}]}, config)
    (interrupt,) = (await graph.aget_state(config)).interrupts
    edit = {
        "type": "edit",
        "edited_action": {"name": "write_file", "args": {"path": "b.txt", "content": "yy"}},
    }
    await graph.ainvoke(Command(resume={interrupt.id: {"decisions": [edit]}}), config)
    (result,) = [m for m in (await graph.aget_state(config)).values["messages"] if m.type == "tool"]
    assert result.content.endswith("Wrote 2 characters to b.txt")
    if expected is None:
        assert result.content == "Wrote 2 characters to b.txt"
    else:
        assert expected in result.content

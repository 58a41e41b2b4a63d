"""The agent built from tools, a model and a policy (in-memory checkpointer): it pauses
for review, resumes, and refuses a policy that does not fit its tools."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from agent_bridge.agent import build_agent, load_tools
from agent_bridge.errors import ConfigurationError
from agent_bridge.policy import Policy
from agent_bridge.policy_file import load_policy
from agent_bridge.scripted_model import DEMO_TASK, ScriptedChatModel
from tests.harness import agent_config


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


def test_a_sql_block_naming_an_argument_the_tool_does_not_take_is_refused(
    tmp_path: Path,
) -> None:
    path = tmp_path / "policy.yml"
    path.write_text("tools:\n  execute_sql:\n    sql: {argument: statement, dialect: sqlite}\n")
    with pytest.raises(ConfigurationError, match="'statement', but execute_sql takes query"):
        build_agent(
            tools=load_tools(agent_config(tmp_path)),
            model=ScriptedChatModel(),
            policy=load_policy(path),
            checkpointer=InMemorySaver(),
        )


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

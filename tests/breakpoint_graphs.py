"""Agents that stop at a static breakpoint, where the worker's start check cannot see it
(``graph_agent.check_runnable`` refuses a local graph's own): compiled for an Agent
Server (``deployed_graph``, served by ``langgraph dev``), and a sub-agent run inside a
tool (``delegating_agent``). ``SENT`` counts what ``send_mail`` really sent."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool

from agent_bridge.scripted_model import ScriptedChatModel

SENT: Counter[str] = Counter()


@tool
def send_mail(to: str, subject: str) -> str:
    """Send a mail."""
    SENT[subject] += 1
    return f"sent {subject} to {to}"


def mail_task(subject: str) -> str:
    """The scripted model's task: one ``send_mail`` call of ``subject``."""
    call = {"name": "send_mail", "args": {"to": "a@example.com", "subject": subject}}
    return json.dumps({"tool_calls": [call]})


def breakpoint_agent(checkpointer: Any = None) -> Any:
    """An agent paused before its tools node by ``interrupt_before``."""
    return create_agent(
        ScriptedChatModel(),
        tools=[send_mail],
        interrupt_before=["tools"],
        checkpointer=checkpointer,
    )


deployed_graph = breakpoint_agent()
"""For ``langgraph dev`` (the server gives it its checkpointer)."""

_helper = breakpoint_agent()


@tool
def delegate(subject: str) -> str:
    """Have a helper agent send the mail."""
    result = _helper.invoke({"messages": [HumanMessage(mail_task(subject))]})
    return str(result["messages"][-1].content)


def delegating_agent(checkpointer: Any = None) -> Any:
    """An agent whose ``delegate`` tool runs ``_helper``, which stops at its breakpoint."""
    return create_agent(ScriptedChatModel(), tools=[delegate], checkpointer=checkpointer)

"""Bring your own compiled graph: an agent you built with ``create_agent``, approved in Slack.

Copy this file into your package and replace the tools, prompt and middleware with yours.
The worker imports what ``AGENT`` names: here ``make_graph``, a factory taking the
worker's settings (``AGENT`` may also name a compiled graph itself, or a factory taking
no arguments). It gives the graph its checkpointer, so compile it without one.

Your ``HumanInTheLoopMiddleware`` decides which tool calls wait for a person and which
buttons their cards get; the approval policy (``POLICY``) then says only how they are
reviewed in Slack: channels, approvers, quorum, time limits, SQL risk, what is shown.
A policy entry for a tool your middleware does not gate is refused at start.

Run it offline, on the local Slack sandbox, with the demo's tools and policy::

    PYTHONPATH=. AGENT=examples.compiled_graph_agent:make_graph ./scripts/demo

``MODEL`` (``scripted`` offline, or ``provider:model`` such as ``openai:gpt-4.1``) is read
here, by the factory, from the settings it is given; the worker itself does not use it
for a compiled graph, nor ``SYSTEM_PROMPT`` (refused: the graph has its own prompt).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, HumanInTheLoopMiddleware
from langchain.agents.middleware.types import ToolCallRequest
from langchain_core.messages import ToolMessage
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from agent_bridge.agent import load_model
from agent_bridge.demo_tools import make_tools
from agent_bridge.settings import WorkerConfig

logger = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "You maintain the orders database. Archive rows to a file before you delete them, "
    "and ask the user when a request is ambiguous."
)


class LogToolCalls(AgentMiddleware):
    """Your own middleware: here, one log line per tool call that runs."""

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Log the call, then run it."""
        logger.info("running tool %s", request.tool_call["name"])
        return handler(request)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Log the call, then run it (the worker runs graphs asynchronously)."""
        logger.info("running tool %s", request.tool_call["name"])
        return await handler(request)


def make_graph(settings: WorkerConfig) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The agent, compiled without a checkpointer: the worker gives it its own.

    Args:
        settings: The worker's settings (``workspace_dir`` for the demo tools, ``model``).
    """
    review = HumanInTheLoopMiddleware(
        interrupt_on={
            "write_file": {"allowed_decisions": ["approve", "edit", "reject", "respond"]},
            "execute_sql": {
                "allowed_decisions": ["approve", "reject"],
                "description": "🚨 SQL execution requires DBA approval",
            },
            "ask_user": {"allowed_decisions": ["respond"]},
            "read_data": False,  # runs without review
        },
    )
    return create_agent(
        load_model(settings.model),
        tools=make_tools(settings),
        system_prompt=SYSTEM_PROMPT,
        middleware=[LogToolCalls(), review],
    )

"""Way 2 of bringing an agent: the compiled graph you built with ``create_agent``.

Run it with ``AGENT=examples.compiled_graph_agent:make_graph
POLICY=examples/compiled_graph_policy.yml`` (from the repository root, or with this
module installed where the worker can import it). ``AGENT`` names a factory taking the
worker's settings here; it may also name a compiled graph itself, or a factory taking no
arguments.

It is way 1's agent (``examples/tools_agent.py``, the same tools) built by you: your
model, your system prompt, your own middleware, and your ``HumanInTheLoopMiddleware``,
which now decides which calls wait for a person, with which buttons and description.
The worker gives the graph its checkpointer (compile it without one) and reads the
gating from it; the policy says only how gated calls are reviewed in Slack (channels,
approvers, quorum, time limits), and a policy entry for a tool your middleware does not
gate is refused at start.

``MODEL`` (``scripted`` offline, or ``provider:model`` such as ``openai:gpt-4.1``) is read
here, by the factory, from the settings it is given: the worker uses neither ``MODEL``
nor ``SYSTEM_PROMPT`` for a compiled graph (``SYSTEM_PROMPT`` is refused: the graph has
its own prompt).
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
from agent_bridge.settings import WorkerConfig
from examples.tools_agent import describe, external_recipient, make_tools

logger = logging.getLogger(__name__)

SYSTEM_PROMPT = "You are the office assistant. Keep emails short and polite."


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
        settings: The worker's settings (``workspace_dir`` for the outbox, ``model``).
    """
    interrupt_on: dict[str, Any] = {
        "send_email": {
            "allowed_decisions": ["approve", "edit", "reject"],
            "description": describe,
            "when": external_recipient,  # mail inside the company goes out unreviewed
        },
    }
    return create_agent(
        load_model(settings.model),
        tools=make_tools(settings),
        system_prompt=SYSTEM_PROMPT,
        middleware=[LogToolCalls(), HumanInTheLoopMiddleware(interrupt_on=interrupt_on)],
    )

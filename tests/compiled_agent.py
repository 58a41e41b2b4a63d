"""A compiled graph as the agent, built the way an engineer builds theirs.

Used as ``AGENT=tests.compiled_agent:graph`` (batched), ``...:per_call_graph`` or
``...:sub_agent_graph`` (the batched agent as a subgraph node) with
``tests/fixtures/graph_policy.yml``: ``create_agent`` with its own model (the scripted
one, recording the system prompt it is given), its own system prompt, its own extra
middleware (``StampResults``, which marks every tool result) and its own
``HumanInTheLoopMiddleware`` configuration (``send_email``: approve or reject only).
``sent`` counts the real executions of ``send_email`` by subject, so a call run twice,
or a rejected call run, shows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, HumanInTheLoopMiddleware
from langchain.agents.middleware.types import ToolCallRequest
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import Command

from agent_bridge.graph_agent import CompiledGraph
from agent_bridge.models import MiddlewareMode
from agent_bridge.scripted_model import ScriptedChatModel

SYSTEM_PROMPT = "You are the billing agent. Email customers only about their invoices."
STAMP = " [checked by StampResults]"
EMAIL_DESCRIPTION = "📧 This email leaves the company"

sent: Counter[str] = Counter()
"""Real executions of ``send_email``, by subject."""
prompts: dict[str, str] = {}
"""Task text -> the system prompt the model was given with it."""


@tool
def send_email(to: str, subject: str) -> str:
    """Send an email about an invoice."""
    sent[subject] += 1
    return f"Sent {subject!r} to {to}"


@tool
def lookup_customer(name: str) -> str:
    """Find a customer's email address."""
    return f"{name.lower()}@example.com"


class PromptRecordingModel(ScriptedChatModel):
    """The scripted model, recording the system prompt of each task it is given."""

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        task = next((m for m in messages if isinstance(m, HumanMessage)), None)
        system = next((m for m in messages if isinstance(m, SystemMessage)), None)
        if task is not None:
            prompts[str(task.content)] = str(system.content) if system else ""
        return super()._generate(messages, stop, run_manager, **kwargs)


class StampResults(AgentMiddleware):
    """The engineer's own middleware: appends ``STAMP`` to every tool result."""

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Run the call, then stamp its result."""
        return _stamped(handler(request))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Run the call, then stamp its result."""
        return _stamped(await handler(request))


def _stamped(result: ToolMessage | Command[Any]) -> ToolMessage | Command[Any]:
    if isinstance(result, ToolMessage):
        return result.model_copy(update={"content": f"{result.content}{STAMP}"})
    return result


def make_graph(mode: MiddlewareMode = "batched") -> CompiledGraph:
    """The engineer's agent, compiled without a checkpointer (the worker gives it one)."""
    gating = HumanInTheLoopMiddleware(
        interrupt_on={
            "send_email": {
                "allowed_decisions": ["approve", "reject"],
                "description": EMAIL_DESCRIPTION,
            },
            "lookup_customer": False,
        },
        interrupt_mode=mode,
    )
    return create_agent(
        PromptRecordingModel(),
        tools=[send_email, lookup_customer],
        system_prompt=SYSTEM_PROMPT,
        middleware=[StampResults(), gating],
    )


def with_sub_agent() -> CompiledGraph:
    """A hand-built graph whose one node is the agent: a sub-agent, a subgraph."""
    builder = StateGraph(MessagesState)
    builder.add_node("billing", make_graph())
    builder.add_edge(START, "billing")
    return builder.compile()


graph = make_graph()
per_call_graph = make_graph("per_call")
sub_agent_graph = with_sub_agent()

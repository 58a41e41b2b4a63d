"""The agent factory: ``create_agent`` + ``HumanInTheLoopMiddleware`` from a policy.

Engineers bring their own tools (``AGENT``), model (``MODEL``) and policy (``POLICY``);
this module assembles them into a compiled LangGraph graph with a checkpointer, as the
LangChain HITL documentation does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver

from agent_bridge.errors import ConfigurationError
from agent_bridge.imports import import_object
from agent_bridge.policy import Policy
from agent_bridge.scripted_model import ScriptedChatModel
from agent_bridge.settings import WorkerConfig

SCRIPTED_MODEL = "scripted"


def load_model(name: str) -> BaseChatModel:
    """Return the chat model for ``MODEL``.

    Args:
        name: ``scripted`` for the offline model, else ``provider:model`` for
            ``langchain.chat_models.init_chat_model``.

    Raises:
        ConfigurationError: If ``init_chat_model`` cannot build it (unknown provider,
            missing integration package).
    """
    if name == SCRIPTED_MODEL:
        return ScriptedChatModel()
    try:
        return init_chat_model(name)
    except (ImportError, ValueError) as exc:
        raise ConfigurationError(f"MODEL={name!r}: {exc}") from exc


def load_tools(settings: WorkerConfig) -> list[BaseTool]:
    """Return the tools named by ``AGENT`` (a list of tools or ``(settings) -> tools``).

    Raises:
        ConfigurationError: If the reference is wrong or does not give tools.
    """
    target = import_object(settings.agent)
    tools = target(settings) if callable(target) and not isinstance(target, BaseTool) else target
    if not isinstance(tools, Sequence) or not all(isinstance(t, BaseTool) for t in tools):
        raise ConfigurationError(
            f"AGENT={settings.agent!r} must be a list of LangChain tools or a callable "
            "taking the worker's settings (a WorkerConfig) and returning one."
        )
    return list(tools)


def build_agent(
    *,
    tools: Sequence[BaseTool],
    model: BaseChatModel,
    policy: Policy,
    checkpointer: BaseCheckpointSaver[Any] | None,
    system_prompt: str | None = None,
) -> Any:
    """Return the compiled agent graph.

    Args:
        tools: The agent's tools.
        model: Its chat model.
        policy: Which tools are gated and how (``HumanInTheLoopMiddleware`` options).
        checkpointer: Where each ``thread_id``'s state is saved between interrupts;
            ``None`` for a graph LangGraph Agent Server serves (it keeps the checkpoints).
        system_prompt: Optional system prompt.

    Returns:
        A compiled LangGraph graph (``ainvoke``/``astream``/``aget_state``).

    Raises:
        ConfigurationError: If the policy gates a tool the agent does not have, or its
            ``sql`` names an argument the tool does not take.
    """
    names = {t.name for t in tools}
    unknown = sorted(n for n in policy.tools if policy.gated(n) and n not in names)
    if unknown:
        raise ConfigurationError(
            f"The policy gates {', '.join(unknown)}, which the agent does not have "
            f"(its tools: {', '.join(sorted(names))})."
        )
    for tool in tools:
        tool_policy = policy.gated(tool.name)
        if tool_policy and tool_policy.sql and tool_policy.sql.argument not in tool.args:
            raise ConfigurationError(
                f"tools.{tool.name}.sql.argument is {tool_policy.sql.argument!r}, but "
                f"{tool.name} takes {', '.join(sorted(tool.args)) or 'no arguments'}: name "
                "the argument that holds the statement."
            )
    middleware = HumanInTheLoopMiddleware(**policy.middleware_kwargs())
    return create_agent(
        model,
        tools=list(tools),
        middleware=[middleware],
        checkpointer=checkpointer,
        system_prompt=system_prompt,
    )

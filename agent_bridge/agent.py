"""The agent a worker runs, from ``AGENT``: a list of tools, or a compiled graph.

Engineers bring their own tools (``AGENT``), model (``MODEL``), system prompt
(``SYSTEM_PROMPT`` or the policy's) and policy (``POLICY``); this module assembles them
into a compiled LangGraph graph with ``create_agent`` + ``HumanInTheLoopMiddleware`` and
a checkpointer, as the LangChain HITL documentation does. Or they bring the compiled
graph itself (their model, prompt and middleware); it then gets the worker's
checkpointer and gates with its own middleware (``agent_bridge.graph_agent``). Or the
agent is deployed on LangGraph Agent Server (``AGENT_URL``, ``deployed_agent``).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, cast

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.pregel import Pregel

from agent_bridge.arguments import tool_args_schema
from agent_bridge.errors import ConfigurationError
from agent_bridge.graph import AgentGraph
from agent_bridge.graph_agent import CompiledGraph, attach_checkpointer, check_runnable, discover
from agent_bridge.graph_policy import policy_for_graph
from agent_bridge.imports import import_object
from agent_bridge.policy import Policy
from agent_bridge.remote_agent import RemoteAgent, open_client
from agent_bridge.scripted_model import ScriptedChatModel
from agent_bridge.settings import DEMO_TOOLS, WorkerConfig
from agent_bridge.when_rules import WhenRules

logger = logging.getLogger(__name__)

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


AgentSource: TypeAlias = list[BaseTool] | CompiledGraph
"""What ``AGENT`` names: a list of tools (the worker builds the agent) or a compiled graph."""


def load_agent(settings: WorkerConfig) -> AgentSource:
    """Return what ``AGENT`` names: a list of tools, a compiled LangGraph graph, or a
    callable returning either: called with the worker's settings (a ``WorkerConfig``) if
    it has a parameter without a default, else with no arguments.

    Raises:
        ConfigurationError: If the reference is wrong or gives neither.
    """
    target = import_object(settings.agent)
    if callable(target) and not isinstance(target, BaseTool | Pregel):
        target = _call_factory(target, settings)
    if isinstance(target, Pregel):
        return target
    if not isinstance(target, Sequence) or not all(isinstance(t, BaseTool) for t in target):
        raise ConfigurationError(
            f"AGENT={settings.agent!r} must be a list of LangChain tools, a compiled "
            "LangGraph graph (create_agent(...)), or a callable taking the worker's settings "
            "(a WorkerConfig), or nothing, and returning one of them."
        )
    return list(target)


def _call_factory(factory: Any, settings: WorkerConfig) -> Any:
    """Call ``AGENT``'s callable with the settings if it takes an argument, else with none.

    Raises:
        ConfigurationError: If it can be called neither way (the message shows its
            signature), or it raised (the message names the exception; the traceback
            is logged at DEBUG).
    """
    signature = inspect.signature(factory)
    arguments: tuple[Any, ...] = ()
    try:
        signature.bind()
    except TypeError:
        arguments = (settings,)
    try:
        signature.bind(*arguments)
    except TypeError:
        raise ConfigurationError(
            f"AGENT={settings.agent} takes {_parameters(signature)}: it must take the "
            "worker's settings (one positional argument, a WorkerConfig) or nothing."
        ) from None
    try:
        return factory(*arguments)
    except Exception as exc:
        logger.debug("AGENT=%s raised", settings.agent, exc_info=True)
        raise ConfigurationError(
            f"AGENT={settings.agent} raised {type(exc).__name__}: {exc} "
            "(--log-level DEBUG shows where)"
        ) from exc


def _parameters(signature: inspect.Signature) -> str:
    """``signature``'s parameters as written, without annotations: ``(*, settings)``."""
    bare = [p.replace(annotation=p.empty) for p in signature.parameters.values()]
    return str(signature.replace(parameters=bare, return_annotation=signature.empty))


def load_tools(settings: WorkerConfig) -> list[BaseTool]:
    """Return the list of tools ``AGENT`` names (``load_agent``), for callers that build
    the agent themselves (``build_agent``).

    Raises:
        ConfigurationError: If ``AGENT`` names no tools, or a compiled graph.
    """
    source = load_agent(settings)
    if isinstance(source, Pregel):
        raise ConfigurationError(
            f"AGENT={settings.agent} is a compiled graph; a list of tools is needed here."
        )
    return source


@dataclass(frozen=True)
class WorkerAgent:
    """The agent a worker drives, whichever way it was brought.

    Attributes:
        graph: The compiled graph, saving its ``thread_id``s with the worker's checkpointer.
        policy: The policy in force: as loaded for a list of tools; for a compiled graph,
            its Slack-side rules with the graph's gating (``graph_policy.policy_for_graph``).
        args_schemas: Tool name -> JSON schema of its arguments.
        when_rules: The ``when`` predicates of the graph's middleware (``GraphShape.when``),
            its tools and store; none for a deployed agent, which the Agent Server gates.
    """

    graph: AgentGraph
    policy: Policy
    args_schemas: dict[str, dict[str, Any]]
    when_rules: WhenRules = field(default_factory=WhenRules)


def assemble_agent(
    *,
    settings: WorkerConfig,
    policy: Policy,
    checkpointer: BaseCheckpointSaver[Any],
    model: BaseChatModel | None = None,
) -> WorkerAgent:
    """Return the agent ``AGENT`` names, ready to run on ``checkpointer``.

    A list of tools is built into an agent (``build_agent``) with ``MODEL``'s model (or
    ``model``) and the system prompt of ``SYSTEM_PROMPT`` or of the policy. A compiled
    graph keeps its own model, prompt and middleware, and gets the checkpointer
    (``graph_agent.attach_checkpointer``). With ``AGENT_URL``, the agent deployed there
    (``deployed_agent``); ``checkpointer`` is not used.

    Raises:
        ConfigurationError: If the agent cannot be loaded or built; if both
            ``SYSTEM_PROMPT`` and the policy's ``system_prompt`` are set (neither wins
            quietly); for a compiled graph, if either is set or ``model`` is given (the
            graph has its own), or the graph or the policy is refused
            (``graph_agent``, ``graph_policy``; with ``POLICY`` unset the message says the
            demo policy was used); if ``MODEL`` is set while ``AGENT`` names a compiled
            graph itself (not a factory, which may read it), since it would be ignored.
    """
    if settings.agent_url:
        if settings.step_timeout_s is not None:
            raise ConfigurationError(
                "STEP_TIMEOUT_S is set, but AGENT_URL is too: the Agent Server runs that "
                "graph, and bounds its steps itself. Unset STEP_TIMEOUT_S."
            )
        return deployed_agent(settings=settings, policy=policy, model=model)
    source = load_agent(settings)
    if isinstance(source, Pregel):
        default_model = WorkerConfig.model_fields["model"].default
        if settings.model != default_model and isinstance(import_object(settings.agent), Pregel):
            raise ConfigurationError(
                f"MODEL={settings.model} is set, but AGENT={settings.agent} is a compiled "
                "graph, which has its own model: unset MODEL, or name a factory that builds "
                "the graph with settings.model (examples/compiled_graph_agent.py:make_graph)."
            )
        if settings.system_prompt is not None or model is not None:
            given = "SYSTEM_PROMPT is set" if model is None else "a chat model was given"
            raise ConfigurationError(
                f"{given}, but AGENT={settings.agent} is a compiled graph, which has its own "
                "model and system prompt (create_agent(model, system_prompt=...)): unset it."
            )
        check_runnable(source, reference=settings.agent)
        shape = discover(source)
        logger.info(
            "AGENT=%s is a compiled graph: tools %s; gated %s (%s mode)",
            settings.agent,
            ", ".join(sorted(shape.tools)) or "none",
            ", ".join(sorted(shape.gated)) or "none",
            shape.interrupt_mode or "no HumanInTheLoopMiddleware",
        )
        attached = with_step_timeout(
            attach_checkpointer(source, checkpointer, reference=settings.agent),
            settings.step_timeout_s,
            reference=settings.agent,
        )
        try:
            applied = policy_for_graph(policy, shape)
        except ConfigurationError as exc:
            if settings.policy is not None:
                raise
            raise ConfigurationError(
                "POLICY is not set, so the demo policy (for the demo's tools) applies to "
                f"AGENT={settings.agent}: set POLICY to your policy file (a file holding "
                f"only 'tools: {{}}' gives every gated tool the default rules). {exc}"
            ) from None
        return WorkerAgent(
            # A compiled graph is an AgentGraph at runtime; mypy cannot match astream's
            # overloads to the Protocol's one signature.
            graph=cast("AgentGraph", attached),
            policy=applied,
            args_schemas=shape.args_schemas,
            when_rules=when_rules_of(attached),
        )
    if settings.system_prompt is not None and policy.system_prompt is not None:
        raise ConfigurationError(
            "SYSTEM_PROMPT and the policy's system_prompt are both set: keep one of them."
        )
    graph = build_agent(
        tools=source,
        model=model or load_model(settings.model),
        policy=policy,
        checkpointer=checkpointer,
        system_prompt=settings.system_prompt or policy.system_prompt,
    )
    return WorkerAgent(
        graph=cast(
            "AgentGraph",
            with_step_timeout(graph, settings.step_timeout_s, reference=settings.agent),
        ),
        policy=policy,
        args_schemas={t.name: tool_args_schema(t) for t in source},
        when_rules=when_rules_of(graph),
    )


def when_rules_of(graph: CompiledGraph) -> WhenRules:
    """The ``when`` predicates of ``graph``'s middleware, its tools and its store: what
    the driver asks before a resume (``when_rules``)."""
    shape = discover(graph)
    return WhenRules(predicates=shape.when, tools=shape.tools, store=graph.store)


def with_step_timeout(
    graph: CompiledGraph, seconds: float | None, *, reference: str
) -> CompiledGraph:
    """``graph``, or a copy of it whose steps may take at most ``seconds``
    (``STEP_TIMEOUT_S``; LangGraph's ``Pregel.step_timeout``).

    Raises:
        ConfigurationError: If ``graph`` (``AGENT``: ``reference``) has a different
            ``step_timeout`` of its own: neither wins quietly.
    """
    if seconds is None or graph.step_timeout == seconds:
        return graph
    if graph.step_timeout is not None:
        raise ConfigurationError(
            f"STEP_TIMEOUT_S={seconds:g} is set, but AGENT={reference} is a graph with "
            f"step_timeout={graph.step_timeout:g} of its own: keep one of them."
        )
    return graph.copy(update={"step_timeout": seconds})


def deployed_agent(
    *, settings: WorkerConfig, policy: Policy, model: BaseChatModel | None = None
) -> WorkerAgent:
    """The assistant ``ASSISTANT_ID`` on the Agent Server at ``AGENT_URL``
    (``agent_bridge.remote_agent``): the server runs it and keeps its checkpoints.

    ``AGENT`` gives what the worker must know of it without running it: a list of tools,
    their argument schemas (edit forms and their checks); the same compiled graph the
    server serves, its schemas and gating, against which the policy is checked as for a
    local graph (``graph_policy.policy_for_graph``).

    Raises:
        ConfigurationError: If ``SYSTEM_PROMPT``, the policy's ``system_prompt`` or a chat
            model is given (the deployed graph has its own), ``AGENT`` is not set (the
            demo tools' schemas would be taken for the deployed graph's; the demo names
            them), or ``AGENT`` cannot be loaded or does not fit the policy.
    """
    if settings.system_prompt is not None or policy.system_prompt is not None or model:
        raise ConfigurationError(
            "AGENT_URL is set: the deployed graph has its own model and system prompt; "
            "unset SYSTEM_PROMPT and the policy's system_prompt."
        )
    if "agent" not in settings.model_fields_set:
        raise ConfigurationError(
            "AGENT_URL is set but AGENT is not: the worker would take the demo tools' "
            "argument schemas and gating for the deployed graph's. Set AGENT to the same "
            "compiled graph the server serves (module:graph, as examples/deployed_graph/ "
            "does) or to its list of tools; for the demo agent the server serves from the "
            f"repository's langgraph.json, AGENT={DEMO_TOOLS}."
        )
    graph = RemoteAgent(
        client=open_client(settings.agent_url or "", api_key=settings.langgraph_api_key),
        assistant_id=settings.assistant_id,
        agent_name=settings.agent_name,
    )
    source = load_agent(settings)
    if isinstance(source, Pregel):
        shape = discover(source)
        return WorkerAgent(
            graph=graph, policy=policy_for_graph(policy, shape), args_schemas=shape.args_schemas
        )
    return WorkerAgent(
        graph=graph, policy=policy, args_schemas={t.name: tool_args_schema(t) for t in source}
    )


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
    policy.check_sql_arguments({t.name: list(t.args) for t in tools})
    middleware = HumanInTheLoopMiddleware(**policy.middleware_kwargs())
    return create_agent(
        model,
        tools=list(tools),
        middleware=[middleware],
        checkpointer=checkpointer,
        system_prompt=system_prompt,
    )

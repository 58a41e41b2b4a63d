"""A compiled graph as the agent (``AGENT`` naming a ``Pregel``): what it has and gates.

An engineer who built their agent with ``create_agent`` (their own model, system prompt,
middleware and ``HumanInTheLoopMiddleware`` configuration) names the compiled graph;
the worker reads from its nodes, and the nodes of its subgraphs, what the product needs:

- its tools and their argument JSON schemas: every ``ToolNode``'s ``tools_by_name``;
- which tools it gates, with which decisions, in which interrupt mode: every
  ``HumanInTheLoopMiddleware`` instance, found as the owner of a node's function
  (``create_agent`` adds one node per middleware hook, named ``<name>.after_model``,
  whose ``RunnableCallable`` holds the middleware's bound method);

and gives the graph the worker's checkpointer the way LangGraph's Agent Server does
(``graph.copy(update={"checkpointer": ...})``). A graph compiled with a checkpointer of
its own is refused: its ``thread_id``s would be saved where no other worker can resume
them, which breaks docs/architecture.md, invariant 3 ("the checkpoint is the truth").

Tools a sub-agent calls from inside a tool (rather than as a subgraph node) are not
seen here: the policy cannot name them, and their calls have no argument schema.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.prebuilt import ToolNode
from langgraph.pregel import Pregel

from agent_bridge.arguments import tool_args_schema
from agent_bridge.errors import ConfigurationError
from agent_bridge.models import MiddlewareDecisionType, MiddlewareMode
from agent_bridge.when_rules import WhenPredicate

CompiledGraph: TypeAlias = Pregel[Any, Any, Any, Any]
"""A compiled LangGraph graph (``create_agent(...)`` or ``StateGraph.compile()``)."""


@dataclass(frozen=True)
class GraphShape:
    """What a compiled graph has and gates, as found in its nodes.

    Attributes:
        tools: Tool name -> tool, from every ``ToolNode`` of the graph and its subgraphs.
        gated: Tool name -> the decisions its ``HumanInTheLoopMiddleware`` allows
            (``interrupt_on[name]["allowed_decisions"]``), for every gated tool.
        interrupt_mode: The middleware's ``interrupt_mode``; ``None`` when the graph
            has no ``HumanInTheLoopMiddleware``.
        when: Tool name -> its ``interrupt_on[name]["when"]`` predicate, for every gated
            tool that has one (``when_rules``: asked again before a resume), but a tool
            two middlewares give unequal predicates (which one a call's interrupt came
            from is not known: the check is left to LangChain's on resume).
    """

    tools: Mapping[str, BaseTool]
    gated: Mapping[str, tuple[MiddlewareDecisionType, ...]]
    interrupt_mode: MiddlewareMode | None
    when: Mapping[str, WhenPredicate] = field(default_factory=dict)

    @property
    def args_schemas(self) -> dict[str, dict[str, Any]]:
        """Tool name -> JSON schema of its arguments (``arguments.tool_args_schema``)."""
        return {name: tool_args_schema(tool) for name, tool in self.tools.items()}


def discover(graph: CompiledGraph) -> GraphShape:
    """Read a compiled graph's tools and gating from its nodes and its subgraphs'.

    Args:
        graph: The user's compiled graph.

    Returns:
        Its ``GraphShape``.

    Raises:
        ConfigurationError: If two parts of the graph disagree where the product keys by
            tool name: one name for two different tools, two ``HumanInTheLoopMiddleware``
            allowing a tool different decisions, or using different interrupt modes; if a
            middleware's ``interrupt_on`` names no tool of the graph (it would gate
            nothing, and the tool meant would run unreviewed); or if one agent has two
            batched middlewares (``_one_batched_middleware_per_agent``).
    """
    tools: dict[str, BaseTool] = {}
    gated: dict[str, tuple[MiddlewareDecisionType, ...]] = {}
    modes: set[MiddlewareMode] = set()
    when: dict[str, WhenPredicate | None] = {}
    unequal: set[str] = set()
    for node in _nodes(graph):
        if isinstance(node, ToolNode):
            for name, tool in node.tools_by_name.items():
                if name in tools and tools[name] is not tool:
                    raise ConfigurationError(
                        f"The graph has two different tools named {name!r}; cards, "
                        "policies and argument schemas are keyed by tool name: rename one."
                    )
                tools[name] = tool
        middleware = _hitl_middleware(node)
        if middleware is None:
            continue
        modes.add(middleware.interrupt_mode)
        for name, config in middleware.interrupt_on.items():
            allowed = tuple(dict.fromkeys(config["allowed_decisions"]))
            if gated.setdefault(name, allowed) != allowed:
                raise ConfigurationError(
                    f"Two HumanInTheLoopMiddleware in the graph gate {name} with different "
                    f"allowed decisions ({', '.join(gated[name])} and {', '.join(allowed)}); "
                    "give it one configuration."
                )
            if when.setdefault(name, config.get("when")) != config.get("when"):
                unequal.add(name)
    if len(modes) > 1:
        raise ConfigurationError(
            "The graph's HumanInTheLoopMiddleware use both interrupt modes "
            f"({', '.join(sorted(modes))}); use one interrupt_mode throughout."
        )
    _one_batched_middleware_per_agent(graph)
    unknown = sorted(set(gated) - set(tools))
    if unknown:
        # The middleware matches calls by name: a misspelt key gates nothing, and the
        # tool the engineer meant runs unreviewed.
        raise ConfigurationError(
            f"The graph's HumanInTheLoopMiddleware interrupt_on names {', '.join(unknown)}, "
            "which no tool of the graph is called "
            f"(its tools: {', '.join(sorted(tools)) or 'none'}): use the tool's name."
        )
    return GraphShape(
        tools=tools,
        gated=gated,
        interrupt_mode=next(iter(modes), None),
        when={
            name: predicate
            for name, predicate in when.items()
            if predicate is not None and name not in unequal
        },
    )


def check_runnable(graph: CompiledGraph, *, reference: str) -> None:
    """Refuse a graph the worker could run only to a wrong end, before any run.

    Args:
        graph: The user's compiled graph.
        reference: ``AGENT``'s value, for the message.

    Raises:
        ConfigurationError: If ``graph`` (or a subgraph) was compiled with static
            breakpoints (``interrupt_before``/``interrupt_after``): they pause the thread
            with no interrupt to show or answer, so the run would look finished with its
            tools never run (LangGraph's docs keep breakpoints for debugging; human input
            is ``interrupt()``). Or if its state, or its input schema, has no
            ``messages``: a run's task is given as ``{"messages": [task]}`` and its answer
            read from the last AI message.
    """
    for each in _graphs(graph):
        for when, nodes in (
            ("interrupt_before", each.interrupt_before_nodes),
            ("interrupt_after", each.interrupt_after_nodes),
        ):
            if nodes:
                shown = nodes if nodes == "*" else list(nodes)
                raise ConfigurationError(
                    f"AGENT={reference} was compiled with {when}={shown!r}: a static "
                    "breakpoint pauses with no interrupt a person can answer from Slack. "
                    f"Compile it without {when}, and gate tools with HumanInTheLoopMiddleware "
                    "or ask with interrupt() in the node."
                )
    if "messages" not in graph.channels:
        raise ConfigurationError(
            f"AGENT={reference} has no 'messages' in its state "
            f"({', '.join(k for k in graph.channels if not k.startswith(('__', 'branch:')))}): "
            'the worker starts a run with {"messages": [the task]} and posts the last AI '
            "message as its answer. Build it on MessagesState (create_agent's state has it)."
        )
    takes = _input_keys(graph)
    if takes is not None and "messages" not in takes:
        raise ConfigurationError(
            f"AGENT={reference} takes no 'messages' as input (its input_schema has "
            f"{', '.join(sorted(takes)) or 'no key'}): LangGraph would drop the run's task, "
            'given as {"messages": [the task]}, and the graph run without it. Add '
            "'messages' to its input_schema, or leave input_schema to the state's."
        )


def _input_keys(graph: CompiledGraph) -> set[str] | None:
    """The keys a ``StateGraph``'s input takes (its ``input_schema``'s, LangGraph's
    ``StateGraph.schemas``), or ``None`` for a graph built otherwise."""
    builder = getattr(graph, "builder", None)
    schema = getattr(builder, "input_schema", None)
    schemas = getattr(builder, "schemas", None)
    if schema is None or not isinstance(schemas, Mapping) or schema not in schemas:
        return None
    return set(schemas[schema])


def attach_checkpointer(
    graph: CompiledGraph, checkpointer: BaseCheckpointSaver[Any], *, reference: str
) -> CompiledGraph:
    """Return a copy of ``graph`` saving its ``thread_id``s with ``checkpointer``.

    Args:
        graph: The user's compiled graph, compiled without a checkpointer.
        checkpointer: The worker's (PostgreSQL in production, shared by every worker).
        reference: ``AGENT``'s value, for the message.

    Raises:
        ConfigurationError: If ``graph`` was compiled with a checkpointer (or
            ``checkpointer=False``) of its own.
    """
    if graph.checkpointer is not None:
        raise ConfigurationError(
            f"AGENT={reference} was compiled with a checkpointer of its own "
            f"({type(graph.checkpointer).__name__}). Compile it without one "
            "(create_agent(..., checkpointer=None), the default): the worker gives it the "
            "shared one, so any worker can resume a paused thread_id from its checkpoint."
        )
    return graph.copy(update={"checkpointer": checkpointer})


def _nodes(graph: CompiledGraph) -> Iterator[Any]:
    """The runnable of every node of ``graph`` and of its subgraphs, at any depth."""
    for each in _graphs(graph):
        for node in each.nodes.values():
            yield node.bound


def _graphs(graph: CompiledGraph) -> list[CompiledGraph]:
    """``graph`` and its subgraphs, at any depth."""
    return [graph, *(g for _, g in graph.get_subgraphs(recurse=True) if isinstance(g, Pregel))]


def _one_batched_middleware_per_agent(graph: CompiledGraph) -> None:
    """Refuse an agent (one compiled graph, ``graph`` or a subgraph) with two batched
    ``HumanInTheLoopMiddleware``: LangChain (1.5) keeps one record of a turn's edits
    in the agent's state (``hitl_edited_tool_calls``), which each of them writes over,
    so a reviewer's edit of one's call would be dropped and the model's own call run.

    Raises:
        ConfigurationError: Naming the middlewares.
    """
    for each in _graphs(graph):
        batched = {
            id(m): m
            for node in each.nodes.values()
            if (m := _hitl_middleware(node.bound)) is not None and m.interrupt_mode == "batched"
        }
        if len(batched) > 1:
            names = ", ".join(sorted(m.name for m in batched.values()))
            raise ConfigurationError(
                f"The agent has {len(batched)} batched HumanInTheLoopMiddleware ({names}): "
                "LangChain keeps one record of a turn's edits, which each writes over, so "
                "an edit of one's call would be dropped and the model's own call run. Give "
                "one middleware every tool's interrupt_on, or use interrupt_mode: per_call."
            )


def _hitl_middleware(node: Any) -> HumanInTheLoopMiddleware | None:
    """The ``HumanInTheLoopMiddleware`` whose hook ``node`` runs, if it is one's."""
    for function in (getattr(node, "func", None), getattr(node, "afunc", None)):
        owner = getattr(function, "__self__", None)
        if isinstance(owner, HumanInTheLoopMiddleware):
            return owner
    return None

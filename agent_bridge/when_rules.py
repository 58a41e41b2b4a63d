"""Whether the running ``HumanInTheLoopMiddleware`` still asks about a call: its ``when``.

LangChain calls a gated tool's ``when`` predicate again when the run resumes (batched: in
``after_model``; per call: in ``wrap_tool_call``), and "if it returns ``False`` on resume,
the reviewer's answer is skipped and the tool runs, even if they rejected it"
(``langchain.agents.middleware.InterruptOnConfig.when``). A deploy that adds or changes a
tool's predicate while its call waits would so run a call a person rejected. The driver
asks the running predicate first, as the middleware will (``Placement.decisions_now``),
and does not resume a call it would let through.

What this cannot see: a predicate whose answer changes between this check and the
middleware's own (one reading the clock, or anything outside the request), which
LangChain's documentation forbids; a deployed graph's (the Agent Server's); a sub-agent's
run inside a tool (its middleware is not the graph's).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from langchain.agents.middleware.types import ToolCallRequest
from langchain_core.messages import ToolCall
from langchain_core.tools import BaseTool
from langgraph.prebuilt.tool_node import ToolRuntime
from langgraph.runtime import ExecutionInfo
from langgraph.store.base import BaseStore

from agent_bridge.models import InterruptMode

logger = logging.getLogger(__name__)

WhenPredicate: TypeAlias = Callable[[ToolCallRequest], bool]
"""A gated tool's ``when``: ``True`` to ask a person about the call, ``False`` to run it."""


@dataclass(frozen=True)
class RaisedIn:
    """The node that raised an interrupt, as LangChain describes it to a ``when`` rule.

    Attributes:
        values: The state of the node's graph at the interrupt (its checkpoint's values;
            a sub-agent's own for a sub-agent node).
        config: That state's ``RunnableConfig`` (``thread_id``, ``checkpoint_ns``,
            ``checkpoint_id``).
        execution: The node's ``ExecutionInfo`` (thread, checkpoint, task), if known.
    """

    values: Mapping[str, Any]
    config: Mapping[str, Any] = field(default_factory=dict)
    execution: ExecutionInfo | None = None


@dataclass(frozen=True)
class WhenRules:
    """The ``when`` predicates of the middleware a worker runs, and what LangChain hands
    them.

    Attributes:
        predicates: Tool name -> its ``interrupt_on[name]["when"]``
            (``graph_agent.GraphShape.when``), for gated tools that have one.
        tools: Tool name -> tool: a per-call predicate gets the call's tool.
        store: The graph's store (``Pregel.store``), in the predicate's ``ToolRuntime``.
    """

    predicates: Mapping[str, WhenPredicate] = field(default_factory=dict)
    tools: Mapping[str, BaseTool] = field(default_factory=dict)
    store: BaseStore | None = None

    def asks_about(
        self,
        call: Mapping[str, Any],
        *,
        mode: InterruptMode,
        raised: RaisedIn,
    ) -> bool | None:
        """Whether the middleware, asking the tool's predicate on resume, will ask about
        ``call`` again (so that it takes the decision given for it).

        The ``ToolCallRequest`` is built as LangChain builds it: the call, the state of
        the graph that raised the interrupt, a ``ToolRuntime`` with its config, the node's
        ``ExecutionInfo``, the graph's store and no ``context`` (the worker runs its graph
        with none); ``tool`` is ``None`` for a batched call (``after_model``) and the tool
        for a per-call one (``wrap_tool_call``, whose runtime lists the tools too).

        Args:
            call: The tool call (``name``, ``args``, ``id``) the interrupt is about.
            mode: The interrupt's: ``batched`` or ``per_call``.
            raised: Where the interrupt was raised.

        Returns:
            ``True`` for a tool without a predicate; ``None`` when the predicate raised
            here (logged): not known, so the middleware's own call of it decides, as it
            did before this check, and a predicate reading what this request lacks does
            not stop every run it gates.
        """
        when = self.predicates.get(call["name"])
        if when is None:
            return True
        tool_call = ToolCall(name=call["name"], args=dict(call["args"]), id=call.get("id"))
        values = dict(raised.values)
        per_call = mode == "per_call"
        runtime = ToolRuntime(
            state=values,
            context=None,
            config=dict(raised.config),  # type: ignore[arg-type]
            stream_writer=lambda _chunk: None,
            tool_call_id=tool_call["id"],
            store=self.store,
            tools=list(self.tools.values()) if per_call else [],
            execution_info=raised.execution,
        )
        request = ToolCallRequest(
            tool_call=tool_call,
            tool=self.tools.get(call["name"]) if per_call else None,
            state=values,
            runtime=runtime,
        )
        try:
            return bool(when(request))
        except Exception as exc:  # the exception's text may repeat the call's arguments
            logger.warning(
                "when rule of %s raised %s when checked before a resume; the middleware's "
                "own check on resume decides",
                call["name"],
                type(exc).__name__,
            )
            return None

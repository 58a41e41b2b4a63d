"""A wrapper around the agent graph that intercepts resumes, for fault tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from langgraph.types import Command

from agent_bridge.graph import AgentGraph


class ResumeInterceptor:
    """Delegates to the agent graph; a resume (``Command``) goes to ``on_resume`` instead.

    Satisfies ``agent_bridge.graph.AgentGraph``, so it can stand in for the graph a
    ``RunDriver`` drives.

    Args:
        graph: The compiled agent graph.
        on_resume: Gets the ``Command``; returns the async iterator ``astream`` returns.
    """

    def __init__(
        self, graph: AgentGraph, on_resume: Callable[[Command[Any]], AsyncIterator[Any]]
    ) -> None:
        self.graph = graph
        self.on_resume = on_resume

    async def aget_state(self, config: Any, *, subgraphs: bool = False) -> Any:
        return await self.graph.aget_state(config, subgraphs=subgraphs)

    def astream(self, input: Any, config: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
        if isinstance(input, Command):
            return self.on_resume(input)
        return self.graph.astream(input, config, **kwargs)

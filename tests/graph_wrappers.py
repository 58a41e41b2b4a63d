"""A wrapper around the agent graph that intercepts resumes, for fault tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.types import Command


class ResumeInterceptor:
    """Delegates to the agent graph; a resume (``Command``) goes to ``on_resume`` instead.

    Args:
        graph: The compiled agent graph.
        on_resume: Gets the ``Command``; returns the async iterator ``astream`` returns.
    """

    def __init__(self, graph: Any, on_resume: Callable[[Command[Any]], Any]) -> None:
        self.graph = graph
        self.on_resume = on_resume

    async def aget_state(self, config: Any) -> Any:
        return await self.graph.aget_state(config)

    def astream(self, graph_input: Any, config: Any, **kwargs: Any) -> Any:
        if isinstance(graph_input, Command):
            return self.on_resume(graph_input)
        return self.graph.astream(graph_input, config, **kwargs)

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


class ResumeStreamTap:
    """Delegates to the agent graph; ``on_first_chunk`` is called when a resume's stream
    yields its first chunk (the run exists and is going: on LangGraph Agent Server it
    goes on whatever the caller does next).

    Satisfies ``agent_bridge.graph.AgentGraph``.

    Args:
        graph: The agent graph (e.g. ``agent_bridge.remote_agent.RemoteAgent``).
        on_first_chunk: Called once per resume, before its first chunk is handed on.
    """

    def __init__(self, graph: AgentGraph, on_first_chunk: Callable[[], None]) -> None:
        self.graph = graph
        self.on_first_chunk = on_first_chunk

    async def aget_state(self, config: Any, *, subgraphs: bool = False) -> Any:
        return await self.graph.aget_state(config, subgraphs=subgraphs)

    async def astream(self, input: Any, config: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
        first = isinstance(input, Command)
        async for chunk in self.graph.astream(input, config, **kwargs):
            if first:
                first = False
                self.on_first_chunk()
            yield chunk

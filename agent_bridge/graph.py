"""What the run driver calls on an agent graph: a small Protocol, not ``Any``.

A compiled LangGraph graph (``create_agent(...)`` with a checkpointer) satisfies it, and
so does ``agent_bridge.remote_agent.RemoteAgent`` for one deployed on LangGraph Agent
Server. The driver needs only the ``thread_id``'s saved state and a streamed step.
``PausedThreads`` is what the worker's sweep asks a deployed agent: which of its threads
wait on interrupts (a run that no worker streamed may have paused them).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol


class AgentGraph(Protocol):
    """The two calls of ``langgraph.graph.state.CompiledStateGraph`` the driver makes."""

    async def aget_state(self, config: Any, *, subgraphs: bool = False) -> Any:
        """Return the ``thread_id``'s ``StateSnapshot`` (``values``, ``next``, ``tasks``,
        ``interrupts``) for ``config = {"configurable": {"thread_id": ...}}``."""
        ...

    def astream(self, input: Any, config: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
        """Run the graph from ``input`` (a dict, ``Command(resume=...)`` or ``None`` to
        continue from the checkpoint), yielding chunks of ``stream_mode``."""
        ...


def thread_config(thread_id: str) -> dict[str, Any]:
    """The LangGraph config naming ``thread_id``."""
    return {"configurable": {"thread_id": thread_id}}


@dataclass(frozen=True)
class PausedThread:
    """A ``thread_id`` waiting on interrupts, and their IDs."""

    thread_id: str
    interrupt_ids: frozenset[str]


class PausedThreads(Protocol):
    """Where the agent's threads live when it is deployed (LangGraph Agent Server)."""

    async def paused_threads(self, *, limit: int) -> list[PausedThread]:
        """The agent's threads waiting on interrupts, most recently changed first, at
        most ``limit``.

        Raises:
            AgentServerUnavailableError: The server is unreachable or failed.
        """
        ...

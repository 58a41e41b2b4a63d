"""What the run driver calls on an agent graph: a small Protocol, not ``Any``.

A compiled LangGraph graph (``create_agent(...)`` with a checkpointer) satisfies it, and
so would LangGraph's ``RemoteGraph`` for a deployed one. The driver needs only the
``thread_id``'s saved state and a streamed step.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
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

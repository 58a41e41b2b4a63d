"""An agent deployed on LangGraph Agent Server, driven through ``langgraph-sdk`` (``AGENT_URL``).

``RemoteAgent`` satisfies ``agent_bridge.graph.AgentGraph``, so ``RunDriver`` drives a
deployed graph exactly as a local one. It is LangGraph's own ``RemoteGraph`` (state reads
with ``threads.get_state``, runs with ``runs.stream(..., command={"resume": ...})``) plus
what exactly-once needs on a server (docs/architecture.md, invariant 3):

- the run's ``thread_id`` is created on the server before its state is read;
- server runs of the ``thread_id`` still in flight (``pending`` or ``running``: a worker
  that died mid-stream leaves its server run going, ``on_disconnect="continue"``) are
  joined before the state is read, so an interrupt a resume is consuming right now never
  looks pending;
- every server run is created with ``multitask_strategy="reject"``: the server refuses a
  second concurrent one on the thread (409), so a resume is never sent beside another.

The server's JSON is turned into what the driver reads in one place (``local_messages``):
message dicts into ``langchain_core`` messages; ``RemoteGraph`` already makes interrupts
``langgraph.types.Interrupt``. Transport failures, 5xx and 409 are
``AgentServerUnavailableError`` (the worker retries the run later); an answer the graph
refused is a ``ValidationError`` (the request is reopened, invariant 4), as locally; any
other error of the graph (``RemoteException``) fails the run, as a local one does.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx
from langchain_core.messages import BaseMessage, messages_from_dict
from langgraph.pregel.remote import RemoteException, RemoteGraph
from langgraph.types import StateSnapshot
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import (
    APIConnectionError,
    APIStatusError,
    AuthenticationError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
)
from langgraph_sdk.schema import RunStatus, Thread
from pydantic import ValidationError

from agent_bridge.errors import AgentServerUnavailableError, ConfigurationError
from agent_bridge.graph import PausedThread

logger = logging.getLogger(__name__)

IN_FLIGHT: tuple[RunStatus, ...] = ("pending", "running")
"""Server run statuses of a run not finished yet (``langgraph_sdk.schema.RunStatus``)."""
REFUSED_TITLE = "answer refused by the Agent Server's graph"
"""The title of the ``ValidationError`` a refused resume is raised as."""
THREAD_METADATA_KEY = "agent_bridge_agent"
"""Metadata key naming, on each server thread a worker drives, the agent it belongs to
(``PausedThreads`` searches by it)."""


class RemoteAgent:
    """The ``AgentGraph`` (and ``PausedThreads``) of an assistant on LangGraph Agent Server.

    Args:
        client: The ``langgraph-sdk`` client of the server (``open_client``).
        assistant_id: The assistant, or a graph name of the server's ``langgraph.json``.
        agent_name: The worker's agent, kept in each thread's metadata.
    """

    def __init__(self, *, client: LangGraphClient, assistant_id: str, agent_name: str) -> None:
        self.client = client
        self.assistant_id = assistant_id
        self.agent_name = agent_name
        self.graph = RemoteGraph(assistant_id, client=client)

    async def check(self) -> None:
        """Make sure the server serves ``assistant_id`` (a graph name of its
        ``langgraph.json`` or an assistant's UUID) to this client: asked once at the
        worker's start, so a wrong setting is said then, not by every run failing.

        Raises:
            ConfigurationError: The server refused ``LANGGRAPH_API_KEY`` (401, 403), or
                has no such assistant or graph at ``AGENT_URL`` (404: a wrong
                ``ASSISTANT_ID``, or a path after the server's base URL); the message
                names the setting and keeps the server's reason (its list of graphs).
            AgentServerUnavailableError: The server is unreachable or failed.
        """
        try:
            if _is_uuid(self.assistant_id):
                await self.client.assistants.get(self.assistant_id)
                return
            if await self.client.assistants.search(graph_id=self.assistant_id, limit=1):
                return
            reason = "no assistant of that graph"
        except NotFoundError as exc:
            reason = _reason(exc)
        except (AuthenticationError, PermissionDeniedError) as exc:
            raise ConfigurationError(
                f"the Agent Server at AGENT_URL answered {exc.status_code}: LANGGRAPH_API_KEY "
                "is missing or refused; set it to an API key of the deployment."
            ) from None
        except (httpx.TransportError, APIConnectionError, APIStatusError) as exc:
            raise _translated(exc, "") from exc
        raise ConfigurationError(
            f"ASSISTANT_ID={self.assistant_id!r} is not on the Agent Server at AGENT_URL "
            f"({reason}): set ASSISTANT_ID to a graph name of its langgraph.json or an "
            "assistant's ID, and AGENT_URL to the server's base URL (nothing after its "
            "host and port)."
        )

    async def aget_state(self, config: Any, *, subgraphs: bool = False) -> Any:
        """The ``thread_id``'s ``StateSnapshot`` once no run of it is in flight, its
        messages as ``langchain_core`` messages; the thread is created on the server if
        it has none yet (a new run).

        Raises:
            AgentServerUnavailableError: The server is unreachable or failed.
        """
        thread_id = str(config["configurable"]["thread_id"])
        try:
            thread = await self._ensure_thread(thread_id)
            joined = await self.join_in_flight(thread_id)
            if not joined and not thread.get("values"):  # nothing has run on it yet
                return _empty_snapshot(config)
            snapshot = await self.graph.aget_state(config, subgraphs=subgraphs)
        except (httpx.TransportError, APIConnectionError, APIStatusError) as exc:
            raise _translated(exc, thread_id) from exc
        return _local_snapshot(snapshot)

    async def astream(self, input: Any, config: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
        """Create a run of the ``thread_id`` on the server from ``input`` (a task, a
        ``Command(resume=...)`` or ``None``) and yield its chunks, messages converted.
        The run is refused if another of the thread is in flight (``reject``) and keeps
        going if this worker goes away (``continue``: a restarted worker joins it).

        Raises:
            AgentServerUnavailableError: The server is unreachable, failed, or refused the
                run because another is in flight.
            ValidationError: The server's graph refused a resume's answer (it failed
                with LangGraph's ``ValidationError`` before saving anything: the
                interrupt is still pending), as a local graph raises it.
            RemoteException: The graph failed on the server.
        """
        thread_id = str((config or {}).get("configurable", {}).get("thread_id", ""))
        stream = self.graph.astream(
            input, config, multitask_strategy="reject", on_disconnect="continue", **kwargs
        )
        try:
            async for chunk in stream:
                yield _local_chunk(chunk)
        except (httpx.TransportError, APIConnectionError, APIStatusError) as exc:
            raise _translated(exc, thread_id) from exc
        except RemoteException as exc:
            if _refused_answer(exc):
                # As a local graph does: LangGraph checked the answer against the
                # interrupt's response_schema and saved nothing; the driver reopens the
                # request (its details stay out: the server's message repeats the answer).
                raise ValidationError.from_exception_data(REFUSED_TITLE, []) from None
            raise

    async def join_in_flight(self, thread_id: str) -> int:
        """Wait for every run of ``thread_id`` that is pending or running to end;
        return how many there were."""
        joined = 0
        for status in IN_FLIGHT:
            for run in await self.client.runs.list(thread_id, status=status):
                logger.info(
                    "thread_id=%s joining server run %s (%s) before reading the state",
                    thread_id,
                    run["run_id"],
                    status,
                )
                await self.client.runs.join(thread_id, run["run_id"])
                joined += 1
        return joined

    async def paused_threads(self, *, limit: int) -> list[PausedThread]:
        """This agent's server threads waiting on interrupts, most recently changed
        first, at most ``limit`` (the worker's sweep: a thread paused by a run that no
        worker streamed, e.g. one the engineer's own app started on an attached thread).

        Raises:
            AgentServerUnavailableError: The server is unreachable or failed.
        """
        try:
            threads = await self.client.threads.search(
                metadata={THREAD_METADATA_KEY: self.agent_name},
                status="interrupted",
                sort_by="updated_at",
                sort_order="desc",
                limit=limit,
            )
        except (httpx.TransportError, APIConnectionError, APIStatusError) as exc:
            raise _translated(exc, "") from exc
        return [
            PausedThread(
                thread_id=str(t["thread_id"]),
                interrupt_ids=frozenset(
                    str(i["id"]) for found in (t.get("interrupts") or {}).values() for i in found
                ),
            )
            for t in threads
        ]

    async def _ensure_thread(self, thread_id: str) -> Thread:
        """Create the thread with the run's ``thread_id`` (a thread attached by ID exists
        already: it keeps its own metadata, with this agent's name added); return it."""
        thread = await self.client.threads.create(
            thread_id=thread_id,
            if_exists="do_nothing",
            metadata={THREAD_METADATA_KEY: self.agent_name},
        )
        if (thread.get("metadata") or {}).get(THREAD_METADATA_KEY) != self.agent_name:
            await self.client.threads.update(
                thread_id, metadata={THREAD_METADATA_KEY: self.agent_name}
            )
        return thread


async def thread_exists(url: str, thread_id: str, *, api_key: str | None) -> bool:
    """Whether the Agent Server at ``url`` has the thread ``thread_id``.

    Raises:
        AgentServerUnavailableError: The server is unreachable or failed.
    """
    client = open_client(url, api_key=api_key)
    try:
        await client.threads.get(thread_id)
    except NotFoundError:
        return False
    except (httpx.TransportError, APIConnectionError, APIStatusError) as exc:
        raise _translated(exc, thread_id) from exc
    finally:
        await client.aclose()
    return True


def open_client(url: str, *, api_key: str | None) -> LangGraphClient:
    """The ``langgraph-sdk`` client of the Agent Server at ``url`` (``AGENT_URL``), with
    ``LANGGRAPH_API_KEY`` when set."""
    return get_client(url=url, api_key=api_key)


def _is_uuid(value: str) -> bool:
    """Whether ``value`` is a UUID (an assistant's ID, not a graph name)."""
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def _reason(exc: Exception) -> str:
    """The server's reason in an SDK error: its first line, without the request."""
    return (str(exc).splitlines() or [type(exc).__name__])[0]


def _refused_answer(exc: RemoteException) -> bool:
    """Whether a server run failed because the graph refused the resume's answer
    (LangGraph's check against the interrupt's ``response_schema``)."""
    data = exc.args[0] if exc.args else None
    return isinstance(data, Mapping) and data.get("error") == "ValidationError"


def _empty_snapshot(config: Any) -> StateSnapshot:
    """The state of a ``thread_id`` nothing has run on (what a local checkpointer gives a
    new thread): no values, nothing next, no interrupts."""
    return StateSnapshot(
        values={},
        next=(),
        config=config,
        metadata=None,
        created_at=None,
        parent_config=None,
        tasks=(),
        interrupts=(),
    )


def _translated(exc: Exception, thread_id: str) -> Exception:
    """``exc`` as the worker should see it: retryable (unreachable, 5xx, 409 another run
    in flight) as ``AgentServerUnavailableError``, any other refusal as it is."""
    if isinstance(exc, APIStatusError) and not (
        isinstance(exc, ConflictError) or exc.status_code >= 500
    ):
        return exc
    kind = "another run in flight" if isinstance(exc, ConflictError) else type(exc).__name__
    return AgentServerUnavailableError(f"Agent Server: {kind} (thread_id={thread_id})")


def local_messages(messages: Any) -> list[BaseMessage]:
    """The server's message dicts (``{"type": "ai", "content": ..., ...}``) as
    ``langchain_core`` messages; messages already converted are kept."""
    return [
        m if isinstance(m, BaseMessage) else messages_from_dict([{"type": m["type"], "data": m}])[0]
        for m in messages
    ]


def _local_snapshot(snapshot: Any) -> Any:
    """``snapshot`` with its messages converted (``local_messages``), and those of the
    subgraph states of its tasks (``subgraphs=True``: a sub-agent's turn under review is
    in its own state), so the driver reads every level alike."""
    tasks = tuple(
        task._replace(state=_local_snapshot(task.state))
        if isinstance(getattr(task, "state", None), StateSnapshot)
        else task
        for task in snapshot.tasks
    )
    return snapshot._replace(values=_local_values(snapshot.values), tasks=tasks)


def _local_values(values: Any) -> Any:
    """A state's values with its ``messages`` converted (``local_messages``)."""
    if not isinstance(values, Mapping) or "messages" not in values:
        return values
    return {**values, "messages": local_messages(values["messages"])}


def _local_chunk(chunk: Any) -> Any:
    """One streamed chunk (``version="v2"``: ``{"type", "ns", "data", ...}``; else the
    data itself) with its state's messages converted."""
    if isinstance(chunk, dict) and "type" in chunk and "data" in chunk:
        return {**chunk, "data": _local_values(chunk["data"])}
    return _local_values(chunk)

"""A drive's checkpoint read handed once to its resume (``agent_bridge.checkpoint_reuse``),
on the real PostgreSQL saver and a real LangGraph graph."""

from __future__ import annotations

from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from agent_bridge.backend import Backend
from agent_bridge.checkpoint_reuse import ReusedReads, drive_scope


class Reads(AsyncPostgresSaver):
    """The real saver, counting the latest-checkpoint reads that reach PostgreSQL."""

    reads = 0

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        if not config.get("configurable", {}).get("checkpoint_id"):
            Reads.reads += 1
        return await super().aget_tuple(config)


class Saver(ReusedReads, Reads):
    """``agent_bridge.backend.PostgresSaver``, with ``Reads`` below the reuse."""


class State(TypedDict):
    asked: str
    answer: str


def ask(state: State) -> dict[str, str]:
    return {"answer": str(interrupt({"question": state["asked"]}))}


def graph_on(saver: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=saver)


def saver_of(backend: Backend) -> Saver:
    saver = Saver(conn=backend.checkpointer.conn)  # type: ignore[attr-defined]
    Reads.reads = 0
    return saver


async def paused(graph: Any, thread_id: str) -> RunnableConfig:
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    await graph.ainvoke({"asked": "which table?", "answer": ""}, config)
    return config


async def forget_thread_behind_its_back(backend: Backend, thread_id: str) -> None:
    """Delete the thread's rows in SQL, not through the saver (it cannot know)."""
    for table in ("checkpoint_writes", "checkpoint_blobs", "checkpoints"):
        await backend.db.execute(f"DELETE FROM {table} WHERE thread_id = :t", {"t": thread_id})


async def test_a_drive_resumes_from_the_checkpoint_it_read(pg_backend: Backend) -> None:
    graph = graph_on(saver_of(pg_backend))
    config = await paused(graph, "t-drive")
    Reads.reads = 0
    with drive_scope():
        before = await graph.aget_state(config)
        assert [i.value for i in before.interrupts] == [{"question": "which table?"}]
        await graph.ainvoke(Command(resume="orders"), config)
    in_a_drive = Reads.reads
    assert (await graph.aget_state(config)).values["answer"] == "orders"

    config = await paused(graph, "t-outside")
    Reads.reads = 0
    await graph.aget_state(config)
    await graph.ainvoke(Command(resume="orders"), config)
    assert Reads.reads == in_a_drive + 1  # the resume's own read of the same checkpoint
    assert (await graph.aget_state(config)).values["answer"] == "orders"


async def test_a_read_is_handed_on_once_then_read_again(pg_backend: Backend) -> None:
    saver = saver_of(pg_backend)
    config = await paused(graph_on(saver), "t-once")
    with drive_scope():
        first = await saver.aget_tuple(config)
        await forget_thread_behind_its_back(pg_backend, "t-once")
        handed = await saver.aget_tuple(config)
        again = await saver.aget_tuple(config)
    assert first is not None and handed is not None
    assert handed.checkpoint["id"] == first.checkpoint["id"]
    assert handed.pending_writes == first.pending_writes
    assert again is None  # read from the database, where it is gone


async def test_the_handed_on_checkpoint_is_a_copy(pg_backend: Backend) -> None:
    saver = saver_of(pg_backend)
    config = await paused(graph_on(saver), "t-copy")
    with drive_scope():
        first = await saver.aget_tuple(config)
        assert first is not None
        first.checkpoint["versions_seen"].setdefault("__interrupt__", {})["x"] = "changed"
        first.checkpoint["channel_values"]["asked"] = "changed"
        handed = await saver.aget_tuple(config)
    assert handed is not None
    assert "x" not in handed.checkpoint["versions_seen"].get("__interrupt__", {})
    assert handed.checkpoint["channel_values"]["asked"] == "which table?"


async def test_a_write_forgets_what_was_read(pg_backend: Backend) -> None:
    saver = saver_of(pg_backend)
    config = await paused(graph_on(saver), "t-write")
    with drive_scope():
        first = await saver.aget_tuple(config)
        assert first is not None
        await saver.aput_writes(first.config, [("answer", "late")], task_id="task-1")
        after = await saver.aget_tuple(config)
    assert after is not None
    assert ("task-1", "answer", "late") in (after.pending_writes or [])


async def test_a_deleted_thread_is_not_handed_on(pg_backend: Backend) -> None:
    saver = saver_of(pg_backend)
    config = await paused(graph_on(saver), "t-delete")
    with drive_scope():
        await saver.aget_tuple(config)
        await saver.adelete_thread("t-delete")
        assert await saver.aget_tuple(config) is None


async def test_outside_a_drive_every_read_is_the_databases(pg_backend: Backend) -> None:
    saver = saver_of(pg_backend)
    config = await paused(graph_on(saver), "t-out")
    assert await saver.aget_tuple(config) is not None
    await forget_thread_behind_its_back(pg_backend, "t-out")
    assert await saver.aget_tuple(config) is None


async def test_a_named_checkpoint_is_never_handed_on(pg_backend: Backend) -> None:
    saver = saver_of(pg_backend)
    config = await paused(graph_on(saver), "t-named")
    latest = await saver.aget_tuple(config)
    assert latest is not None
    named: RunnableConfig = {
        "configurable": {
            "thread_id": "t-named",
            "checkpoint_ns": "",
            "checkpoint_id": latest.checkpoint["id"],
        }
    }
    with drive_scope():
        assert await saver.aget_tuple(named) is not None
        await forget_thread_behind_its_back(pg_backend, "t-named")
        assert await saver.aget_tuple(named) is None
        assert await saver.aget_tuple(config) is None


async def test_the_backends_saver_reuses_reads(pg_backend: Backend) -> None:
    assert isinstance(pg_backend.checkpointer, ReusedReads)

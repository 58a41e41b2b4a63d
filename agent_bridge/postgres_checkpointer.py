"""LangGraph's ``AsyncPostgresSaver`` whose outages are the store's.

A checkpoint read or write that loses its connection (a failover, a killed session, a
restart), cannot get one from the pool in time, or meets a server that cannot take it
now (shutting down, out of connections, disk or memory, a standby after a failover, a
lock held past a timeout) raises psycopg's error out of ``aget_state`` and ``astream``,
where the worker could not tell it from a tool's own exception (which fails its run).
Raised as ``CheckpointUnavailableError`` instead, it sends the run back to the queue:
the checkpoint is intact, and a later drive goes on from it (docs/architecture.md,
invariant 3), up to ``worker.CHECKPOINT_RETRIES`` drives in a row that did not go
through.

A failure of the statement itself (a row too big for an index, a value out of range, a
missing table: any other SQLSTATE) would fail again on every retry, and each retry runs
again the tool whose result was not saved: it stays psycopg's error, and the run fails,
as for a tool's exception. Every other error, and everything the saver does, is
LangGraph's own.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping, Sequence
from contextlib import aclosing, contextmanager
from typing import Any, cast

import psycopg
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

from agent_bridge.errors import CheckpointUnavailableError
from agent_bridge.pg_errors import is_outage


@contextmanager
def _as_outage() -> Iterator[None]:
    """Raise psycopg's outages (``is_outage``) as ``CheckpointUnavailableError``."""
    try:
        yield
    except psycopg.Error as exc:
        if not is_outage(exc):
            raise
        raise CheckpointUnavailableError(
            f"PostgreSQL failed a checkpoint's statement: {exc}"
        ) from exc


class PostgresCheckpointer(AsyncPostgresSaver):
    """``AsyncPostgresSaver`` (same constructor, same behaviour) whose reads and writes
    raise ``CheckpointUnavailableError`` for an outage.

    Every public coroutine of ``BaseCheckpointSaver`` the saver implements is wrapped
    (``tests/test_postgres_checkpointer.py`` keeps that true as LangGraph adds some).

    Raises (from every method below):
        CheckpointUnavailableError: PostgreSQL failed the statement for a reason of the
            connection or the server, not of the statement (``is_outage``).
        psycopg.Error: Any other failure, as ``AsyncPostgresSaver`` raises it.
    """

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """See ``AsyncPostgresSaver.aget_tuple``."""
        with _as_outage():
            return await super().aget_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """See ``AsyncPostgresSaver.alist``."""
        # An async generator, though typed as the iterator the base class promises.
        items = cast(
            AsyncGenerator[CheckpointTuple, None],
            super().alist(config, filter=filter, before=before, limit=limit),
        )
        with _as_outage():
            async with aclosing(items):  # closed with this one: the saver's lock let go
                async for item in items:
                    yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """See ``AsyncPostgresSaver.aput``."""
        with _as_outage():
            return await super().aput(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """See ``AsyncPostgresSaver.aput_writes``."""
        with _as_outage():
            await super().aput_writes(config, writes, task_id, task_path)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """See ``AsyncPostgresSaver.aget_delta_channel_history``."""
        with _as_outage():
            return await super().aget_delta_channel_history(config=config, channels=channels)

    async def adelete_thread(self, thread_id: str) -> None:
        """See ``AsyncPostgresSaver.adelete_thread``."""
        with _as_outage():
            await super().adelete_thread(thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """See ``AsyncPostgresSaver.aprune``."""
        with _as_outage():
            await super().aprune(thread_ids, strategy=strategy)

    async def setup(self) -> None:
        """See ``AsyncPostgresSaver.setup``."""
        with _as_outage():
            await super().setup()

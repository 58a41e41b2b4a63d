"""LangGraph's ``AsyncPostgresSaver`` whose outages are the store's.

A checkpoint read or write that loses its connection (a failover, a killed session, a
restart), cannot get one from the pool in time, or is cancelled by the server raises
psycopg's ``OperationalError`` out of ``aget_state`` and ``astream``, where the worker
could not tell it from a tool's own exception (which fails its run). Raised as
``StoreUnavailableError`` instead, it leaves the run to its lease: the checkpoint is
intact, and a later drive goes on from it (docs/architecture.md, invariant 3). Every
other error, and everything the saver does, is LangGraph's own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

from agent_bridge.errors import StoreUnavailableError


@contextmanager
def _as_outage() -> Iterator[None]:
    """Raise psycopg's connection-level failures as ``StoreUnavailableError``."""
    try:
        yield
    except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
        raise StoreUnavailableError(f"PostgreSQL failed a checkpoint's statement: {exc}") from exc


class PostgresCheckpointer(AsyncPostgresSaver):
    """``AsyncPostgresSaver`` (same constructor, same behaviour) whose reads and writes
    raise ``StoreUnavailableError`` for an outage.

    Raises (from every method below):
        StoreUnavailableError: PostgreSQL failed the statement for a reason of the
            connection or the server, not of the statement (``psycopg.OperationalError``,
            among them ``psycopg_pool.PoolTimeout``, or ``InterfaceError``).
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
        with _as_outage():
            async for item in super().alist(config, filter=filter, before=before, limit=limit):
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

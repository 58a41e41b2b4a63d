"""Opening the database and LangGraph checkpointer named by ``DATABASE_URL``.

PostgreSQL: one psycopg pool shared by the approval store and ``AsyncPostgresSaver`` (as
``PostgresCheckpointer``, whose outages are the store's).
SQLite (the embedded demo): the store's aiosqlite connection and an
``AsyncSqliteSaver`` on a second connection to the same file. ``release`` runs both
migrations: the checkpointer's ``setup()`` and the store's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aiosqlite
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from agent_bridge import checkpoint_indexes, migrations
from agent_bridge.db import Database, dialect_of, sqlite_path
from agent_bridge.postgres_checkpointer import PostgresCheckpointer
from agent_bridge.postgres_db import POOL_TIMEOUT_S, PostgresDatabase, open_pool
from agent_bridge.release_lock import release_lock
from agent_bridge.sqlite_db import open_sqlite


@dataclass
class Backend:
    """The open database and checkpointer of one process."""

    db: Database
    checkpointer: BaseCheckpointSaver[Any]
    _extra_connection: aiosqlite.Connection | None = None

    async def release(self) -> int:
        """Apply the checkpointer's and the store's migrations under the release lock
        (``agent_bridge.release_lock``: several releases at once run one at a time);
        return the store's version. An index an interrupted ``setup()`` left invalid is
        dropped first and built again (``agent_bridge.checkpoint_indexes``).

        Raises:
            ReleaseBusyError: Another release held the lock too long.
            StoreUnavailableError: The database failed; run the release again.
        """
        async with release_lock(self.db):
            await checkpoint_indexes.drop_invalid(self.db)
            await self.checkpointer.setup()  # type: ignore[attr-defined]
            return await migrations.setup(self.db)

    async def close(self) -> None:
        """Close every connection."""
        if self._extra_connection is not None:
            await self._extra_connection.close()
        await self.db.close()


async def open_backend(
    database_url: str, *, timeout_s: float = POOL_TIMEOUT_S, prepared_statements: bool = False
) -> Backend:
    """Open the database and checkpointer for ``database_url``.

    Args:
        database_url: ``postgresql://...`` or ``sqlite:///path``.
        timeout_s: How long a statement waits for a PostgreSQL connection, seconds.
        prepared_statements: PostgreSQL: prepare the checkpointer's statements on the
            server (``agent_bridge.postgres_db``; the worker's ``DATABASE_PREPARED_STATEMENTS``).

    Raises:
        ConfigurationError: If the URL's scheme is not supported.
        StoreUnavailableError: If the database cannot be reached.
    """
    if dialect_of(database_url) == "postgres":
        pool = await open_pool(
            database_url, timeout_s=timeout_s, prepared_statements=prepared_statements
        )
        return Backend(db=PostgresDatabase(pool), checkpointer=PostgresCheckpointer(conn=pool))
    path = sqlite_path(database_url)
    db = await open_sqlite(path)
    conn = await aiosqlite.connect(path)
    return Backend(db=db, checkpointer=AsyncSqliteSaver(conn), _extra_connection=conn)

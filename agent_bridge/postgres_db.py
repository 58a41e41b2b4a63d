"""PostgreSQL driver of the database port, on a psycopg ``AsyncConnectionPool``.

The pool is shared with LangGraph's ``AsyncPostgresSaver``, so its connections are
configured as that saver requires (``autocommit``, ``dict_row``) and, for transaction
poolers such as PgBouncer, without server-side prepared statements
(``prepare_threshold=None``). Connections are checked before use, so a resume after a
night's idle or a database restart gets a live one.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from agent_bridge.db import Dialect, Params, Queries, Row, StatementRunner, Statements
from agent_bridge.errors import StoreRejectedError, StoreUnavailableError

POOL_MAX_SIZE = 10
POOL_TIMEOUT_S = 10.0
"""How long a caller waits for a free connection before ``StoreUnavailableError``."""
MAX_CONNECTION_IDLE_S = 300.0
MAX_CONNECTION_LIFETIME_S = 1800.0

_PLACEHOLDER = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


def to_pyformat(sql: str) -> str:
    """Rewrite ``:name`` placeholders as psycopg's ``%(name)s`` (``::`` casts untouched)."""
    return _PLACEHOLDER.sub(r"%(\1)s", sql.replace("%", "%%"))


def without_nul(params: Params | None) -> dict[str, Any]:
    """``params`` with NUL characters in text replaced by U+FFFD.

    PostgreSQL ``text`` cannot hold NUL (0x00), and agent or Slack text may contain it;
    a replacement character keeps the rest of the value instead of refusing it.
    """
    return {
        k: v.replace("\x00", "\ufffd") if isinstance(v, str) else v
        for k, v in (params or {}).items()
    }


def connection_kwargs() -> dict[str, Any]:
    """Connection settings both the store and ``AsyncPostgresSaver`` accept."""
    return {"autocommit": True, "prepare_threshold": None, "row_factory": dict_row}


class PostgresDatabase(StatementRunner):
    """The database port over a psycopg pool.

    Args:
        pool: An open pool built by ``open_pool``.
    """

    dialect: Dialect = "postgres"

    def __init__(self, pool: AsyncConnectionPool[Any]) -> None:
        self.pool = pool

    async def close(self) -> None:
        """Close the pool."""
        await self.pool.close()

    async def _run(self, sql: str, params: Params | None) -> tuple[list[Row], int]:
        """Run one statement in its own transaction; return (rows, rows changed)."""
        async with self._translated():
            async with self.pool.connection() as conn:
                return await _on(conn, sql, params)
        raise AssertionError("unreachable")  # pragma: no cover (mypy: the block returns)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Statements]:
        """See ``Database.transaction``: one pooled connection, one transaction."""
        async with self._translated():
            async with self.pool.connection() as conn, conn.transaction():
                yield _Transaction(conn)

    @asynccontextmanager
    async def _translated(self) -> AsyncIterator[None]:
        """Turn psycopg's errors into the port's (outage or refused statement)."""
        try:
            yield
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise StoreUnavailableError(f"PostgreSQL is unavailable: {exc}") from exc
        except TimeoutError as exc:
            raise StoreUnavailableError(
                f"No PostgreSQL connection within {self.pool.timeout} s"
            ) from exc
        except psycopg.Error as exc:
            raise StoreRejectedError(f"PostgreSQL refused the statement: {exc}") from exc


async def _on(conn: Any, sql: str, params: Params | None) -> tuple[list[Row], int]:
    """Run one statement on ``conn``; return (rows, rows changed)."""
    async with conn.cursor() as cur:
        await cur.execute(to_pyformat(sql), without_nul(params))
        rows = list(await cur.fetchall()) if cur.description else []
        return rows, max(cur.rowcount, 0)


class _Transaction(Queries):
    """``Statements`` on one connection inside ``PostgresDatabase.transaction``."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    async def _run(self, sql: str, params: Params | None) -> tuple[list[Row], int]:
        return await _on(self.conn, sql, params)


async def open_pool(url: str, *, timeout_s: float = POOL_TIMEOUT_S) -> AsyncConnectionPool[Any]:
    """Open a checked, recycling connection pool on ``url``.

    Args:
        url: ``postgresql://...``.
        timeout_s: How long a caller waits for a connection, seconds (the web process
            uses less than Slack's 3 s ack deadline).

    Raises:
        StoreUnavailableError: If no connection can be made within ``timeout_s``.
    """
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        url,
        max_size=POOL_MAX_SIZE,
        kwargs=connection_kwargs(),
        check=AsyncConnectionPool.check_connection,
        max_idle=MAX_CONNECTION_IDLE_S,
        max_lifetime=MAX_CONNECTION_LIFETIME_S,
        timeout=timeout_s,
        open=False,
    )
    try:
        await pool.open(wait=True, timeout=timeout_s)
    except Exception as exc:
        await pool.close()
        raise StoreUnavailableError(
            f"Cannot connect to PostgreSQL at {database_target(url)}: {exc}. Is it running?"
        ) from exc
    return pool


def database_target(url: str) -> str:
    """Where ``url`` points, for people: ``user@host:port/dbname``, never its password
    (which libpq also takes from ``?password=`` or a ``key=value`` string)."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.Error:
        return "an unreadable DATABASE_URL"
    user = f"{parts['user']}@" if parts.get("user") else ""
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"{user}{parts.get('host') or 'localhost'}{port}/{parts.get('dbname') or ''}"

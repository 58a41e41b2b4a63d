"""SQLite driver of the database port, on ``aiosqlite`` (the embedded demo's database).

One connection in WAL mode, statements serialised by a lock, each committed at once:
the same atomic single-statement transitions as on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite

from agent_bridge.db import Dialect, Params, Queries, Row, StatementRunner, Statements
from agent_bridge.errors import StoreRejectedError, StoreUnavailableError

BUSY_TIMEOUT_S = 5.0


class SqliteDatabase(StatementRunner):
    """The database port over one aiosqlite connection.

    Args:
        conn: An open connection (see ``open_sqlite``).
        path: Its file path (shared with LangGraph's ``AsyncSqliteSaver``).
    """

    dialect: Dialect = "sqlite"

    def __init__(self, conn: aiosqlite.Connection, path: str) -> None:
        self.conn = conn
        self.path = path
        self._lock = asyncio.Lock()

    async def close(self) -> None:
        """Close the connection."""
        await self.conn.close()

    async def _run(self, sql: str, params: Params | None) -> tuple[list[Row], int]:
        async with _translated(), self._lock:
            result = await _on(self.conn, sql, params)
            await self.conn.commit()
            return result
        raise AssertionError("unreachable")  # pragma: no cover (mypy: the block returns)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Statements]:
        """See ``Database.transaction``: the connection's lock held, committed at the end,
        rolled back if the block raises."""
        async with _translated(), self._lock:
            await self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield _Transaction(self.conn)
            except BaseException:
                await self.conn.rollback()
                raise
            await self.conn.commit()


@asynccontextmanager
async def _translated() -> AsyncIterator[None]:
    """Turn sqlite3's errors into the port's (outage or refused statement)."""
    try:
        yield
    except sqlite3.OperationalError as exc:  # locked, unreadable, disk full
        raise StoreUnavailableError(f"SQLite is unavailable: {exc}") from exc
    except sqlite3.Error as exc:
        raise StoreRejectedError(f"SQLite refused the statement: {exc}") from exc


async def _on(conn: aiosqlite.Connection, sql: str, params: Params | None) -> tuple[list[Row], int]:
    """Run one statement on ``conn`` without committing; return (rows, rows changed)."""
    cursor = await conn.execute(sql, dict(params or {}))
    rows = [dict(r) for r in await cursor.fetchall()]
    changed = cursor.rowcount
    await cursor.close()
    return rows, max(changed, 0)


class _Transaction(Queries):
    """``Statements`` inside ``SqliteDatabase.transaction``."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn

    async def _run(self, sql: str, params: Params | None) -> tuple[list[Row], int]:
        return await _on(self.conn, sql, params)


async def open_sqlite(path: str) -> SqliteDatabase:
    """Open (creating folders as needed) the SQLite file at ``path``.

    Raises:
        StoreUnavailableError: If the file cannot be opened.
    """
    if path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = await aiosqlite.connect(path, timeout=BUSY_TIMEOUT_S)
    except sqlite3.Error as exc:
        raise StoreUnavailableError(f"Cannot open SQLite database {path}: {exc}") from exc
    conn.row_factory = sqlite3.Row
    await conn.execute("PRAGMA journal_mode=WAL")
    await conn.execute("PRAGMA foreign_keys=ON")
    return SqliteDatabase(conn, path)

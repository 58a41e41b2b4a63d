"""PostgreSQL driver of the database port, on a psycopg ``AsyncConnectionPool``.

The pool is shared with LangGraph's ``AsyncPostgresSaver``, so its connections are
configured as that saver requires (``autocommit``, ``dict_row``). The saver's statements
are prepared on the server at their first use when the pool is opened with
``prepared_statements`` (``prepare_threshold=0``, as LangGraph's documentation configures
it): parsed and planned once per connection, which halved PostgreSQL's CPU time per
checkpoint read (docs/benchmarks.md). The store's own statements never are
(``prepare=False``): many select ``*``, and a prepared one would fail in every process
still running when a release adds a column ("cached plan must not change result type").
Without ``prepared_statements`` (the default) nothing is prepared
(``prepare_threshold=None``): safe behind a transaction-pooling proxy that does not
track prepared statements (PgBouncer before 1.21, or without
``max_prepared_statements``), where prepared checkpoint writes failed and hung.

A connection is checked before use without a round trip (``check_socket``: a
connection the server closed, after a restart or a terminate, is seen on its socket
and replaced), and one idle longer than ``MAX_CONNECTION_IDLE_S`` is closed by the
pool, so a resume after a night's idle or a database restart gets a live one without a
ping in front of every statement.

A deadline set with ``agent_bridge.deadline.within`` bounds the work: see that module.
"""

from __future__ import annotations

import asyncio
import functools
import math
import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import ConnStatus, TransactionStatus
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from agent_bridge import metrics
from agent_bridge.db import Dialect, Params, Queries, Row, StatementRunner, Statements
from agent_bridge.deadline import time_left
from agent_bridge.errors import StoreRejectedError, StoreTooSlowError, StoreUnavailableError
from agent_bridge.pg_errors import is_outage

POOL_MAX_SIZE = 10
POOL_TIMEOUT_S = 10.0
"""How long a caller waits for a free connection before ``StoreUnavailableError``."""
CONNECT_TIMEOUT_MIN_S = 10
"""Least time a connection attempt is given, seconds (``connect_timeout``)."""
MAX_CONNECTION_IDLE_S = 300.0
MAX_CONNECTION_LIFETIME_S = 1800.0

_PLACEHOLDER = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


@functools.lru_cache(maxsize=1024)
def to_pyformat(sql: str) -> str:
    """Rewrite ``:name`` placeholders as psycopg's ``%(name)s`` (``::`` casts untouched);
    remembered per statement text (the store's statements are constants)."""
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


def connection_kwargs(*, prepared_statements: bool = False) -> dict[str, Any]:
    """Connection settings both the store and ``AsyncPostgresSaver`` accept; with
    ``prepared_statements``, a statement not run with ``prepare=False`` is prepared at its
    first use (psycopg's ``prepare_threshold``, "Prepared statements" in its docs)."""
    return {
        "autocommit": True,
        "prepare_threshold": 0 if prepared_statements else None,
        "row_factory": dict_row,
    }


class PostgresPool(AsyncConnectionPool[Any]):
    """psycopg_pool's ``AsyncConnectionPool`` that can tell whether connections can be
    made now (``connect_failing``), for what a ``PoolTimeout`` means: an outage, or a
    pool whose connections were all busy (or slow to make) past the caller's wait.
    Arguments as ``AsyncConnectionPool``'s but ``configure``, which it uses."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._errors_when_connected = 0
        super().__init__(*args, configure=self._note_connected, **kwargs)

    async def _note_connected(self, conn: Any) -> None:
        """The pool's ``configure`` callback: a connection was just made."""
        self._errors_when_connected = self.get_stats().get("connections_errors", 0)

    def connect_failing(self) -> bool:
        """Whether an attempt to connect failed after the last one that succeeded
        (psycopg_pool's ``connections_errors`` count, read as each connection is made)."""
        return self.get_stats().get("connections_errors", 0) > self._errors_when_connected


class PostgresDatabase(StatementRunner):
    """The database port over a psycopg pool.

    Args:
        pool: An open pool built by ``open_pool``.
    """

    dialect: Dialect = "postgres"

    def __init__(self, pool: PostgresPool) -> None:
        self.pool = pool

    async def close(self) -> None:
        """Close the pool."""
        await self.pool.close()

    async def _run(self, sql: str, params: Params | None) -> tuple[list[Row], int]:
        """Run one statement in its own transaction; return (rows, rows changed).

        A connection the server had closed (``check_socket`` cannot see every one) is
        replaced once, after the pool's idle connections are pinged (``pool.check``,
        round trips only then): the statement never ran on it. Under a deadline
        (``agent_bridge.deadline``) the wait for a connection and the statement are
        bounded by the time left: past it the statement is cancelled.
        """
        left = time_left()
        async with self._translated():
            if left is not None and left <= 0:
                raise TimeoutError
            for attempt in range(2):
                async with self.pool.connection(timeout=left) as conn:
                    try:
                        if left is None:
                            return await _on(conn, sql, params)
                        return await asyncio.wait_for(_on(conn, sql, params), time_left())
                    except psycopg.OperationalError:
                        if attempt or not conn.broken:
                            raise
                    await self.pool.check()  # its neighbours died with it: find them now
        raise AssertionError("unreachable")  # pragma: no cover (mypy: the loop returns)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Statements]:
        """See ``Database.transaction``: one pooled connection, one transaction.

        A connection the server had closed fails at ``BEGIN`` and is replaced once, as
        in ``_run``.
        Under a deadline (``agent_bridge.deadline``) the transaction starts with
        ``SET LOCAL lock_timeout`` and ``statement_timeout`` of the time left (set
        again before each later statement, to the time left then), so PostgreSQL
        aborts a statement that waits on a lock or runs past the deadline and the
        transaction is rolled back; it is never cancelled from here, so its COMMIT
        either happened before the caller hears back or not at all.
        """
        left = time_left()
        async with self._translated():
            if left is not None and left <= 0:
                raise TimeoutError
            for attempt in range(2):
                begun = False
                conn: Any = None
                try:
                    async with self.pool.connection(timeout=left) as conn, conn.transaction():
                        begun = True
                        metrics.DATABASE_ROUND_TRIPS.inc(2)  # its BEGIN and COMMIT
                        if left is not None:
                            await _bound(conn, time_left() or 0.0)
                        yield _Transaction(conn, bounded=left is not None)
                    return
                except psycopg.OperationalError:
                    if begun or attempt or conn is None or not conn.broken:
                        raise
                await self.pool.check()  # its neighbours died with it: find them now

    @asynccontextmanager
    async def _translated(self) -> AsyncIterator[None]:
        """Turn psycopg's errors into the port's: too slow, an outage (``is_outage``), or
        a statement refused for itself (a row too big for an index, a value out of range:
        it would fail again, so it is not retried as an outage).

        No connection in time (``PoolTimeout``) is an outage when the pool's latest
        attempts to connect failed (``PostgresPool.connect_failing``), and too slow
        otherwise: every connection busy (a burst of clicks), or new ones slow to make;
        the database answers what it is sent."""
        try:
            yield
        except (psycopg.errors.LockNotAvailable, psycopg.errors.QueryCanceled) as exc:
            raise StoreTooSlowError(f"PostgreSQL did not answer in time: {exc}") from exc
        except TimeoutError as exc:
            raise StoreTooSlowError("PostgreSQL did not answer within the deadline") from exc
        except PoolTimeout as exc:
            if not self.pool.connect_failing():
                raise StoreTooSlowError(
                    f"no connection free in time (each busy, or slow to make): {exc}"
                ) from exc
            raise StoreUnavailableError(f"PostgreSQL is unavailable: {exc}") from exc
        except psycopg.Error as exc:
            if is_outage(exc):
                raise StoreUnavailableError(f"PostgreSQL is unavailable: {exc}") from exc
            raise StoreRejectedError(f"PostgreSQL refused the statement: {exc}") from exc


async def _bound(conn: Any, seconds: float) -> None:
    """Abort this transaction's statements that wait on a lock or run past ``seconds``
    (``SET LOCAL``: the settings end with the transaction, the pooled connection keeps
    its own)."""
    ms = str(max(1, int(seconds * 1000)))
    metrics.DATABASE_ROUND_TRIPS.inc()
    await conn.execute(
        "SELECT set_config('lock_timeout', %(ms)s, true), "
        "set_config('statement_timeout', %(ms)s, true)",
        {"ms": ms},
        prepare=False,
    )


async def check_socket(conn: Any) -> None:
    """The pool's check of a connection before handing it out, without a round trip.

    Reads whatever the server sent the idle connection (libpq's non-blocking
    ``PQconsumeInput``): a server that closed it (a restart, ``pg_terminate_backend``,
    an idle timeout) has sent its goodbye and EOF, which leaves the connection bad.

    Raises:
        psycopg.OperationalError: The connection is closed or broken; the pool drops it
            and hands out another.
    """
    pgconn = conn.pgconn
    for _ in range(2):  # the goodbye (a FATAL notice) is read first, the EOF after it
        if pgconn.status != ConnStatus.OK:
            break
        pgconn.consume_input()  # raises OperationalError on EOF or a socket error
        pgconn.is_busy()  # parses what was read
    if pgconn.status != ConnStatus.OK or pgconn.transaction_status != TransactionStatus.IDLE:
        raise psycopg.OperationalError("the connection was closed by the server")


async def _on(conn: Any, sql: str, params: Params | None) -> tuple[list[Row], int]:
    """Run one statement on ``conn``, never prepared (see the module's docstring); return
    (rows, rows changed)."""
    metrics.DATABASE_ROUND_TRIPS.inc()
    async with conn.cursor() as cur:
        await cur.execute(to_pyformat(sql), without_nul(params), prepare=False)
        rows = list(await cur.fetchall()) if cur.description else []
        return rows, max(cur.rowcount, 0)


class _Transaction(Queries):
    """``Statements`` on one connection inside ``PostgresDatabase.transaction``.

    Under a deadline each statement after the first is bounded again by the time left
    then (the first by ``transaction``'s own bound), and none is sent once it has passed:
    the transaction as a whole ends by the deadline, not each statement.
    """

    def __init__(self, conn: Any, *, bounded: bool) -> None:
        self.conn = conn
        self.bounded = bounded
        self._sent = 0

    async def _run(self, sql: str, params: Params | None) -> tuple[list[Row], int]:
        left = time_left()
        if self.bounded and left is not None:
            if left <= 0:
                raise TimeoutError  # rolled back by the transaction: nothing recorded
            if self._sent:
                await _bound(self.conn, left)
        self._sent += 1
        return await _on(self.conn, sql, params)


def connect_timeout(url: str, timeout_s: float) -> dict[str, Any]:
    """libpq's ``connect_timeout`` for a pool's connections, as connection keywords: the
    pool's wait ``timeout_s`` but at least ``CONNECT_TIMEOUT_MIN_S`` seconds, or none if
    ``url`` or ``PGCONNECT_TIMEOUT`` sets one. A server that takes the TCP connection and
    never answers (a blackholed failover) would otherwise hold each attempt for
    psycopg's 130 s; a healthy one slower to connect than the web process's 2 s wait (far
    away, busy, waking up) still connects, for the next request.

    Returns:
        ``{"connect_timeout": seconds}``, or ``{}``.

    Raises:
        psycopg.ProgrammingError: ``url`` is not a connection string libpq can read.
    """
    if "connect_timeout" in conninfo_to_dict(url) or os.environ.get("PGCONNECT_TIMEOUT"):
        return {}
    return {"connect_timeout": max(CONNECT_TIMEOUT_MIN_S, math.ceil(timeout_s))}


async def open_pool(
    url: str, *, timeout_s: float = POOL_TIMEOUT_S, prepared_statements: bool = False
) -> PostgresPool:
    """Open a checked (``check_socket``), recycling connection pool on ``url``.

    Making a connection is bounded too (``connect_timeout``). A connection
    the pool fails to make is retried with psycopg_pool's backoff (1 s, then
    doubling) for ``timeout_s`` only (``reconnect_timeout``), not its default 5 minutes:
    after an outage of a minute the next attempt could otherwise come a minute after the
    database is back, every click told meanwhile that it is unreachable. Past it the
    attempt is dropped, and the next caller to wait makes a new one at once (the pool
    grows on demand), so the first request after the outage connects.

    Args:
        url: ``postgresql://...``.
        timeout_s: How long a caller waits for a connection, seconds (the web process
            uses less than Slack's 3 s ack deadline).
        prepared_statements: Prepare ``AsyncPostgresSaver``'s statements on the server
            (``connection_kwargs``); leave it off behind a pooler that does not track them.

    Raises:
        StoreUnavailableError: If no connection can be made within ``timeout_s``.
    """
    keywords = connection_kwargs(prepared_statements=prepared_statements) | connect_timeout(
        url, timeout_s
    )
    pool = PostgresPool(
        url,
        max_size=POOL_MAX_SIZE,
        kwargs=keywords,
        check=check_socket,
        max_idle=MAX_CONNECTION_IDLE_S,
        max_lifetime=MAX_CONNECTION_LIFETIME_S,
        timeout=timeout_s,
        reconnect_timeout=timeout_s,
        open=False,
    )
    try:
        await pool.open(wait=True, timeout=timeout_s)
    except BaseException as exc:
        # Cancelled too (a Ctrl-C while connecting): the pool's workers take a
        # cancellation for a failed attempt and would wait on, keeping the process up.
        await pool.close()
        if not isinstance(exc, Exception):
            raise
        try:
            why = await asyncio.wait_for(_connect_failure(url, keywords), timeout_s)
        except TimeoutError:
            why = None
        why = why or str(exc)
        raise StoreUnavailableError(
            f"Cannot connect to PostgreSQL at {database_target(url)}: {why}"
        ) from exc
    return pool


async def _connect_failure(url: str, keywords: dict[str, Any]) -> str | None:
    """Why one connection to ``url`` fails now, in libpq's words (the server refused it,
    a role or database that does not exist, a password refused: never the password
    itself), or ``None`` if it connects (the pool's own failure is then the reason)."""
    try:
        conn = await psycopg.AsyncConnection.connect(url, **keywords)
    except psycopg.Error as exc:
        return " ".join(str(exc).split())
    await conn.close()
    return None


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

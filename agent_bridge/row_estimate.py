"""How many rows an ``UPDATE`` or ``DELETE`` would touch, without running it (a driver).

For a tool whose policy's ``sql`` has an ``estimate_url`` (a read-only connection),
the worker asks before the card is posted. The statement itself is never sent: the
reads come from ``sql_risk.count_statements``, built by sqlglot from the parsed
statement's table and ``WHERE``:

- PostgreSQL (psycopg): ``SELECT COUNT(*) ...`` in a ``READ ONLY`` transaction (on a
  session whose ``default_transaction_read_only`` is on) with ``SET LOCAL
  statement_timeout``; when the count is cancelled by the timeout, the planner's
  estimate, ``Plan Rows`` of ``EXPLAIN (FORMAT JSON) SELECT 1 ...``, under the same
  timeout (https://www.postgresql.org/docs/current/using-explain.html);
- SQLite: the count on a ``mode=ro`` connection with ``PRAGMA query_only``, stopped by a
  progress handler at the timeout (SQLite has no row estimate to fall back on).

Nothing here fails a run: any failure is a ``RowEstimate`` with method ``unavailable``
and a reason, and the error's kind goes to the log. The URL is a secret and appears in
no log line, error or card.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
from psycopg import errors as pg_errors

from agent_bridge.policy import SqlPolicy
from agent_bridge.sql_risk import RowEstimate, UnavailableReason, count_statements

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 5
"""Seconds to wait for the estimate database's connection (psycopg's minimum is 2)."""
SQLITE_PROGRESS_STEPS = 1000
"""SQLite virtual-machine steps between two looks at the clock."""
WORKSPACE_DIR_FIELD = "{workspace_dir}"
"""Replaced in ``estimate_url`` by the worker's ``WORKSPACE_DIR``."""
SET_TIMEOUT = "SELECT set_config('statement_timeout', %s, true)"
"""``SET LOCAL statement_timeout``, with the value as a parameter."""
SET_READ_ONLY = "SET TRANSACTION READ ONLY"
EXPLAIN_JSON = "EXPLAIN (FORMAT JSON) "
SQLITE_PREFIX = "sqlite:///"


class RowEstimator:
    """Asks a tool's read-only estimate database how many rows a statement would touch.

    Args:
        workspace_dir: The worker's ``WORKSPACE_DIR``, for ``{workspace_dir}`` in an
            ``estimate_url`` (the demo's database lives there).
    """

    def __init__(self, *, workspace_dir: Path | None = None) -> None:
        self.workspace_dir = workspace_dir

    async def estimate(
        self, sql: object, policy: SqlPolicy, *, log_context: str = ""
    ) -> RowEstimate:
        """Estimate the rows ``sql`` would touch.

        Args:
            sql: The statement (the tool argument ``policy.argument``).
            policy: The tool's ``sql`` block, with its ``estimate_url``.
            log_context: IDs for the log line of a failure (``run=… request=…``).

        Returns:
            ``exact_count`` or ``planner_estimate`` with the number, or ``unavailable``
            with why: ``unsupported`` (not a single ``UPDATE``/``DELETE`` of one table
            that can be counted without calling functions), ``timeout``,
            ``unreachable``, ``error``. Never raises.
        """
        built = count_statements(sql, dialect=policy.dialect) if isinstance(sql, str) else None
        if built is None or policy.estimate_url is None:
            return _unavailable("unsupported")
        url = policy.estimate_url.get_secret_value()
        if self.workspace_dir is not None:
            url = url.replace(WORKSPACE_DIR_FIELD, str(self.workspace_dir))
        count_sql, plan_sql = built
        try:
            if url.startswith(SQLITE_PREFIX):
                return await asyncio.to_thread(
                    _sqlite_count,
                    url.removeprefix(SQLITE_PREFIX),
                    count_sql,
                    policy.estimate_timeout_s,
                )
            # statement_timeout bounds each query on the server; this bounds the whole
            # exchange here too, should the server or the network stop answering.
            async with asyncio.timeout(CONNECT_TIMEOUT_S + 3 * policy.estimate_timeout_s):
                return await _postgres_estimate(url, count_sql, plan_sql, policy.estimate_timeout_s)
        except TimeoutError as exc:
            _log_failure(log_context, exc)
            return _unavailable("timeout")
        except (psycopg.OperationalError, sqlite3.OperationalError) as exc:
            _log_failure(log_context, exc)
            return _unavailable("unreachable")
        except Exception as exc:  # an estimate never fails the run: the card says why
            _log_failure(log_context, exc)
            return _unavailable("error")


async def _postgres_estimate(
    url: str, count_sql: str, plan_sql: str, timeout_s: float
) -> RowEstimate:
    """The exact count, else (cancelled by the timeout) the planner's estimate."""
    conn = await psycopg.AsyncConnection.connect(
        url,
        autocommit=True,
        connect_timeout=CONNECT_TIMEOUT_S,
        options="-c default_transaction_read_only=on",
    )
    async with conn:
        try:
            row = await _read_only(conn, count_sql, timeout_s)
            return RowEstimate(method="exact_count", rows=int(row))
        except pg_errors.QueryCanceled:
            pass
        try:
            plan = await _read_only(conn, EXPLAIN_JSON + plan_sql, timeout_s)
        except pg_errors.QueryCanceled:
            return _unavailable("timeout")
        return RowEstimate(method="planner_estimate", rows=int(plan[0]["Plan"]["Plan Rows"]))


async def _read_only(conn: psycopg.AsyncConnection[Any], query: str, timeout_s: float) -> Any:
    """The first column of the first row of ``query`` (sqlglot's output, never the
    user's text), run in a ``READ ONLY`` transaction under ``statement_timeout``."""
    async with conn.transaction():
        await conn.execute(SET_READ_ONLY)
        await conn.execute(SET_TIMEOUT, (str(max(int(timeout_s * 1000), 1)),))
        cursor = await conn.execute(query)
        row = await cursor.fetchone()
    if row is None:
        raise ValueError("the estimate query returned no row")
    return row[0]


def _sqlite_count(path: str, count_sql: str, timeout_s: float) -> RowEstimate:
    """The exact count on a read-only connection, stopped at ``timeout_s``."""
    conn = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True, timeout=timeout_s)
    deadline = time.monotonic() + timeout_s
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), SQLITE_PROGRESS_STEPS)
    try:
        conn.execute("PRAGMA query_only = ON")
        rows = conn.execute(count_sql).fetchone()[0]
    except sqlite3.OperationalError as exc:
        if time.monotonic() > deadline:
            return _unavailable("timeout")
        if "unable to open" in str(exc):
            raise
        raise sqlite3.DatabaseError(type(exc).__name__) from exc
    finally:
        conn.close()
    return RowEstimate(method="exact_count", rows=int(rows))


def _unavailable(reason: UnavailableReason) -> RowEstimate:
    return RowEstimate(method="unavailable", reason=reason)


def _log_failure(context: str, exc: BaseException) -> None:
    """Log what kind of error it was: never its text, which may name the server."""
    logger.warning(
        "%s affected-rows estimate unavailable: %s (sqlstate %s)",
        context,
        type(exc).__name__,
        getattr(exc, "sqlstate", None),
    )

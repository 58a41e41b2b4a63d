"""How many rows an ``UPDATE`` or ``DELETE`` would touch, without running it (a driver).

For a tool whose policy's ``sql`` has an ``estimate_url`` (a read-only connection),
the worker asks before the card is posted. The statement itself is never sent: the
reads come from ``sql_count.count_statements``, built by sqlglot from the parsed
statement's table and ``WHERE``:

- PostgreSQL (psycopg): first every name the ``WHERE`` reads is looked up among its
  tables' columns in the catalog (``pg_attribute``): one that is none may be a function
  PostgreSQL calls by attribute notation (``sql_count``), and the count is not run;
  then ``SELECT COUNT(*) ...`` in a ``READ ONLY`` transaction (on a
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
from agent_bridge.sql_count import CountQueries, count_statements
from agent_bridge.sql_risk import RowEstimate, UnavailableReason

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
TABLE_COLUMNS = """SELECT t.name, to_regclass(t.name) IS NOT NULL, a.attname::text
    FROM unnest(%s::text[]) AS t(name)
    LEFT JOIN pg_attribute a
        ON a.attrelid = to_regclass(t.name) AND a.attnum > 0 AND NOT a.attisdropped"""
"""Each table named (as SQL writes it, quoted or not), whether it exists, and each of
its columns; one with no column comes back once, with none."""
ALSO_CHANGED = """SELECT 'cascade', c.conrelid::regclass::text FROM pg_constraint c
    WHERE c.contype = 'f' AND c.confrelid = to_regclass(%(table)s)
    AND (CASE WHEN %(kind)s = 'DELETE' THEN c.confdeltype ELSE c.confupdtype END)
        IN ('c', 'n', 'd')
    UNION SELECT 'trigger', t.tgname::text FROM pg_trigger t
    WHERE t.tgrelid = to_regclass(%(table)s) AND NOT t.tgisinternal AND t.tgenabled <> 'D'
    AND t.tgtype & (CASE WHEN %(kind)s = 'DELETE' THEN 8 ELSE 16 END) <> 0
    UNION SELECT 'rule', r.rulename::text FROM pg_rewrite r
    WHERE r.ev_class = to_regclass(%(table)s) AND r.rulename <> '_RETURN'
    AND r.ev_type = (CASE WHEN %(kind)s = 'DELETE' THEN '4' ELSE '2' END)::"char"
    ORDER BY 1, 2"""
"""What a ``DELETE`` or ``UPDATE`` of the table changes beyond its rows (catalogs
``pg_constraint``'s ``confdeltype``/``confupdtype``, ``pg_trigger``'s ``tgtype`` bits 8
and 16, ``pg_rewrite``'s ``ev_type``): https://www.postgresql.org/docs/current/catalogs.html."""
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
            that can be counted without calling functions), ``varies`` (its ``WHERE``
            depends on who runs it or when), ``unresolved`` (a name it reads is no
            column of its tables), ``timeout``, ``unreachable``, ``error``. Never raises.
        """
        built = count_statements(sql, dialect=policy.dialect) if isinstance(sql, str) else None
        if not isinstance(built, CountQueries):
            return _unavailable(built or "unsupported")
        if policy.estimate_url is None:
            return _unavailable("unsupported")
        url = policy.estimate_url.get_secret_value()
        if self.workspace_dir is not None:
            url = url.replace(WORKSPACE_DIR_FIELD, str(self.workspace_dir))
        try:
            if url.startswith(SQLITE_PREFIX):
                return await asyncio.to_thread(
                    _sqlite_count,
                    url.removeprefix(SQLITE_PREFIX),
                    built.count_query,
                    policy.estimate_timeout_s,
                )
            # statement_timeout bounds each query on the server; this bounds the whole
            # exchange here too, should the server or the network stop answering.
            async with asyncio.timeout(CONNECT_TIMEOUT_S + 4 * policy.estimate_timeout_s):
                return await _postgres_estimate(url, built, policy.estimate_timeout_s)
        except TimeoutError as exc:
            _log_failure(log_context, exc)
            return _unavailable("timeout")
        except (psycopg.OperationalError, sqlite3.OperationalError) as exc:
            _log_failure(log_context, exc)
            return _unavailable("unreachable")
        except Exception as exc:  # an estimate never fails the run: the card says why
            _log_failure(log_context, exc)
            return _unavailable("error")


async def _postgres_estimate(url: str, built: CountQueries, timeout_s: float) -> RowEstimate:
    """The exact count, else (cancelled by the timeout) the planner's estimate; neither
    when a name the count reads is no column of its tables (``_columns_found``)."""
    conn = await psycopg.AsyncConnection.connect(
        url,
        autocommit=True,
        connect_timeout=CONNECT_TIMEOUT_S,
        options="-c default_transaction_read_only=on",
    )
    async with conn:
        try:
            if not await _columns_found(conn, built, timeout_s):
                return _unavailable("unresolved")
        except pg_errors.QueryCanceled:
            return _unavailable("timeout")
        cascades, triggers = await _also_changed(conn, built, timeout_s)
        try:
            row = await _read_only(conn, built.count_query, timeout_s)
            counted = RowEstimate(method="exact_count", rows=int(row[0][0]))
        except pg_errors.QueryCanceled:
            try:
                plan = await _read_only(conn, EXPLAIN_JSON + built.plan_query, timeout_s)
            except pg_errors.QueryCanceled:
                counted = _unavailable("timeout")
            else:
                rows = int(plan[0][0][0]["Plan"]["Plan Rows"])
                counted = RowEstimate(method="planner_estimate", rows=rows)
        return counted.model_copy(update={"cascades": cascades, "triggers": triggers})


async def _also_changed(
    conn: psycopg.AsyncConnection[Any], built: CountQueries, timeout_s: float
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What the statement changes beyond its table's rows, from the catalog: the tables
    whose foreign keys act on it (``CASCADE``, ``SET NULL``, ``SET DEFAULT``), and the
    triggers and rules that fire on it. Nothing when the catalog is too slow to say."""
    table = built.tables[0].name
    try:
        rows = await _read_only(conn, ALSO_CHANGED, timeout_s, {"table": table, "kind": built.kind})
    except (ValueError, pg_errors.QueryCanceled):
        return (), ()
    cascades = tuple(name for what, name in rows if what == "cascade")
    return cascades, tuple(name for what, name in rows if what != "cascade")


async def _columns_found(
    conn: psycopg.AsyncConnection[Any], built: CountQueries, timeout_s: float
) -> bool:
    """Whether each name the count reads as a column is a column of its tables (of the
    table it is qualified by, if it is): PostgreSQL reads ``o.fn`` as a call of
    ``fn(o)`` when ``o`` has no column ``fn``, and the count would make it. The
    statement's own table unknown fails the count itself, which says so; any other table
    the catalog does not know refuses it."""
    rows = await _read_only(conn, TABLE_COLUMNS, timeout_s, ([t.name for t in built.tables],))
    columns: dict[str, set[str]] = {}
    for table, exists, column in rows:
        if not exists and table == built.tables[0].name:
            return True  # no such table (UndefinedTable): the count fails before any call
        if not exists:
            return False  # a name the catalog does not know: nothing to vouch for
        columns.setdefault(table, set()).update([column] if column is not None else [])
    return all(
        any(c.name in columns[t.name] for t in built.tables if c.table in (None, t.key))
        for c in built.columns
    )


async def _read_only(
    conn: psycopg.AsyncConnection[Any],
    query: str,
    timeout_s: float,
    params: tuple[Any, ...] | dict[str, Any] | None = None,
) -> list[tuple[Any, ...]]:
    """The rows of ``query`` (sqlglot's output or the module's own, never the user's
    text; ``params`` passed apart), run in a ``READ ONLY`` transaction under
    ``statement_timeout``.

    Raises:
        ValueError: The query returned no row.
    """
    async with conn.transaction():
        await conn.execute(SET_READ_ONLY)
        await conn.execute(SET_TIMEOUT, (str(max(int(timeout_s * 1000), 1)),))
        cursor = await conn.execute(query, params)
        rows = await cursor.fetchall()
    if not rows:
        raise ValueError("the estimate query returned no row")
    return rows


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

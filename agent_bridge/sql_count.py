"""The reads that count an ``UPDATE``'s or ``DELETE``'s affected rows (pure; no database).

``count_statements`` builds, from the statement sqlglot parsed, the ``SELECT count(*)``
that ``agent_bridge/row_estimate.py`` runs instead of the statement itself, with what
must hold before it may run:

- the count evaluates the statement's ``WHERE``, so it calls what the ``WHERE`` calls:
  a statement calling a function that may write (``sql_risk``'s ``unsafe_function``)
  is never counted;
- a ``WHERE`` whose truth depends on who runs it, when, or on chance
  (``current_user``, ``now()``, ``'today'``, ``random()``) is not counted either: the
  count would run as another role, at another time, than the statement once approved,
  and could say 0 rows of a statement that deletes them all;
- PostgreSQL reads ``o.archive_order`` as ``archive_order(o)`` when the table has no
  such column (attribute notation, https://www.postgresql.org/docs/current/rowtypes.html
  "Using Composite Types in Queries"), which sqlglot cannot tell from a column: the
  names the ``WHERE`` reads (``CountQueries.columns``) must each be a column of its
  tables, which the estimator checks in the database's catalog before counting.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from sqlglot import exp

from agent_bridge.sql_risk import analyse, folded, parse

VARYING_FUNCTIONS = frozenset(
    {
        *("now", "current_timestamp", "current_date", "current_time", "localtime"),
        *("localtimestamp", "clock_timestamp", "statement_timestamp", "timeofday"),
        *("transaction_timestamp", "unix_timestamp", "unixepoch", "curdate", "curtime"),
        *("sysdate", "utc_timestamp", "utc_date", "utc_time"),
        *("current_user", "session_user", "current_role", "user", "system_user"),
        *("current_schema", "current_setting", "inet_client_addr", "pg_backend_pid"),
        *("rand", "random", "uuid", "gen_random_uuid", "connection_id"),
    }
)
"""Functions whose value depends on who calls them, when, or on chance (by sqlglot's
name for one it knows, else the name as written)."""
VARYING_LITERALS = frozenset({"now", "today", "tomorrow", "yesterday"})
"""Strings a date or time reads as the moment it is read: PostgreSQL's special date and
time inputs, SQLite's ``date('now')``."""

Refusal = Literal["unsupported", "varies"]
"""Why a statement is not counted: not a single ``UPDATE``/``DELETE`` of one table that
calls nothing that may write (``unsupported``), or its ``WHERE`` depends on who runs it
or when (``varies``)."""


class TableRef(NamedTuple):
    """A table the count reads: ``name`` as the dialect writes it (quoted as written,
    for PostgreSQL's ``to_regclass``), ``key`` the name a column qualifies it by (its
    alias, else its own name, folded as the database folds it)."""

    name: str
    key: str


class ColumnRef(NamedTuple):
    """A name the ``WHERE`` reads as a column: ``name`` folded as the database folds it,
    ``table`` its qualifier so folded (``None``: unqualified)."""

    name: str
    table: str | None


class CountQueries(NamedTuple):
    """The reads that count a statement's affected rows, and what they read.

    Attributes:
        count_query: ``SELECT COUNT(*) FROM <table> [WHERE <where>]`` in the dialect.
        plan_query: ``SELECT 1 FROM <table> [WHERE <where>]``, the one ``EXPLAIN``
            estimates.
        tables: Every table the count reads: the statement's first, then its
            subqueries'.
        columns: Every column name the count reads, each to be found in ``tables``.
        kind: What the statement does to its table's rows.
    """

    count_query: str
    plan_query: str
    tables: tuple[TableRef, ...]
    columns: tuple[ColumnRef, ...]
    kind: Literal["UPDATE", "DELETE"]


def count_statements(sql: str, *, dialect: str) -> CountQueries | Refusal:
    """Build the reads that say how many rows ``sql`` would touch, without running it.

    Only a single ``UPDATE`` or ``DELETE`` of one table (no ``USING``/``FROM`` join, no
    ``LIMIT``, no write elsewhere in it, no call of a function that may write, no
    ``WHERE`` that varies with who or when) is counted. Built by sqlglot from the parsed
    statement's table and ``WHERE``; the user's text is never concatenated.

    Returns:
        The ``CountQueries``, or why the statement is not counted.
    """
    risk = analyse(sql, dialect=dialect, argument="")
    if risk.level == "unparseable" or any(w.code == "unsafe_function" for w in risk.warnings):
        return "unsupported"  # the count would call what the statement calls
    statements = parse(sql, dialect) or []
    if len(statements) != 1 or not isinstance(statements[0], exp.Update | exp.Delete):
        return "unsupported"
    statement = statements[0]
    table = statement.this
    extra = {k for k, v in statement.args.items() if v} - {"this", "where", "expressions"}
    if not isinstance(table, exp.Table) or extra:
        return "unsupported"
    writes = statement.find_all(exp.Insert, exp.Update, exp.Delete, exp.Merge)
    if any(node is not statement for node in writes):
        return "unsupported"
    where = statement.args.get("where")
    if where is not None and dialect == "postgres" and _unvouched(where):
        # a field of a row or an expression (``(o).fn``, ``(o.*).fn``: a call by
        # attribute notation no column name shows), a CTE (a table the catalog does not
        # know), a whole row: nothing the catalog can vouch for
        return "unsupported"
    if where is not None and _varies(where):
        return "varies"
    built = []
    for projection in (exp.Count(this=exp.Star()), exp.Literal.number(1)):
        query = exp.select(projection).from_(table.copy())
        if where is not None:
            query = query.where(where.this.copy())
        built.append(query.sql(dialect=dialect))
    read = where if where is not None else table
    tables = [table, *read.find_all(exp.Table)]
    columns = [_column_ref(c) for c in read.find_all(exp.Column)]
    return CountQueries(
        count_query=built[0],
        plan_query=built[1],
        tables=tuple(dict.fromkeys(_table_ref(t, dialect) for t in tables)),
        columns=tuple(dict.fromkeys(c for c in columns if c is not None)),
        kind="DELETE" if isinstance(statement, exp.Delete) else "UPDATE",
    )


def _unvouched(where: exp.Expr) -> bool:
    """Whether ``where`` reads a field of a row or an expression (``exp.Dot``), a whole
    row (``o.*``) or a CTE: on PostgreSQL, what its catalog cannot vouch for."""
    return any(
        isinstance(node, exp.Dot | exp.With)
        or (isinstance(node, exp.Column) and isinstance(node.this, exp.Star))
        for node in where.walk()
    )


def _varies(where: exp.Expr) -> bool:
    """Whether ``where`` calls a function of ``VARYING_FUNCTIONS`` or reads a string of
    ``VARYING_LITERALS``."""
    for node in where.walk():
        if isinstance(node, exp.Func):
            name = node.name if isinstance(node, exp.Anonymous) else node.sql_name()
            if str(name).lower() in VARYING_FUNCTIONS:
                return True
        elif isinstance(node, exp.Literal) and node.is_string:
            if str(node.this).strip().lower() in VARYING_LITERALS:
                return True
    return False


def _table_ref(table: exp.Table, dialect: str) -> TableRef:
    name = ".".join(part.sql(dialect=dialect) for part in table.parts)
    alias = table.args.get("alias")
    key = folded(alias.this) if isinstance(alias, exp.TableAlias) else folded(table.this)
    return TableRef(name=name, key=key)


def _column_ref(column: exp.Column) -> ColumnRef | None:
    if not isinstance(column.this, exp.Identifier):
        return None  # a star: every column, whatever they are
    qualifier = column.args.get("table")
    return ColumnRef(name=folded(column.this), table=folded(qualifier) if qualifier else None)

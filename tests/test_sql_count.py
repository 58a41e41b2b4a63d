"""The reads that count a statement's affected rows: built by sqlglot from the parsed
table and ``WHERE`` (never the user's text), refused when the count would call what
the statement calls or when the ``WHERE`` varies with who runs it or when, and naming
the tables and columns the estimator checks in the catalog (the affected-rows test on
a real database is ``test_row_estimate.py``)."""

from __future__ import annotations

import pytest

from agent_bridge.sql_count import ColumnRef, CountQueries, TableRef, count_statements


@pytest.mark.parametrize(
    ("sql", "count", "plan"),
    [
        (
            "DELETE FROM orders WHERE created_at < '2024-01-01'",
            "SELECT COUNT(*) FROM orders WHERE created_at < '2024-01-01'",
            "SELECT 1 FROM orders WHERE created_at < '2024-01-01'",
        ),
        (
            'UPDATE s."T" AS x SET a = 1 WHERE x.b = 2',
            'SELECT COUNT(*) FROM s."T" AS x WHERE x.b = 2',
            'SELECT 1 FROM s."T" AS x WHERE x.b = 2',
        ),
        ("DELETE FROM orders", "SELECT COUNT(*) FROM orders", "SELECT 1 FROM orders"),
        (
            "DELETE FROM t WHERE id IN (SELECT id FROM u WHERE u.x LIKE '%a%')",
            "SELECT COUNT(*) FROM t WHERE id IN (SELECT id FROM u WHERE u.x LIKE '%a%')",
            "SELECT 1 FROM t WHERE id IN (SELECT id FROM u WHERE u.x LIKE '%a%')",
        ),
    ],
)
def test_the_count_is_built_from_the_parsed_table_and_where(
    sql: str, count: str, plan: str
) -> None:
    built = count_statements(sql, dialect="postgres")
    assert isinstance(built, CountQueries)
    assert (built.count_query, built.plan_query) == (count, plan)


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM t USING u WHERE t.id = u.id",
        "UPDATE t SET a = u.a FROM u WHERE t.id = u.id",
        "DELETE FROM t WHERE purge(id)",  # the count would call it
        "DELETE FROM t WHERE median(id) > 1",  # no PostgreSQL built-in: a user's function
        "DELETE FROM t WHERE id = 1; DELETE FROM u",
        "WITH x AS (DELETE FROM u RETURNING id) DELETE FROM t WHERE id IN (SELECT id FROM x)",
        "INSERT INTO t VALUES (1)",
        "DELETE FROM items i WHERE i.id = 3 AND (i.*).archive",  # fn(i), no column named
        "DELETE FROM items i WHERE (i).archive",
        "DELETE FROM t WHERE id IN (WITH x AS (SELECT 1 AS id) SELECT id FROM x)",
        "SELECT 1",
        "not sql",
    ],
)
def test_what_cannot_be_counted_is_unsupported(sql: str) -> None:
    assert count_statements(sql, dialect="postgres") == "unsupported"


@pytest.mark.parametrize(
    ("sql", "dialect"),
    [
        ("DELETE FROM orders WHERE id > 0 AND current_user <> 'estimator'", "postgres"),
        ("DELETE FROM orders WHERE created_at < now() - INTERVAL '30 days'", "postgres"),
        ("DELETE FROM orders WHERE created_at < 'today'::date", "postgres"),
        ("DELETE FROM orders WHERE created_at < CURRENT_DATE", "postgres"),
        ("DELETE FROM orders WHERE random() < 0.5", "postgres"),
        ("DELETE FROM orders WHERE strftime('%s', 'now') > '1765000000'", "sqlite"),
        ("DELETE FROM orders WHERE created_at < date('NOW', '-1 day')", "sqlite"),
    ],
)
def test_a_where_that_varies_with_who_or_when_is_not_counted(sql: str, dialect: str) -> None:
    """Counted as another role, at another time, than the statement once approved, such
    a count could read 0 rows of a statement that deletes every one."""
    assert count_statements(sql, dialect=dialect) == "varies"


def test_the_tables_and_columns_the_count_reads_are_named_as_the_database_folds_them() -> None:
    built = count_statements(
        'DELETE FROM public."Orders" o WHERE o.archive_order AND "Id" IN '
        "(SELECT Order_Id FROM lines l WHERE l.qty > 0)",
        dialect="postgres",
    )
    assert isinstance(built, CountQueries)
    assert built.tables == (TableRef('public."Orders"', "o"), TableRef("lines", "l"))
    assert built.columns == (
        ColumnRef("archive_order", "o"),
        ColumnRef("Id", None),
        ColumnRef("order_id", None),
        ColumnRef("qty", "l"),
    )

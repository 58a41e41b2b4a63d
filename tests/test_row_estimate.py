"""Affected rows without running the statement, on a real PostgreSQL table of known size
(and on the demo's SQLite): the exact count, the planner's estimate when the count is
too slow, failures that say why without the URL, and the statement never executed
(issue 10, items 4 and 9)."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import SecretStr

from agent_bridge.agent import build_agent, load_tools
from agent_bridge.models import RunState
from agent_bridge.policy import SqlPolicy
from agent_bridge.policy_file import load_policy
from agent_bridge.row_estimate import RowEstimator, _read_only
from agent_bridge.run_driver import RunDriver
from agent_bridge.scripted_model import ScriptedChatModel
from agent_bridge.sql_risk import RowEstimate
from agent_bridge.store import ApprovalStore
from bot.testing import RecordingNotifier
from tests.harness import agent_config
from tests.test_run_driver import new_run

ROWS = 5000
SLOW_WHERE = "id < (SELECT count(*) FROM items a CROSS JOIN items b CROSS JOIN items c)"
"""A WHERE whose count would take hours (5,000³ rows), but that the planner estimates
at once: it has no function calls, so it is one the estimator may count."""
PURGE_FUNCTION = """CREATE FUNCTION purge(item INT) RETURNS BOOLEAN LANGUAGE sql AS
    $$ DELETE FROM items WHERE id = item RETURNING true $$"""


@pytest.fixture
async def items(pg_url: str) -> AsyncIterator[str]:
    """A PostgreSQL table ``items`` of ``ROWS`` rows (and a function that deletes)."""
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute("CREATE TABLE items (id INT PRIMARY KEY, name TEXT NOT NULL)")
        await conn.execute(
            "INSERT INTO items SELECT n, 'item ' || n FROM generate_series(1, %s) n", (ROWS,)
        )
        await conn.execute("ANALYZE items")
        await conn.execute(PURGE_FUNCTION)
    yield pg_url


async def table_state(url: str) -> tuple[int, int]:
    """``(rows, rows whose name is still the seeded one)``: changed by any write."""
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cursor = await conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE name = 'item ' || id) FROM items"
        )
        row = await cursor.fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def postgres(url: str, timeout_s: float = 2.0) -> SqlPolicy:
    return SqlPolicy(
        argument="query",
        dialect="postgres",
        estimate_url=SecretStr(url),
        estimate_timeout_s=timeout_s,
    )


@pytest.mark.parametrize(
    ("sql", "rows"),
    [
        ("DELETE FROM items WHERE id <= 1200", 1200),
        ("DELETE FROM items", ROWS),
        ("UPDATE items SET name = 'gone' WHERE name LIKE 'item 1%'", 1111),
        (
            "UPDATE public.items AS i SET name = 'x' WHERE i.id IN (SELECT id FROM items "
            "WHERE id % 2 = 0)",
            2500,
        ),
        ('/* a long comment */ DELETE FROM "items" WHERE id > 4990', 10),
    ],
)
async def test_the_exact_count_of_an_update_or_delete_and_the_table_is_untouched(
    items: str, sql: str, rows: int
) -> None:
    estimate = await RowEstimator().estimate(sql, postgres(items))
    assert estimate == RowEstimate(method="exact_count", rows=rows)
    assert await table_state(items) == (ROWS, ROWS)  # the statement itself never ran


async def test_a_count_too_slow_falls_back_to_the_planner_estimate(items: str) -> None:
    estimate = await RowEstimator().estimate(
        f"DELETE FROM items WHERE {SLOW_WHERE}", postgres(items, timeout_s=0.05)
    )
    assert estimate.method == "planner_estimate"
    assert estimate.rows is not None and 0 < estimate.rows <= ROWS
    assert await table_state(items) == (ROWS, ROWS)


async def test_the_count_runs_in_a_read_only_transaction_under_its_timeout(items: str) -> None:
    """What the estimator runs cannot write, and stops at its timeout; the session's
    own setting is untouched afterwards (``SET LOCAL``)."""
    async with await psycopg.AsyncConnection.connect(items, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            await _read_only(conn, "DELETE FROM items WHERE id = 1 RETURNING 1", 2.0)
        with pytest.raises(psycopg.errors.QueryCanceled):
            await _read_only(conn, "SELECT pg_sleep(30)", 0.05)
        assert await _read_only(conn, "SELECT count(*) FROM items", 2.0) == [(ROWS,)]
        cursor = await conn.execute("SHOW statement_timeout")
        assert await cursor.fetchone() == ("0",)
    assert await table_state(items) == (ROWS, ROWS)


async def test_a_function_in_the_where_is_never_called_by_the_estimate(items: str) -> None:
    estimate = await RowEstimator().estimate("DELETE FROM items WHERE purge(id)", postgres(items))
    assert estimate == RowEstimate(method="unavailable", reason="unsupported")
    assert await table_state(items) == (ROWS, ROWS)


ARCHIVE_FUNCTION = """CREATE FUNCTION archive(item items) RETURNS BOOLEAN LANGUAGE sql AS
    $$ DELETE FROM items WHERE id = item.id RETURNING true $$"""


async def test_a_function_called_by_attribute_notation_is_never_called_by_the_estimate(
    items: str,
) -> None:
    """PostgreSQL reads ``i.archive`` as ``archive(i)``, where items has no column
    ``archive``: the catalog says so, and the count is not run (it had run the function,
    which only the read-only transaction stopped from deleting)."""
    async with await psycopg.AsyncConnection.connect(items, autocommit=True) as conn:
        await conn.execute(ARCHIVE_FUNCTION)
    for sql in (
        "DELETE FROM items i WHERE i.id = 3 AND i.archive",
        "DELETE FROM items WHERE id IN (SELECT x.id FROM items x WHERE x.archive)",
        'DELETE FROM items WHERE items."archive"',
        "DELETE FROM items i WHERE i.archive AND EXISTS (SELECT 1 FROM gone g)",
    ):
        estimate = await RowEstimator().estimate(sql, postgres(items))
        assert estimate == RowEstimate(method="unavailable", reason="unresolved"), sql
    counted = await RowEstimator().estimate(
        'DELETE FROM items i WHERE i.id = 3 AND i."name" IS NOT NULL', postgres(items)
    )
    assert counted == RowEstimate(method="exact_count", rows=1)
    assert await table_state(items) == (ROWS, ROWS)


async def test_a_where_that_depends_on_who_counts_is_not_counted(items: str) -> None:
    """As the estimate's role the count would read 0 rows of a statement that, run as
    the tool's, deletes every one."""
    sql = "DELETE FROM items WHERE id > 0 AND current_user <> 'estimator'"
    estimate = await RowEstimator().estimate(sql, postgres(items))
    assert estimate == RowEstimate(method="unavailable", reason="varies")


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO items VALUES (9999, 'new')",
        "DELETE FROM items USING items b WHERE items.id = b.id",
        "DELETE FROM items WHERE id = 1; DELETE FROM items WHERE id = 2",
        "not sql at all",
    ],
)
async def test_a_statement_that_cannot_be_counted_is_unsupported(items: str, sql: str) -> None:
    estimate = await RowEstimator().estimate(sql, postgres(items))
    assert estimate == RowEstimate(method="unavailable", reason="unsupported")
    assert await table_state(items) == (ROWS, ROWS)


async def test_failures_say_why_and_never_log_the_url(
    items: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    secret_url = "postgresql://estimator:s3cret-pass@127.0.0.1:1/nowhere"
    unreachable = await RowEstimator().estimate(
        "DELETE FROM items WHERE id = 1", postgres(secret_url), log_context="run=r1"
    )
    assert unreachable == RowEstimate(method="unavailable", reason="unreachable")
    no_table = await RowEstimator().estimate("DELETE FROM missing WHERE id = 1", postgres(items))
    assert no_table == RowEstimate(method="unavailable", reason="error")
    logged = caplog.text
    assert "run=r1 affected-rows estimate unavailable: OperationalError" in logged
    assert "UndefinedTable" in logged
    assert "s3cret-pass" not in logged and "estimator" not in logged
    assert items.rsplit("/", 1)[1] not in logged  # not even the database's name


# --- SQLite (the demo) -------------------------------------------------------------------


@pytest.fixture
def orders_db(tmp_path: Path) -> Path:
    path = tmp_path / "workspace" / "orders.db"
    path.parent.mkdir()
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, created_at TEXT)")
        conn.executemany(
            "INSERT INTO orders VALUES (?, ?)",
            [(n, "2023-01-01" if n <= 2 else "2025-01-01") for n in range(1, 6)],
        )
    return path


def sqlite(timeout_s: float = 2.0) -> SqlPolicy:
    return SqlPolicy(
        argument="query",
        dialect="sqlite",
        estimate_url=SecretStr("sqlite:///{workspace_dir}/orders.db"),
        estimate_timeout_s=timeout_s,
    )


def orders(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT count(*) FROM orders").fetchone()[0])


async def test_sqlite_counts_read_only_in_the_workspace(orders_db: Path) -> None:
    estimator = RowEstimator(workspace_dir=orders_db.parent)
    sql = "DELETE FROM orders WHERE created_at < '2024-01-01'"
    assert await estimator.estimate(sql, sqlite()) == RowEstimate(method="exact_count", rows=2)
    assert orders(orders_db) == 5


async def test_sqlite_stops_a_slow_count_at_its_timeout(orders_db: Path) -> None:
    endless = (
        "DELETE FROM orders WHERE id < (WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL "
        "SELECT x + 1 FROM n) SELECT count(*) FROM n)"
    )
    estimator = RowEstimator(workspace_dir=orders_db.parent)
    assert await estimator.estimate(endless, sqlite(timeout_s=0.1)) == RowEstimate(
        method="unavailable", reason="timeout"
    )
    assert orders(orders_db) == 5


async def test_a_missing_sqlite_file_is_unreachable_and_not_created(tmp_path: Path) -> None:
    estimator = RowEstimator(workspace_dir=tmp_path / "nowhere")
    estimate = await estimator.estimate("DELETE FROM orders WHERE id = 1", sqlite())
    assert estimate == RowEstimate(method="unavailable", reason="unreachable")
    assert not (tmp_path / "nowhere").exists()


# --- in the run driver ---------------------------------------------------------------------


class CountingEstimator(RowEstimator):
    """The real estimator, counting how often it is asked."""

    calls = 0

    async def estimate(
        self, sql: object, policy: SqlPolicy, *, log_context: str = ""
    ) -> RowEstimate:
        self.calls += 1
        return await super().estimate(sql, policy, log_context=log_context)


async def test_a_request_is_estimated_once_before_its_card_and_keeps_its_estimate(
    sqlite_store: ApprovalStore, tmp_path: Path
) -> None:
    settings = agent_config(tmp_path / "ws")
    policy = load_policy(Path(__file__).parent / "fixtures" / "sql_risk_policy.yml")
    estimator = CountingEstimator(workspace_dir=settings.workspace_dir)
    notifier = RecordingNotifier(sqlite_store)
    driver = RunDriver(
        store=sqlite_store,
        graph=build_agent(
            tools=load_tools(settings),
            model=ScriptedChatModel(),
            policy=policy,
            checkpointer=InMemorySaver(),
        ),
        notifier=notifier,
        policy=policy,
        args_schemas={},
        estimator=estimator,
    )
    query = "DELETE FROM orders WHERE created_at < '2024-01-01'"
    run = await new_run(
        sqlite_store,
        json.dumps({"tool_calls": [{"name": "execute_sql", "args": {"query": query}}]}),
    )
    assert await driver.drive(run) == (RunState.WAITING, None)
    (request,) = await sqlite_store.requests_for_run(run.run_id)
    assert request.risk is not None
    assert request.risk.rows == RowEstimate(method="exact_count", rows=2)
    assert [e for e, _ in notifier.events] == ["started", "card"]  # posted with its rows
    assert estimator.calls == 1

    assert await driver.drive(await sqlite_store.get_run(run.run_id)) == (RunState.WAITING, None)
    assert estimator.calls == 1  # the stored request wins: no second estimate
    assert await sqlite_store.requests_for_run(run.run_id) == [request]


async def test_what_foreign_keys_and_triggers_change_too_is_named_not_counted(
    items: str,
) -> None:
    """``DELETE FROM items WHERE id = 1`` is one row of items, and every row of ``lines``
    its foreign key cascades to, and whatever a trigger does: the count says 1, and the
    estimate names ``lines`` and the trigger (an ``UPDATE`` of a column no key reads
    names what fires on an update)."""
    async with await psycopg.AsyncConnection.connect(items, autocommit=True) as conn:
        await conn.execute(
            "CREATE TABLE lines (id SERIAL, item INT REFERENCES items ON DELETE CASCADE)"
        )
        await conn.execute("CREATE TABLE notes (item INT REFERENCES items ON DELETE SET NULL)")
        await conn.execute("CREATE TABLE kept (item INT REFERENCES items)")  # restricts only
        await conn.execute("INSERT INTO lines (item) SELECT 1 FROM generate_series(1, 100)")
        await conn.execute(
            "CREATE FUNCTION noted() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RETURN OLD; END $$"
        )
        await conn.execute(
            "CREATE TRIGGER items_audit AFTER DELETE ON items FOR EACH ROW EXECUTE FUNCTION noted()"
        )
    deleting = await RowEstimator().estimate("DELETE FROM items WHERE id = 1", postgres(items))
    assert deleting == RowEstimate(
        method="exact_count", rows=1, cascades=("lines", "notes"), triggers=("items_audit",)
    )
    updating = await RowEstimator().estimate(
        "UPDATE items SET name = 'x' WHERE id = 1", postgres(items)
    )
    assert updating == RowEstimate(method="exact_count", rows=1)  # ON UPDATE: no action
    assert await table_state(items) == (ROWS, ROWS)

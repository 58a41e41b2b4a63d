"""SQL risk: real statements for every warning and level, read from the whole statement
in its own dialect; the policy's approvals by risk and rows; the risk on cards and
modals, escaped, even where the statement shown is cut (issue 10, items 3 and 9)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest
from pydantic import SecretStr

from agent_bridge.interrupts import Placement
from agent_bridge.models import ApprovalState, Decision, Run
from agent_bridge.policy import ApprovalsByRisk, Policy, SqlPolicy, ToolPolicy
from agent_bridge.policy_file import load_policy
from agent_bridge.predicates import sql_is_destructive, sql_is_not_read_only
from agent_bridge.sql_count import count_statements
from agent_bridge.sql_risk import (
    POSTGRES_CALLABLE,
    POSTGRES_NOT_BUILT_IN,
    SAFE_FUNCTIONS,
    SQL_ANALYSIS_MAX_CHARS,
    RiskLevel,
    RowEstimate,
    SqlRisk,
    analyse,
)
from bot.blocks import render_approval, render_decided
from bot.modals import render_full_args_modal
from bot.risk_blocks import risk_blocks
from tests.test_policy import assert_refused
from tests.test_render import (
    RUN,
    assert_no_markup,
    assert_valid_message,
    assert_valid_view,
    make_request,
    strings,
)

HIDDEN_DELETE = "/* " + "quarterly archive notes " * 320 + "*/\nDELETE FROM orders"
"""A ``DELETE`` without ``WHERE`` after about 7,700 characters of comment."""


def risk(sql: str, dialect: str = "postgres") -> SqlRisk:
    return analyse(sql, dialect=dialect, argument="query")


def codes(found: SqlRisk) -> list[str]:
    return [w.code for w in found.warnings]


@pytest.mark.parametrize(
    ("sql", "dialect", "level", "kinds", "tables", "warning"),
    [
        (
            "SELECT id, lower(customer) FROM orders WHERE total > 10",
            "postgres",
            "read_only",
            ("SELECT",),
            ("orders",),
            None,
        ),
        (
            "SELECT a FROM t UNION SELECT b FROM s.u",
            "postgres",
            "read_only",
            ("SELECT",),
            ("t", "s.u"),
            None,
        ),
        ("DELETE FROM orders", "postgres", "destructive", ("DELETE",), ("orders",), "no_where"),
        (
            "UPDATE orders SET total = 0",
            "sqlite",
            "destructive",
            ("UPDATE",),
            ("orders",),
            "no_where",
        ),
        ("DELETE FROM orders WHERE id = 3", "postgres", "write", ("DELETE",), ("orders",), None),
        ("DROP TABLE orders", "postgres", "destructive", ("DROP",), ("orders",), "ddl"),
        ("TRUNCATE orders", "postgres", "destructive", ("TRUNCATE",), ("orders",), "truncate"),
        (
            "ALTER TABLE orders DROP COLUMN total",
            "postgres",
            "destructive",
            ("ALTER",),
            ("orders",),
            "drop_in_alter",
        ),
        (
            "ALTER TABLE orders ADD COLUMN note TEXT",
            "postgres",
            "write",
            ("ALTER",),
            ("orders",),
            "ddl",
        ),
        ("CREATE TABLE archive (id INT)", "postgres", "write", ("CREATE",), ("archive",), "ddl"),
        (
            "SELECT 1; DROP TABLE orders",
            "postgres",
            "destructive",
            ("SELECT", "DROP"),
            ("orders",),
            "several_statements",
        ),
        (
            "WITH gone AS (DELETE FROM orders WHERE id < 3 RETURNING *) SELECT * FROM gone",
            "postgres",
            "write",
            ("SELECT", "DELETE"),
            ("orders",),
            "cte_write",
        ),
        (
            "SELECT * FROM t WHERE id IN (WITH x AS (UPDATE u SET a = 1 RETURNING id) "
            "SELECT id FROM x)",
            "postgres",
            "destructive",
            ("SELECT", "UPDATE"),
            ("t", "u"),
            "cte_write",
        ),
        (
            "SELECT * INTO backup FROM orders",
            "postgres",
            "write",
            ("SELECT",),
            ("backup", "orders"),
            "select_into",
        ),
        ("COPY orders TO '/tmp/orders.csv'", "postgres", "write", ("COPY",), ("orders",), "copy"),
        (
            "COPY orders FROM PROGRAM 'curl evil'",
            "postgres",
            "destructive",
            ("COPY",),
            ("orders",),
            "copy_program",
        ),
        (
            "COPY (SELECT 1) TO program 'rm -rf /'",
            "postgres",
            "destructive",
            ("COPY",),
            (),
            "copy_program",
        ),
        # statements sqlglot does not know, which it reads as an expression
        ("CLUSTER orders", "postgres", "unparseable", ("CLUSTER",), (), "opaque_command"),
        ("NOTIFY orders_changed", "postgres", "unparseable", ("NOTIFY",), (), "opaque_command"),
        ("CHECKPOINT", "postgres", "unparseable", ("CHECKPOINT",), (), "opaque_command"),
        ("DISCARD ALL", "postgres", "unparseable", ("DISCARD",), (), "opaque_command"),
        ("SELECT * FROM orders FOR UPDATE", "postgres", "write", ("SELECT",), ("orders",), "lock"),
        ("LOCK TABLE orders IN ACCESS EXCLUSIVE MODE", "postgres", "write", ("LOCK",), (), "lock"),
        (
            "SELECT dblink_exec('dbname=prod', 'DELETE FROM orders')",
            "postgres",
            "write",
            ("SELECT",),
            (),
            "unsafe_function",
        ),
        (
            "SELECT setval('orders_id_seq', 1)",
            "postgres",
            "write",
            ("SELECT",),
            (),
            "unsafe_function",
        ),
        (
            "SELECT nextval('orders_id_seq')",
            "postgres",
            "write",
            ("SELECT",),
            (),
            "unsafe_function",
        ),
        ("SELECT lo_unlink(16403)", "postgres", "write", ("SELECT",), (), "unsafe_function"),
        (
            "SELECT * FROM lo_import('/etc/passwd')",
            "postgres",
            "write",
            ("SELECT",),
            (),
            "unsafe_function",
        ),
        (
            "SELECT pg_terminate_backend(42)",
            "postgres",
            "write",
            ("SELECT",),
            (),
            "unsafe_function",
        ),
        ("SELECT purge_old_orders()", "postgres", "write", ("SELECT",), (), "unsafe_function"),
        (
            "SELECT public.lower(customer) FROM orders",
            "postgres",
            "write",
            ("SELECT",),
            ("orders",),
            "unsafe_function",
        ),
        ("SELECT pg_catalog.lower('X')", "postgres", "read_only", ("SELECT",), (), None),
        (
            "DO $$ BEGIN DELETE FROM orders; END $$",
            "postgres",
            "unparseable",
            ("DO",),
            (),
            "opaque_command",
        ),
        ("CALL archive_orders()", "postgres", "unparseable", ("CALL",), (), "opaque_command"),
        ("this is not sql ((", "postgres", "unparseable", (), (), "unparseable"),
        ("", "postgres", "unparseable", (), (), "unparseable"),
        ("-- only a comment", "sqlite", "unparseable", (), (), "unparseable"),
    ],
)
def test_each_statement_has_its_level_kinds_tables_and_warning(
    sql: str,
    dialect: str,
    level: RiskLevel,
    kinds: tuple[str, ...],
    tables: tuple[str, ...],
    warning: str | None,
) -> None:
    found = risk(sql, dialect)
    assert (found.level, found.kinds, found.tables) == (level, kinds, tables)
    if warning is None:
        assert found.warnings == ()
    else:
        assert warning in codes(found)


def test_a_function_warning_names_the_function() -> None:
    found = risk("SELECT count(*), setval('s', 1), public.purge(1) FROM t")
    named = [w.names for w in found.warnings if w.code == "unsafe_function"]
    assert named == [("setval",), ("public.purge",)]
    assert "setval" in found.warnings[0].text() and "may write" in found.warnings[0].text()


def test_common_pure_functions_stay_read_only() -> None:
    sql = (
        "SELECT count(*), sum(total), avg(total), coalesce(a, b), nullif(a, 0), "
        "round(total, 2), upper(customer), length(customer), substring(customer, 1, 2), "
        "now(), current_date, date_trunc('day', created_at), extract(year FROM created_at), "
        "cast(total AS INT), row_number() OVER (ORDER BY id), string_agg(customer, ',') "
        "FROM orders GROUP BY a, b, total, customer, created_at, id"
    )
    assert risk(sql).level == "read_only"
    assert risk(
        "SELECT strftime('%Y', created_at), ifnull(a, 0), total(x) FROM t", "sqlite"
    ).level == ("read_only")
    assert "pg_sleep" not in SAFE_FUNCTIONS and "nextval" not in SAFE_FUNCTIONS


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT median(total) FROM orders",
        'SELECT "median"(total) FROM orders',
        "SELECT nvl(a, 0) FROM orders",  # sqlglot reads it as COALESCE
        "SELECT id FROM orders WHERE group_concat(customer) IS NULL",
        "SELECT uuid() FROM orders",
        "SELECT len(customer) FROM orders",  # sqlglot reads it as LENGTH
        "SELECT locate('a', customer), startswith(customer, 'x') FROM orders",
        "SELECT archive_all(id) FROM orders",  # a name on no list at all
    ],
)
def test_a_safe_name_postgresql_does_not_have_calls_a_users_function(sql: str) -> None:
    """On PostgreSQL a name of the safe list that is no built-in calls whatever function
    the database has by that name (a ``median`` of its own that deletes)."""
    found = risk(sql, "postgres")
    assert found.level == "write" and "unsafe_function" in codes(found)
    assert sql_is_not_read_only(SimpleNamespace(tool_call={"args": {"query": sql}}))
    deleting = f"DELETE FROM orders WHERE ({sql}) IS NULL"
    assert count_statements(deleting, dialect="postgres") == "unsupported"


async def test_the_safe_names_postgresql_has_are_its_built_ins(pg_url: str) -> None:
    """``POSTGRES_NOT_BUILT_IN`` is exactly the safe names that a live server's
    ``pg_catalog`` has no function of, but for those its grammar reads as syntax."""
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        rows = await (
            await conn.execute(
                "SELECT DISTINCT proname FROM pg_proc p JOIN pg_namespace n "
                "ON n.oid = p.pronamespace WHERE nspname = 'pg_catalog'"
            )
        ).fetchall()
    built_in = {name for (name,) in rows}
    syntax = {"all", "any", "array", "case", "cast", "coalesce", "collate", "current_date"}
    syntax |= {"current_time", "current_timestamp", "exists", "greatest", "least"}
    syntax |= {"localtime", "localtimestamp", "nullif", "row", "trim"}
    assert SAFE_FUNCTIONS - built_in - syntax == POSTGRES_NOT_BUILT_IN
    assert POSTGRES_CALLABLE - built_in <= syntax  # what stays read-only is PostgreSQL's


@pytest.mark.parametrize(
    ("dialect", "sql"),
    [
        (
            "postgres",
            "SELECT CASE WHEN a THEN 1 END, EXISTS (SELECT 1), ARRAY[1, 2], a = ANY(b), "
            'a > ALL(b), ROW(1, 2), a IS DISTINCT FROM b, a COLLATE "C", '
            "ts AT TIME ZONE 'UTC', DATE '2024-01-01', INTERVAL '1 day', a::text, "
            "SUBSTRING(a FROM 1 FOR 2), TRIM(BOTH 'x' FROM a), POSITION('a' IN b), "
            "OVERLAY(a PLACING 'x' FROM 1), j -> 'k', j ->> 'k', j @> '{}', arr[1], "
            "a ILIKE 'x', a SIMILAR TO 'x', count(*) FILTER (WHERE a), "
            "percentile_cont(0.5) WITHIN GROUP (ORDER BY a), a IN (SELECT 1), a || b "
            "FROM t, LATERAL (SELECT 1) l GROUP BY GROUPING SETS ((a), ()) "
            "ORDER BY a NULLS FIRST",
        ),
        (
            "sqlite",
            "SELECT CASE a WHEN 1 THEN 2 END, a GLOB 'x', json_extract(j, '$.a'), "
            "date('now'), datetime('now', '-1 day'), substr(a, 1, 2), instr(a, 'x'), "
            "iif(a, 1, 2), typeof(a), group_concat(a, ','), total(a), printf('%d', a), "
            "unicode(a), zeroblob(1), strftime('%Y', a), julianday(a) FROM t",
        ),
        (
            "mysql",
            "SELECT IF(a, 1, 2), IFNULL(a, 0), CONCAT(a, b), DATE_FORMAT(d, '%Y'), NOW(), "
            "DATE_ADD(d, INTERVAL 1 DAY), GROUP_CONCAT(a SEPARATOR ','), LAST_INSERT_ID(), "
            "JSON_EXTRACT(j, '$.a'), a DIV 2 FROM t",
        ),
    ],
)
def test_syntax_sqlglot_models_as_functions_stays_read_only(dialect: str, sql: str) -> None:
    found = risk(sql, dialect)
    assert (found.level, found.warnings) == ("read_only", ())


def test_the_dangerous_part_is_found_after_7500_characters_of_comment() -> None:
    assert len(HIDDEN_DELETE) > 7500
    found = risk(HIDDEN_DELETE)
    assert found.level == "destructive" and found.kinds == ("DELETE",)
    assert [w.names for w in found.warnings] == [("DELETE orders",)]


def test_comments_hide_text_per_dialect() -> None:
    nested = "SELECT 1 /* outer /* inner */ DELETE FROM orders */"
    # PostgreSQL nests block comments: all of it is a comment. SQLite ends the comment at
    # the first */ and is left with "DELETE FROM orders */": not SQL it can read.
    assert risk(nested, "postgres").level == "read_only"
    assert risk(nested, "sqlite").level == "unparseable"
    assert risk("SELECT 1 -- ; DROP TABLE orders").level == "read_only"
    assert risk("SELECT 1; -- harmless\nDROP TABLE orders").level == "destructive"


def test_quoted_identifiers_are_kept_as_written() -> None:
    found = risk('DELETE FROM "Sales"."Old ""Orders""" WHERE id = 1')
    assert found.tables == ('"Sales"."Old ""Orders"""',)
    assert risk("SELECT * FROM `shop`.`orders`", "mysql").tables == ("`shop`.`orders`",)


def test_a_dialect_reads_only_its_own_syntax() -> None:
    backticks = "DELETE FROM `orders`"
    assert risk(backticks, "mysql").level == "destructive"
    assert risk(backticks, "postgres").level == "unparseable"


def test_a_cte_s_column_list_is_no_call() -> None:
    found = risk('WITH recent(n) AS (SELECT 1), "Old"(m) AS (SELECT 2) SELECT * FROM recent')
    assert (found.level, found.warnings) == ("read_only", ())


def test_cte_names_are_not_tables() -> None:
    found = risk("WITH recent AS (SELECT * FROM orders) SELECT * FROM recent")
    assert found.tables == ("orders",) and found.level == "read_only"


def test_anything_but_text_and_huge_text_are_unparseable() -> None:
    assert codes(analyse(None, dialect="postgres", argument="query")) == ["not_text"]
    assert codes(analyse(42, dialect="postgres", argument="query")) == ["not_text"]
    assert codes(risk("SELECT 1 -- " + "-" * SQL_ANALYSIS_MAX_CHARS)) == ["too_long"]
    assert risk("SELECT " + "(" * 5000 + "1" + ")" * 5000).level in ("read_only", "unparseable")


# --- the policy ---------------------------------------------------------------------

SQL = SqlPolicy(
    argument="query", dialect="postgres", estimate_url=SecretStr("postgresql://ro@db/app")
)
BY_RISK = ApprovalsByRisk(read_only=1, write=1, destructive=2, unparseable=3)


def with_rows(found: SqlRisk, rows: int | None) -> SqlRisk:
    estimate = (
        RowEstimate(method="exact_count", rows=rows)
        if rows is not None
        else RowEstimate(method="unavailable", reason="timeout")
    )
    return found.model_copy(update={"rows": estimate})


def test_required_approvals_by_risk_level_and_rows() -> None:
    tool = ToolPolicy(
        sql=SQL, required_approvals=BY_RISK, approvals_above_rows={1000: 2, 100_000: 3}
    )
    assert tool.approvals_for(risk("SELECT * FROM orders")) == 1
    assert tool.approvals_for(with_rows(risk("DELETE FROM orders WHERE id < 9"), 12)) == 1
    assert tool.approvals_for(with_rows(risk("DELETE FROM orders WHERE id < 9"), 1000)) == 1
    assert tool.approvals_for(with_rows(risk("DELETE FROM orders WHERE id < 9"), 1001)) == 2
    assert tool.approvals_for(with_rows(risk("UPDATE orders SET a = 1 WHERE b"), 250_000)) == 3
    assert tool.approvals_for(with_rows(risk("DELETE FROM orders"), 5)) == 2
    assert tool.approvals_for(risk("DO $$ BEGIN END $$")) == 3
    # rows not known for a write: above every threshold (fails closed)
    assert tool.approvals_for(with_rows(risk("DELETE FROM orders WHERE id < 9"), None)) == 3
    assert tool.approvals_for(risk("INSERT INTO orders VALUES (1)")) == 3
    assert tool.approvals_for(risk("DROP TABLE orders")) == 3  # its rows are not known either
    # the planner's estimate when the count timed out: a guess, not rows known
    guessed = risk("DELETE FROM orders WHERE id > 0 AND lower(md5(a)) = md5(a)")
    estimate = RowEstimate(method="planner_estimate", rows=1000)
    assert tool.approvals_for(guessed.model_copy(update={"rows": estimate})) == 3
    # an exact count that leaves out what cascades or triggers change beside it
    one = risk("DELETE FROM orders WHERE id = 1")
    for counted in (
        RowEstimate(method="exact_count", rows=1, cascades=("lines",)),
        RowEstimate(method="exact_count", rows=1, triggers=("orders_audit",)),
    ):
        assert tool.approvals_for(one.model_copy(update={"rows": counted})) == 3
    by_risk_only = ToolPolicy(sql=SQL, required_approvals=BY_RISK)
    assert by_risk_only.rules(risk("DROP TABLE orders")).required_approvals == 2
    assert ToolPolicy(sql=SQL, required_approvals=2).rules(risk("SELECT 1")).required_approvals == 2


def test_the_request_stores_the_risk_and_its_effective_approvals() -> None:
    policy = Policy(tools={"execute_sql": ToolPolicy(sql=SQL, required_approvals=BY_RISK)})
    run = Run(run_id="r1", thread_id="t1", task="x", channel_id="C1", user_id="U1")
    placement = Placement(run=run, policy=policy, args_schemas={})
    interrupt = SimpleNamespace(id="i1")
    request = placement.request(
        interrupt,  # type: ignore[arg-type]
        {"name": "execute_sql", "args": {"query": HIDDEN_DELETE}},
        index=0,
        mode="per_call",
        batch_size=1,
        tool_call_id="c1",
        allowed=["approve", "reject"],
    )
    assert request.risk is not None and request.risk.level == "destructive"
    assert request.rules.required_approvals == 2
    counted = placement.with_rows(request, RowEstimate(method="exact_count", rows=5))
    assert counted.risk is not None and counted.risk.rows == RowEstimate(
        method="exact_count", rows=5
    )
    assert counted.rules.required_approvals == 2
    other = placement.request(
        interrupt,  # type: ignore[arg-type]
        {"name": "write_file", "args": {"query": "DROP TABLE x"}},
        index=1,
        mode="per_call",
        batch_size=1,
        tool_call_id="c2",
        allowed=["approve"],
    )
    assert other.risk is None


def test_the_sql_keys_are_read_from_yaml(tmp_path: Path) -> None:
    path = tmp_path / "policy.yml"
    path.write_text(
        "tools:\n"
        "  execute_sql:\n"
        "    sql: {argument: query, dialect: postgres, estimate_url: 'postgresql://ro@db/app',"
        " estimate_timeout_s: 0.5}\n"
        "    required_approvals: {read_only: 1, write: 1, destructive: 2, unparseable: 2}\n"
        "    approvals_above_rows: {1000: 2}\n"
    )
    tool = load_policy(path).gated("execute_sql")
    assert tool is not None and tool.sql is not None
    assert tool.sql.estimate_timeout_s == 0.5 and tool.approvals_above_rows == {1000: 2}
    assert "ro@db" not in repr(tool)  # the URL is a secret


@pytest.mark.parametrize(
    ("yaml_text", "line", "problem"),
    [
        (
            "tools:\n  x:\n    required_approvals: {read_only: 1, write: 2}\n",
            3,
            "required_approvals.destructive: Field required",
        ),
        (
            "tools:\n  x:\n    sql: {argument: q, dialect: postgres}\n"
            "    required_approvals: {read_only: 2, write: 1, destructive: 2, unparseable: 2}\n",
            4,
            "write (1) needs fewer approvals than read_only (2)",
        ),
        (
            "tools:\n  x:\n    sql: {argument: q, dialect: postgres}\n"
            "    required_approvals: {read_only: 1, write: 2, destructive: 2, unparseable: 1}\n",
            4,
            "unparseable (1) needs fewer approvals than write (2)",
        ),
        (
            "tools:\n  x:\n    required_approvals: {read_only: 1, write: 1, destructive: 2, "
            "unparseable: 2}\n",
            2,
            "needs a sql: block",
        ),
        (
            "tools:\n  x:\n    sql: {argument: q, dialect: postgres}\n"
            "    approvals_above_rows: {1000: 2}\n",
            2,
            "approvals_above_rows needs sql.estimate_url",
        ),
        (
            "tools:\n  x:\n    sql: {argument: q, dialect: postgres, estimate_url: 'postgresql://h/d'}\n"
            "    approvals_above_rows: {10: 3, 1000: 2}\n",
            2,
            "must not ask fewer approvals for more rows",
        ),
        (
            "tools:\n  x:\n    sql: {argument: q, dialect: postgres, estimate_url: 'postgresql://h/d'}\n"
            "    approvals_above_rows: {}\n",
            2,
            "approvals_above_rows is empty",
        ),
        (
            "tools:\n  x:\n    sql: {argument: q, dialect: postgresql9}\n",
            3,
            "'postgresql9' is not a sqlglot dialect",
        ),
        ("tools:\n  x:\n    sql: {dialect: postgres}\n", 3, "sql.argument: Field required"),
        (
            "tools:\n  x:\n    sql: {argument: q, dialect: sqlite, "
            "estimate_url: 'sqlite:///{workspace}/o.db'}\n",
            3,
            "{workspace} is not known here; the one field is {workspace_dir}",
        ),
        (
            "tools:\n  x:\n    gated: false\n    approvers: [S0DBA]\n",
            2,
            "gated: false runs the tool without review, so approvers would never apply",
        ),
        (
            "tools:\n  x:\n    sql: {argument: q, dialect: postgres, estimate_url: 'mysql://h/d'}\n",
            3,
            "must be a postgresql://... or sqlite:///... URL",
        ),
        (
            "tools:\n  x:\n    sql: {argument: q, dialect: postgres, estimate_timeout_s: 0}\n",
            3,
            "estimate_timeout_s: Input should be greater than 0",
        ),
        (
            "tools:\n  x:\n    sql: {argument: q, dialect: postgres, estmate_url: 'x'}\n",
            3,
            "sql.estmate_url: Extra inputs are not permitted",
        ),
        (
            "tools:\n  x:\n    approvers: [U0A, U0B]\n    sql: {argument: q, dialect: postgres}\n"
            "    required_approvals: {read_only: 1, write: 1, destructive: 3, unparseable: 3}\n",
            2,
            "a call may need 3 approvals (by risk or rows) but approvers names only 2 people",
        ),
        (
            "tools:\n  x:\n    required_approvals: 0\n",
            3,
            "required_approvals: Input should be greater than or equal to 1",
        ),
    ],
)
def test_nonsense_sql_keys_are_refused_with_their_name_and_line(
    tmp_path: Path, yaml_text: str, line: int, problem: str
) -> None:
    refusal = assert_refused(tmp_path, yaml_text, line=line, problem=problem)
    assert "h/d" not in refusal  # never the URL


# --- the predicates -------------------------------------------------------------------


def call(query: str) -> SimpleNamespace:
    return SimpleNamespace(tool_call={"name": "execute_sql", "args": {"query": query}, "id": "1"})


@pytest.mark.parametrize(
    "query",
    [
        "SELECT dblink_exec('dbname=prod', 'DELETE FROM orders')",
        "SELECT setval('orders_id_seq', 1)",
        "SELECT lo_unlink(16403)",
        "SELECT purge_old_orders()",
        "SELECT * FROM orders FOR UPDATE",
        "SELECT id FROM orders WHERE purge(id)",
    ],
)
def test_a_select_of_a_function_that_may_write_is_never_read_only(query: str) -> None:
    assert sql_is_not_read_only(call(query)) is True
    assert sql_is_destructive(call(query)) is False


def test_sql_is_destructive_reviews_only_destructive_and_unreadable_sql() -> None:
    assert sql_is_destructive(call("DELETE FROM orders WHERE id = 1")) is False
    assert sql_is_destructive(call("DELETE FROM orders")) is True
    assert sql_is_destructive(call(HIDDEN_DELETE)) is True
    assert sql_is_destructive(call("not sql ((")) is True
    assert sql_is_not_read_only(call("SELECT count(*) FROM orders")) is False


# --- on the card ----------------------------------------------------------------------


def sql_request(query: str, **changes: Any) -> Any:
    found = risk(query, changes.pop("dialect", "postgres"))
    rows = changes.pop("rows", None)
    if rows is not None:
        found = found.model_copy(update={"rows": rows})
    return make_request(
        tool_name="execute_sql",
        args={"query": query},
        allowed_decisions=["approve", "reject"],
        args_schema={"type": "object", "properties": {"query": {"type": "string"}}},
        risk=found,
        **changes,
    )


def card_text(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(strings(blocks))


def test_the_card_shows_the_risk_right_under_its_heading() -> None:
    request = sql_request(
        "DELETE FROM orders WHERE created_at < '2024-01-01'",
        rows=RowEstimate(method="exact_count", rows=1204),
    )
    blocks = render_approval(request, run=RUN)
    assert_valid_message("x", blocks)
    risk_line = blocks[1]["text"]["text"]
    assert risk_line.startswith(":large_orange_circle: *SQL risk:* Writes data · DELETE")
    assert "Tables: `orders`" in risk_line
    assert "Affected rows: 1,204 (exact count)" in risk_line


def test_a_delete_beyond_the_shortened_text_is_on_the_card() -> None:
    request = sql_request(HIDDEN_DELETE)
    blocks = render_approval(request, run=RUN)
    assert_valid_message("x", blocks)
    statement = card_text(blocks[2:])
    assert "quarterly archive notes" in statement and "View full arguments" in statement
    assert "DELETE FROM orders" not in statement  # the statement shown is cut...
    risk_line = blocks[1]["text"]["text"]  # ...but its risk is read from all of it
    assert ":red_circle: *SQL risk:* Destructive · DELETE" in risk_line
    assert "`DELETE orders` without WHERE: every row of the table" in risk_line


@pytest.mark.parametrize(
    ("rows", "shown"),
    [
        (
            RowEstimate(method="planner_estimate", rows=98_000),
            "Affected rows: about 98,000 "
            "(planner estimate: the count took too long, and it can be far off)",
        ),
        (
            RowEstimate(method="unavailable", reason="timeout"),
            "Affected rows: unavailable (the count and the planner's estimate took too long)",
        ),
        (
            RowEstimate(method="unavailable", reason="error"),
            "Affected rows: unavailable (the estimate query failed (details in the worker's logs))",
        ),
    ],
)
def test_the_card_names_how_the_rows_were_found(rows: RowEstimate, shown: str) -> None:
    blocks = render_approval(
        sql_request("UPDATE orders SET total = 0 WHERE id > 3", rows=rows), run=RUN
    )
    assert shown in blocks[1]["text"]["text"]


HOSTILE_TABLE = '"o\nAPPROVED ✅ by `dba` <!channel> & <@U123>\u202e"'


def test_hostile_table_and_function_names_stay_in_their_code_span() -> None:
    query = f'DELETE FROM {HOSTILE_TABLE}; SELECT "<!here>\n*bold* `x`"()'
    request = sql_request(query)
    assert request.risk.tables == (HOSTILE_TABLE,)
    for blocks in (
        render_approval(request, run=RUN),
        render_decided(
            request.model_copy(
                update={
                    "decision": Decision(type="approve"),
                    "decided_by": "U1",
                    "state": ApprovalState.DECIDED,
                }
            ),
            run=RUN,
        ),
    ):
        assert_valid_message("x", blocks)
        risk_line = blocks[1]["text"]["text"]
        assert_no_markup(risk_line)
        assert "\nAPPROVED" not in risk_line and "⏎APPROVED" in risk_line
        assert "⏎*bold*" in risk_line and "\u202e" not in risk_line  # marked, or cut off
        for line in risk_line.split("\n"):  # every agent name sits in one closed code span
            assert line.count("`") % 2 == 0, line


def test_the_full_arguments_modal_shows_the_risk() -> None:
    view = render_full_args_modal(sql_request(HIDDEN_DELETE), RUN)
    assert_valid_view(view)
    assert "*SQL risk:* Destructive" in view["blocks"][1]["text"]["text"]


def test_an_edited_call_shows_the_risk_of_the_edit() -> None:
    request = sql_request(
        "DELETE FROM orders WHERE id = 1", rows=RowEstimate(method="exact_count", rows=1)
    ).model_copy(
        update={"pending_edit": Decision(type="edit", edited_args={"query": "DELETE FROM orders"})}
    )
    risk_line = risk_blocks(request)[0]["text"]["text"]
    assert "Destructive" in risk_line and "Affected rows: not estimated for an edit" in risk_line


def test_a_tool_without_sql_has_no_risk_line() -> None:
    assert risk_blocks(make_request()) == []
    assert "SQL risk" not in card_text(render_approval(make_request(), run=RUN))


def test_many_warnings_and_tables_fit_the_card() -> None:
    query = "; ".join(f'DELETE FROM "t{i}{"x" * 200}"' for i in range(40))
    blocks = render_approval(sql_request(query), run=RUN)
    assert_valid_message("x", blocks)
    assert len(blocks[1]["text"]["text"]) <= 1500


def test_a_harmless_first_statement_cannot_hide_a_later_destructive_one_on_the_card() -> None:
    # Found by a hostile review: tables and warnings were capped in the order found, and
    # the statement is cut, so a DELETE of a scratch table explained the level away.
    filler = "-- nightly cleanup of scratch data, reviewed by DBA team\n" * 80
    query = (
        "DELETE FROM scratch_tmp;\n"
        "SELECT s1(), s2(), s3(), s4(), s5(), s6(), s7() FROM a, b, c, d, e, f, g;\n"
        f"{filler}DELETE FROM users;"
    )
    risk_line = risk_blocks(sql_request(query))[0]["text"]["text"]
    assert "`DELETE users` without WHERE" in risk_line
    assert "`3` statements in one call" in risk_line.split("\n")[2]  # right under Tables


@pytest.mark.parametrize(
    "query",
    [
        "DELETE FROM users WHERE true",
        "DELETE FROM users WHERE 1 = 1",
        "UPDATE users SET password_hash = '' WHERE 'a' = 'a'",
        "WITH d AS (DELETE FROM users WHERE TRUE RETURNING *) SELECT count(*) FROM d",
        "ALTER TABLE users RENAME TO users_gone",
        "ALTER TABLE users RENAME COLUMN email TO email_old",
    ],
)
def test_every_row_or_a_renamed_table_is_destructive(query: str) -> None:
    assert analyse(query, dialect="postgres", argument="query").level == "destructive"
    assert sql_is_destructive(SimpleNamespace(tool_call={"args": {"query": query}}))


def test_a_where_naming_a_column_is_not_every_row() -> None:
    risk = analyse("DELETE FROM users WHERE id = 1", dialect="postgres", argument="query")
    assert risk.level == "write"


@pytest.mark.parametrize("dialect", ["mysql", "postgres", "sqlite", ""])
def test_text_that_breaks_sqlglot_itself_is_unparseable_not_a_crash(dialect: str) -> None:
    # ``SELECT date_add(x,`` raised AttributeError inside sqlglot's MySQL parser.
    risk = analyse("SELECT date_add(x,", dialect=dialect, argument="query")
    assert risk.level in ("unparseable", "write")
    assert sql_is_not_read_only(
        SimpleNamespace(tool_call={"args": {"query": "SELECT date_add(x,"}})
    )


def test_a_target_beyond_the_risk_line_s_room_is_in_the_full_view_and_the_card_offers_it() -> None:
    # Found by a second hostile review: twenty long-named decoys filled the line's room.
    decoys = "".join(
        f"DELETE FROM sandbox_scratch_table_for_tests_{'x' * 60}_{i};\n" for i in range(20)
    )
    request = sql_request(decoys + "DELETE FROM users;")
    card = card_text(render_approval(request, run=RUN))
    assert "View full arguments" in card
    full = json.dumps(render_full_args_modal(request, RUN)["blocks"])
    assert "`DELETE users` without WHERE" in full


@pytest.mark.parametrize(
    ("query", "dialect", "level"),
    [
        ("DELETE FROM users WHERE id = id", "postgres", "destructive"),
        ("UPDATE users SET a = 1 WHERE a = a OR false", "postgres", "destructive"),
        (
            "MERGE INTO users u USING accounts a ON true WHEN MATCHED THEN DELETE",
            "postgres",
            "destructive",
        ),
        ("CREATE OR REPLACE TABLE users AS SELECT 1", "postgres", "destructive"),
        ("SELECT 1 /*!; DELETE FROM users */", "mysql", "unparseable"),
        ("DELETE FROM users WHERE id = 5 /*! OR 1=1 */", "mysql", "unparseable"),
        ("DELETE FROM users WHERE id = 5 AND id = id", "postgres", "write"),
    ],
)
def test_conditions_true_for_every_row_and_mysql_executable_comments(
    query: str, dialect: str, level: str
) -> None:
    assert analyse(query, dialect=dialect, argument="query").level == level


def test_a_mysql_executable_comment_is_never_read_only_nor_counted() -> None:
    query = "SELECT 1 /*!; DELETE FROM users */"
    assert sql_is_not_read_only(SimpleNamespace(tool_call={"args": {"query": query}}))
    hidden = "DELETE FROM users WHERE id = 5 /*! OR 1=1 */"
    assert count_statements(hidden, dialect="mysql") == "unsupported"


def test_what_the_count_leaves_out_is_said_under_it() -> None:
    rows = RowEstimate(
        method="exact_count", rows=1, cascades=("lines", "notes"), triggers=("items_audit",)
    )
    found = analyse("DELETE FROM items WHERE id = 1", dialect="postgres", argument="query")
    request = make_request(
        tool_name="execute_sql",
        args={"query": "DELETE FROM items WHERE id = 1"},
        risk=found.model_copy(update={"rows": rows}),
    )
    [section] = risk_blocks(request)
    text = section["text"]["text"]
    assert "Affected rows: 1 (exact count)" in text
    assert "Also changes rows of `lines`, `notes`" in text and "not counted" in text
    assert "Fires `items_audit`" in text

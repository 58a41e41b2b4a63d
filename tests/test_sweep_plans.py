"""The sweep's queries, and the reads of a reviewer's inbox and of a reply in a Slack
thread, read indexes, on PostgreSQL, with 100,000 paused runs that have nothing to do:
their cost does not grow with them (issue 11, item 2).

The plans are checked, not timings (``EXPLAIN ANALYZE``, after ``ANALYZE``: the planner
sees the real table sizes): no sequential scan, and the rows each query reads, counted by
PostgreSQL, are a handful (an inbox: the page it shows), not one per paused run. On
SQLite, the inbox's read is checked to search its partial index in the index's order.
"""

from __future__ import annotations

import json
import time
from typing import Any

from agent_bridge.backend import Backend
from agent_bridge.inbox import INBOX_MAX, PENDING_IN_SLACK_THREAD, PENDING_IN_TEAM
from agent_bridge.store import SWEEP_BATCH, ApprovalStore
from agent_bridge.store_sql import (
    SELECT_DUE_ESCALATIONS,
    SELECT_DUE_EXPIRIES,
    SELECT_DUE_REMINDERS,
    SELECT_NEXT_LEASE_END,
    SELECT_RUNS_NEEDING_WORK,
    SELECT_STARTABLE_RUNS,
    SELECT_UNDRAWN_CARDS,
)

PAUSED_RUNS = 100_000
MOST_ROWS_READ = 10
"""A sweep query with nothing to find reads next to nothing (the paused runs: none)."""

TEAM = "T0SANDBOX"
INSERT_PAUSED_RUNS = """INSERT INTO runs (run_id, thread_id, task, channel_id, user_id,
    team_id, thread_ts, state, created_at, updated_at, agent)
    SELECT 'run-' || n, 'thread-' || n, 'task', 'C0GENERAL', 'U0ALICE', :team_id, '1.' || n,
        'waiting', :now, :now, 'default'
    FROM generate_series(1, :count) AS n"""
INSERT_POSTED_REQUESTS = """INSERT INTO approval_requests (request_id, run_id, thread_id,
    interrupt_id, idx, mode, batch_size, tool_name, args, description, allowed_decisions,
    args_schema, state, channel_id, message_ts, created_at, review_timeout_s, expires_at,
    escalates_at, changed_at, revision, drawn_revision, team_id)
    SELECT 'request-' || n, 'run-' || n, 'thread-' || n, 'interrupt-' || n, 0, 'per_call',
        1, 'execute_sql', '{}', '', '[]', '{}', 'pending', 'C0GENERAL', '2.' || n, :now + n,
        86400, :now + 86400, :now + 80000, :now, 1, 1, :team_id
    FROM generate_series(1, :count) AS n"""
"""Posted, pending, drawn, a day to go, one workspace's: nothing for a worker to do, and
every one of them on its workspace's inboxes."""


def _rows_read(plan: Any) -> dict[str, int]:
    """Rows each scan node of an ``EXPLAIN (ANALYZE, FORMAT JSON)`` plan tree read, kept or
    filtered out, over all its loops: ``{"Index Scan on runs": 1, ...}``."""
    read: dict[str, int] = {}
    if "Scan" in plan["Node Type"]:
        rows = plan["Actual Rows"] + plan.get("Rows Removed by Filter", 0)
        key = f"{plan['Node Type']} on {plan.get('Relation Name', '?')}"
        read[key] = read.get(key, 0) + int(rows * plan["Actual Loops"])
    for child in plan.get("Plans", []):
        for key, rows in _rows_read(child).items():
            read[key] = read.get(key, 0) + rows
    return read


SWEEP_QUERIES: dict[str, tuple[str, dict[str, Any]]] = {
    "runs needing work": (SELECT_RUNS_NEEDING_WORK, {"agent": "default", "limit": SWEEP_BATCH}),
    "startable runs": (SELECT_STARTABLE_RUNS, {"agent": "default", "limit": SWEEP_BATCH}),
    "next lease end": (SELECT_NEXT_LEASE_END, {"agent": "default", "owner": "worker-1"}),
    "due reminders": (SELECT_DUE_REMINDERS, {"limit": SWEEP_BATCH}),
    "due expiries": (SELECT_DUE_EXPIRIES, {"limit": SWEEP_BATCH}),
    "due escalations": (SELECT_DUE_ESCALATIONS, {"limit": SWEEP_BATCH}),
    "undrawn cards": (SELECT_UNDRAWN_CARDS, {"limit": SWEEP_BATCH}),
}
"""Name -> (statement, its parameters); each reads at most ``MOST_ROWS_READ`` rows."""
INBOX_QUERIES: dict[str, tuple[str, dict[str, Any], int]] = {
    # an inbox shows its page of the newest: it reads that page, not every pending request
    "a reviewer's inbox": (PENDING_IN_TEAM, {"team_id": TEAM, "limit": INBOX_MAX}, INBOX_MAX),
    "an inbox read with no workspace (team_id None)": (
        PENDING_IN_TEAM,
        {"team_id": None, "limit": INBOX_MAX},
        INBOX_MAX,
    ),
    "a reply in a Slack thread": (
        PENDING_IN_SLACK_THREAD,
        {"channel_id": "C0GENERAL", "thread_ts": "1.77"},
        MOST_ROWS_READ,
    ),
}
"""Name -> (statement, its parameters, the most rows it may read)."""
QUERIES = {
    **{name: (sql, params, MOST_ROWS_READ) for name, (sql, params) in SWEEP_QUERIES.items()},
    **INBOX_QUERIES,
}


async def test_every_sweep_and_inbox_query_reads_an_index_not_every_paused_run(
    pg_backend: Backend,
) -> None:
    now = time.time()
    db = pg_backend.db
    await db.execute(INSERT_PAUSED_RUNS, {"now": now, "count": PAUSED_RUNS, "team_id": TEAM})
    await db.execute(INSERT_POSTED_REQUESTS, {"now": now, "count": PAUSED_RUNS, "team_id": TEAM})
    await db.execute("ANALYZE runs")
    await db.execute("ANALYZE approval_requests")
    for name, (sql, params, most_rows) in QUERIES.items():
        rows = await db.fetch_all(
            "EXPLAIN (ANALYZE, FORMAT JSON) " + sql, {"now": now, "before": now, **params}
        )
        plan = rows[0]["QUERY PLAN"]
        read = _rows_read((json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"])
        assert not [scan for scan in read if scan.startswith("Seq Scan")], (name, read)
        assert sum(read.values()) <= most_rows, (name, read)


async def test_the_inbox_read_searches_its_partial_index_on_sqlite(
    sqlite_store: ApprovalStore,
) -> None:
    """SQLite uses a partial index only when the query's ``WHERE`` repeats its predicate:
    a reworded inbox query would scan every pending request, and nothing else would say
    so."""
    rows = await sqlite_store.db.fetch_all(
        "EXPLAIN QUERY PLAN " + PENDING_IN_TEAM, {"team_id": TEAM, "limit": INBOX_MAX}
    )
    steps = [str(r["detail"]) for r in rows]
    assert any("USING INDEX approval_requests_inbox" in step for step in steps), steps
    assert not [step for step in steps if "TEMP B-TREE" in step], steps  # the index's order

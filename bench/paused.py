"""Many paused runs in the database, and the cost of one sweep among them.

The copies are made in SQL (``INSERT ... SELECT ... FROM generate_series``) from one
real paused run and its posted request, column for column, so whatever columns later
migrations add are copied too. Only the keys and the requester change; the copies have no
checkpoint (nothing reads one for a run with nothing to do), and they all wait on a
posted card. They are ``PAUSED_REQUESTER``'s, not the benchmark's requester's: one person
with 100,000 open runs is what ``max_active_runs_per_user`` is there to refuse, and the
runs the benchmark starts are found among its requester's (``tests.harness``).
"""

from __future__ import annotations

import time

import psycopg

from agent_bridge.bus import InProcessBus
from bench.stage import Stage
from bot.processes import build_worker
from tests.harness import Harness

COPY_PREFIX = "bench-paused-"
PAUSED_REQUESTER = "U0PAUSED"
KEYS = {
    "runs": {
        "run_id": "'{p}r-' || g",
        "thread_id": "'{p}t-' || g",
        "user_id": f"'{PAUSED_REQUESTER}'",
        "requester_name": "'paused'",
    },
    "approval_requests": {
        "request_id": "'{p}q-' || g",
        "requester_id": f"'{PAUSED_REQUESTER}'",
        "run_id": "'{p}r-' || g",
        "thread_id": "'{p}t-' || g",
        "interrupt_id": "'{p}i-' || g",
        "tool_call_id": "'{p}c-' || g",
        "message_ts": "(1000000000 + g)::text || '.000100'",
    },
}
"""Per table, the columns given a new value in the copies (``g``: the copy's number)."""
TEMPLATE_KEY = {"runs": "run_id", "approval_requests": "run_id"}
COLUMNS = """SELECT column_name FROM information_schema.columns
    WHERE table_schema = current_schema() AND table_name = %s ORDER BY ordinal_position"""


def copy_statement(table: str, columns: list[str]) -> str:
    """``INSERT INTO table SELECT ...`` copying the template's row ``%(count)s`` times."""
    chosen = [KEYS[table].get(column, column).replace("{p}", COPY_PREFIX) for column in columns]
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) "
        f"SELECT {', '.join(chosen)} FROM {table}, generate_series(1, %(count)s) AS g "
        f"WHERE {table}.{TEMPLATE_KEY[table]} = %(template)s"
    )


def add_paused_runs(database_url: str, template_run_id: str, count: int) -> None:
    """Add ``count`` copies of paused run ``template_run_id`` and its requests, then
    ``ANALYZE`` (as autovacuum would soon after such a load) and ``CHECKPOINT``: runs
    paused over hours were written out long ago, not while the clicks are timed."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        for table in KEYS:
            columns = [row[0] for row in conn.execute(COLUMNS, (table,)).fetchall()]
            conn.execute(
                copy_statement(table, columns),
                {"count": count, "template": template_run_id},
            )
            conn.execute(f"ANALYZE {table}")
        conn.execute("CHECKPOINT")


async def sweep_times(stage: Stage, harness: Harness, repeat: int) -> list[float]:
    """Seconds each of ``repeat`` sweeps takes, by a worker of its own (built as the
    product builds one, never started) on the stage's database."""
    worker = build_worker(
        settings=harness.settings,
        store=stage.store,
        bus=InProcessBus(),
        backend=stage.backend,
        client=harness.client,
    )
    await worker.sweep()  # its first sweep publishes the start rules
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        await worker.sweep()
        timings.append(time.perf_counter() - started)
    await worker.idle()
    return timings

"""How many runs are in each state and how many approval requests wait: the figures of
``/metrics`` that are the database's, not one process's (``agent_bridge.metrics``).

Read when Prometheus scrapes the web process, under a deadline, so a slow database
delays no scrape past ``READ_DEADLINE_S``.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_bridge.db import Database
from agent_bridge.deadline import within
from agent_bridge.models import RunState

READ_DEADLINE_S = 2.0
"""The figures' statements wait at most this long, seconds (Prometheus' default scrape
timeout is 10 s)."""

COUNT_RUNS_BY_STATE = "SELECT state, COUNT(*) AS n FROM runs GROUP BY state"
COUNT_PENDING_APPROVALS = "SELECT COUNT(*) AS n FROM approval_requests WHERE state = 'pending'"


@dataclass(frozen=True)
class StateCounts:
    """What the database holds now."""

    runs: dict[str, int]
    """Every ``RunState`` (0 for none), and any other state the table holds."""
    approvals_pending: int


async def read_state_counts(db: Database) -> StateCounts:
    """Count runs by state and pending approval requests.

    Raises:
        StoreUnavailableError: The database is unreachable or slower than
            ``READ_DEADLINE_S``.
    """
    with within(READ_DEADLINE_S):
        rows = await db.fetch_all(COUNT_RUNS_BY_STATE)
        pending = await db.fetch_one(COUNT_PENDING_APPROVALS)
    runs = dict.fromkeys((state.value for state in RunState), 0)
    for row in rows:
        runs[str(row["state"])] = int(row["n"])
    return StateCounts(runs=runs, approvals_pending=int(pending["n"]) if pending else 0)

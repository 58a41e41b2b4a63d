"""The product's Prometheus metrics (prometheus-client), one definition each.

Every process records what happens in it into prometheus-client's default registry, and
serves that registry on its own ``/metrics``: the ``web`` process on its HTTP port, each
``worker`` on ``METRICS_PORT`` when set (``bot.metrics_http``). Prometheus scrapes every
process and sums across them. What is a state of the database rather than an event of
one process (approvals pending, runs by state) is read from the database when the web
process is scraped (``agent_bridge.state_counts``), so N workers never report it N
times and it is right whichever process did the work.

Names follow Prometheus' conventions (https://prometheus.io/docs/practices/naming/):
``agent_bridge_`` prefix, base units (seconds), ``_total`` for counters. Label values
are bounded sets: decision types, run states, Slack method names and error codes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from prometheus_client import Counter, Gauge, Histogram

from agent_bridge.errors import StoreUnavailableError
from agent_bridge.models import ApprovalRequest
from agent_bridge.notifier import NotifyError

HUMAN_BUCKETS_S = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400)
"""A person's time to decide: a second to a day."""
MACHINE_BUCKETS_S = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
"""The product's time from a recorded decision to the graph resuming."""

APPROVALS_PENDING = Gauge(
    "agent_bridge_approvals_pending",
    "Approval requests waiting for a person (read from the database at scrape time).",
)
RUNS = Gauge(
    "agent_bridge_runs",
    "Runs by state: queued, running, waiting, done, failed (read from the database at "
    "scrape time).",
    ["state"],
)
DATABASE_READ_OK = Gauge(
    "agent_bridge_metrics_database_ok",
    "1 if the last scrape could read the database's figures, else 0 (they keep their last values).",
)
DECISIONS = Counter(
    "agent_bridge_decisions_total",
    "Decisions recorded, by type (approve, edit, reject, respond) and source (reviewer: "
    "a click or modal; timeout: the policy's on_timeout at expiry).",
    ["decision", "source"],
)
DECISION_LATENCY = Histogram(
    "agent_bridge_decision_latency_seconds",
    "From an approval request's card being posted (the request's creation, just before "
    "its post) to its decision.",
    ["decision"],
    buckets=HUMAN_BUCKETS_S,
)
CLICK_TO_RESUME = Histogram(
    "agent_bridge_click_to_resume_seconds",
    "From a decision being recorded to the worker resuming the graph with it "
    "(Command(resume=...) sent).",
    buckets=MACHINE_BUCKETS_S,
)
RESUME_FAILURES = Counter(
    "agent_bridge_resume_failures_total",
    "Resumes with recorded decisions that did not complete: refused (the graph refused "
    "the answer; the request is pending again), slack, database (retried later), graph "
    "(a tool or the graph raised; the run failed), cancelled (the lease was lost or the "
    "worker stopped; another drive continues from the checkpoint).",
    ["reason"],
)
SLACK_API_ERRORS = Counter(
    "agent_bridge_slack_api_errors_total",
    "Slack Web API calls that failed past slack_sdk's retries, by method and Slack's "
    "error code (or 'unreachable', 'HTTP <status>').",
    ["method", "error"],
)
SLACK_API_CALLS = Counter(
    "agent_bridge_slack_api_calls_total",
    "Slack Web API calls made, by method (each one HTTP request, whatever its answer; "
    "slack_sdk's retries of one call count once).",
    ["method"],
)
DATABASE_ROUND_TRIPS = Counter(
    "agent_bridge_database_round_trips_total",
    "Round trips the approval store made to PostgreSQL: one per statement, two more per "
    "transaction (BEGIN and COMMIT); the checkpointer's own (LangGraph's saver) are not "
    "counted.",
)
HTTP_CONNECTIONS = Gauge(
    "agent_bridge_http_connections",
    "Client connections open to the web process.",
)
HTTP_CONNECTIONS_DROPPED = Counter(
    "agent_bridge_http_connections_dropped_total",
    "Client connections the web process closed at its connection limit: replaced (the "
    "oldest idle or half-sent one) or refused (every connection was serving).",
    ["reason"],
)


def decision_recorded(request: ApprovalRequest, *, source: str = "reviewer") -> None:
    """Count a decided request and observe its posted → decided latency.

    Args:
        request: The request as decided (``decision`` and ``decided_at`` set).
        source: ``reviewer`` or ``timeout``.
    """
    if request.decision is None:
        return
    DECISIONS.labels(decision=request.decision.type, source=source).inc()
    if request.decided_at is not None and request.created_at:
        latency = max(0.0, request.decided_at - request.created_at)
        DECISION_LATENCY.labels(decision=request.decision.type).observe(latency)


def failure_reason(exc: BaseException) -> str:
    """The ``RESUME_FAILURES`` reason of an exception a resume raised."""
    if isinstance(exc, asyncio.CancelledError):
        return "cancelled"
    if isinstance(exc, NotifyError):
        return "slack"
    if isinstance(exc, StoreUnavailableError):
        return "database"
    return "graph"


@contextmanager
def resuming(applying: Iterable[ApprovalRequest], *, now: float) -> Iterator[None]:
    """Around a resume with the decisions of ``applying``: observe each one's click →
    resume latency on entry (``now``, Unix seconds) and count a failure if the block
    raises (a resume without decisions, starting or continuing a run, is not observed).
    """
    decided = [r for r in applying if r.decided_at is not None]
    for request in decided:
        CLICK_TO_RESUME.observe(max(0.0, now - (request.decided_at or now)))
    try:
        yield
    except BaseException as exc:
        if decided:
            RESUME_FAILURES.labels(reason=failure_reason(exc)).inc()
        raise

"""``/metrics`` after a run through the product: decisions, latencies, runs by state,
approvals pending, Slack API errors; a worker's own ``/metrics``; resume failures.

Counters and histograms live in prometheus-client's registry of this test process
(shared by its tests), so they are compared before and after; the database's figures are
this test's database's own, so they are exact.
"""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from agent_bridge import metrics
from agent_bridge.backend import Backend
from agent_bridge.errors import StoreUnavailableError
from agent_bridge.models import ApprovalRequest, Decision, RunState
from agent_bridge.scripted_model import DEMO_TASK
from bot.metrics_http import METRICS_PATH, start_metrics_server
from tests.harness import Harness

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape(url: str) -> Samples:
    """Every sample of ``url``'s exposition: (name, labels) -> value."""
    async with aiohttp.ClientSession() as session, session.get(url) as reply:
        assert reply.status == 200
        assert reply.headers["Content-Type"].startswith("text/plain")
        text = await reply.text()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def test_metrics_after_a_run_with_an_approval_and_a_rejection(harness: Harness) -> None:
    assert harness.server is not None
    url = harness.server.url + METRICS_PATH
    before = await scrape(url)
    calls_before = len(harness.sandbox.calls)
    harness.sandbox.fail_next("users.info", status=404)  # the requester's name, at the start
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    # the cards are posted while the worker still holds the run: wait for it to let go
    assert (await harness.released(run)).state == RunState.WAITING

    async def scraped(
        name: str, expected: float, **labels: str
    ) -> Samples | None:  # the database's figures are read at most every few seconds
        samples = await scrape(url)
        return samples if value(samples, name, **labels) == expected else None

    waiting = await harness.wait_for(lambda: scraped("agent_bridge_runs", 1, state="waiting"))
    assert value(waiting, "agent_bridge_approvals_pending") == 2
    assert value(waiting, "agent_bridge_metrics_database_ok") == 1

    assert (await harness.click(write, "approve"))[0] == 200
    await harness.reject(sql, "Not today.")
    assert (await harness.finished(run)).state == RunState.DONE
    after = await harness.wait_for(lambda: scraped("agent_bridge_runs", 1, state="done"))

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("agent_bridge_decisions_total", decision="approve", source="reviewer") == 1
    assert delta("agent_bridge_decisions_total", decision="reject", source="reviewer") == 1
    assert delta("agent_bridge_decision_latency_seconds_count", decision="approve") == 1
    assert delta("agent_bridge_decision_latency_seconds_count", decision="reject") == 1
    # one batched resume carrying both decisions: each decision's click → resume
    assert delta("agent_bridge_click_to_resume_seconds_count") == 2
    assert (
        delta("agent_bridge_slack_api_errors_total", method="users.info", error="internal_error")
        == 1
    )

    async def every_call_counted() -> bool:  # as Slack saw them (a redraw may be in flight)
        now = await scrape(url)
        for method in ("chat.postMessage", "chat.update"):
            seen = sum(1 for c in harness.sandbox.calls[calls_before:] if c["method"] == method)
            counted = value(now, "agent_bridge_slack_api_calls_total", method=method) - value(
                before, "agent_bridge_slack_api_calls_total", method=method
            )
            if not seen or counted != seen:
                return False
        return True

    await harness.wait_for(every_call_counted)
    assert value(after, "agent_bridge_approvals_pending") == 0
    assert value(after, "agent_bridge_runs", state="done") == 1
    assert value(after, "agent_bridge_runs", state="waiting") == 0
    assert delta("agent_bridge_resume_failures_total", reason="graph") == 0


async def test_database_round_trips_count_statements_and_each_transactions_begin_and_commit(
    pg_backend: Backend,
) -> None:
    def round_trips() -> float:
        return REGISTRY.get_sample_value("agent_bridge_database_round_trips_total") or 0.0

    db = pg_backend.db
    before = round_trips()
    await db.fetch_one("SELECT 1 AS one")
    assert round_trips() - before == 1
    async with db.transaction() as tx:
        await tx.fetch_one("SELECT 1 AS one")
        await tx.fetch_one("SELECT 2 AS two")
    assert round_trips() - before == 1 + 2 + 2


async def test_a_worker_serves_its_own_metrics() -> None:
    server = await start_metrics_server(host="127.0.0.1", port=0)
    try:
        metrics.CLICK_TO_RESUME.observe(0.2)
        samples = await scrape(f"http://127.0.0.1:{server.port}{METRICS_PATH}")
        assert value(samples, "agent_bridge_click_to_resume_seconds_count") >= 1
        assert ("agent_bridge_approvals_pending", frozenset()) in samples  # defined, unread
    finally:
        await server.stop()


def decided(request_id: str, *, decided_at: float) -> ApprovalRequest:
    return ApprovalRequest(
        request_id=request_id,
        run_id="run-1",
        thread_id="thread-1",
        interrupt_id="i-1",
        tool_name="write_file",
        allowed_decisions=["approve"],
        decision=Decision(type="approve"),
        decided_at=decided_at,
        created_at=decided_at - 30,
    )


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def failures(reason: str) -> float:
    return sample("agent_bridge_resume_failures_total", reason=reason)


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (RuntimeError("a tool raised"), "graph"),
        (StoreUnavailableError("down"), "database"),
        (asyncio.CancelledError(), "cancelled"),
    ],
)
def test_a_resume_that_raises_is_counted_by_reason(error: BaseException, reason: str) -> None:
    waited = sample("agent_bridge_click_to_resume_seconds_sum")
    before = failures(reason)
    with pytest.raises(type(error)), metrics.resuming([decided("r1", decided_at=100.0)], now=100.5):
        raise error
    assert failures(reason) == before + 1
    assert sample("agent_bridge_click_to_resume_seconds_sum") == pytest.approx(waited + 0.5)


def test_a_run_started_or_continued_is_not_a_resume() -> None:
    before = failures("graph")
    with pytest.raises(RuntimeError), metrics.resuming([], now=1.0):
        raise RuntimeError("the first turn failed")
    assert failures("graph") == before

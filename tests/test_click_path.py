"""The click path (issue 11): a signal advances its run at once, with no sweep on the way;
a backlog of reminders is worked off apart from decisions; signals stay within their
deployment; background Slack calls are paced."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import cast

import pytest

from agent_bridge.bus import InProcessBus, Signal
from agent_bridge.models import Run, RunState
from agent_bridge.pacing import Pacer
from agent_bridge.redis_bus import RedisBus, signal_channel
from agent_bridge.run_driver import RunDriver
from agent_bridge.run_failure import RunFailures
from agent_bridge.scripted_model import DEMO_TASK
from agent_bridge.settings import WorkerConfig
from agent_bridge.store import ApprovalStore
from agent_bridge.worker import Worker
from bot.processes import open_bus
from tests import services
from tests.harness import DBA, Harness
from tests.test_leases import StandInDriver

REMINDERS_DUE = 300
"""A backlog of reminders all due at once (after an outage, thousands)."""
TEST_POST_INTERVAL_S = 0.02
"""The tests' pacing: fast enough to drain the backlog in seconds, slow enough that it
lasts well past a click's resume."""

COPY_RUNS = """INSERT INTO runs (run_id, thread_id, task, channel_id, user_id, thread_ts,
    state, created_at, updated_at, agent)
    SELECT 'backlog-' || n, 'backlog-thread-' || n, task, channel_id, user_id, thread_ts,
        'waiting', created_at, updated_at, agent
    FROM runs, generate_series(1, :count) AS n WHERE run_id = :run_id"""
COPY_REQUESTS = """INSERT INTO approval_requests (request_id, run_id, thread_id,
    interrupt_id, idx, mode, batch_size, tool_call_id, tool_name, args, description,
    allowed_decisions, args_schema, state, channel_id, message_ts, thread_ts, created_at,
    review_timeout_s, expires_at, requester_id, team_id, rules, call_hash, version, reason,
    revision, drawn_revision, changed_at)
    SELECT 'backlog-' || n, 'backlog-' || n, 'backlog-thread-' || n, 'backlog-' || n, 0,
        'per_call', 1, tool_call_id, tool_name, args, description, allowed_decisions,
        args_schema, 'pending', channel_id, message_ts, thread_ts, created_at, 3600,
        :now + 60, requester_id, team_id, rules, call_hash, version, reason, revision,
        drawn_revision, changed_at
    FROM approval_requests, generate_series(1, :count) AS n WHERE request_id = :request_id"""
"""Copies of a posted card's request, each of its own waiting run, under the same card,
all past half their hour: every one is due a reminder now."""


@pytest.fixture
def agent_settings(settings: WorkerConfig) -> WorkerConfig:
    """A poll interval no test sits out: any sweep after the first would be a signal's."""
    return settings.model_copy(update={"poll_interval_s": 3600.0})


async def test_a_run_goes_from_start_to_end_on_signals_alone(harness: Harness) -> None:
    await harness.wait_for(lambda: _swept_once(harness))
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    await harness.click(write, "approve")
    await harness.click(sql, "approve", user_id=DBA)
    done = await harness.finished(run)
    assert done.state == RunState.DONE
    assert harness.worker.sweeps == 1  # the start's; signals did the rest


async def test_a_reminder_backlog_does_not_delay_a_decision(harness: Harness) -> None:
    pacer = Pacer(post_interval_s=TEST_POST_INTERVAL_S, update_interval_s=0.0)
    harness.worker.pacer = pacer
    assert harness.worker.expiry is not None
    harness.worker.expiry.pacer = pacer
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    await harness.click(write, "approve")
    params = {"run_id": run.run_id, "request_id": write.request_id, "count": REMINDERS_DUE}
    await harness.store.db.execute(COPY_RUNS, params)
    await harness.store.db.execute(COPY_REQUESTS, {**params, "now": time.time()})
    await harness.wait_for(lambda: _reminders_posted(harness, 1))  # the backlog began

    await harness.click(sql, "approve", user_id=DBA)
    done = await harness.finished(run)
    assert done.state == RunState.DONE and done.final_answer
    resumed = _resumed_at(harness)
    await harness.wait_for(lambda: _reminders_posted(harness, REMINDERS_DUE), timeout_s=120)
    reminders = _reminder_calls(harness)
    assert len(reminders) == REMINDERS_DUE  # each once
    # The run's resume (its tools ran, their results posted) came before most of the backlog.
    assert len([i for i in reminders if i > resumed]) > REMINDERS_DUE // 2


async def test_two_deployments_on_one_redis_do_not_wake_each_other(redis_bus_url: str) -> None:
    # Names of this test's own: pub/sub channels are the server's, whatever the index, so
    # fixed ones would meet another test session's on the same Redis.
    ours_url = services.database_url(services.unique_name("ours"))
    theirs_url = services.database_url(services.unique_name("theirs"))
    ours = RedisBus(redis_bus_url, channel=signal_channel(ours_url))
    theirs = RedisBus(redis_bus_url, channel=signal_channel(theirs_url))
    try:
        await theirs.subscribe()
        await ours.subscribe()
        await ours.publish(Signal(kind="decision_recorded", run_id="ours-1"))
        await theirs.publish(Signal(kind="decision_recorded", run_id="theirs-1"))
        # Ours was published first: had it reached them, it would come before theirs.
        assert [s.run_id for s in await theirs.wait(5.0)] == ["theirs-1"]
        assert [s.run_id for s in await ours.wait(5.0)] == ["ours-1"]
    finally:
        await ours.close()
        await theirs.close()


def test_the_channel_names_the_database_never_its_credentials() -> None:
    url = "postgresql://app:s3cret@db.internal:6432/approvals?sslmode=require"
    assert signal_channel(url) == "agent_bridge:signals:db.internal:6432/approvals"
    assert signal_channel("sqlite:///var/lib/app.db") == "agent_bridge:signals:/var/lib/app.db"
    assert signal_channel("postgresql:///approvals") == "agent_bridge:signals:/approvals"
    # libpq takes an unescaped '[' in a password, which urlsplit refuses (IPv6 brackets)
    with_bracket = "postgresql://app:pa[ss@127.0.0.1:5432/approvals"
    assert signal_channel(with_bracket) == "agent_bridge:signals:127.0.0.1:5432/approvals"


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (  # libpq's URI form for Cloud SQL or a Unix socket: the host is a query parameter
            "postgresql://app:s3cret@/approvals?host=/cloudsql/acme-prod:europe-west1:db",
            "postgresql://app:s3cret@/approvals?host=/cloudsql/acme-staging:europe-west1:db",
        ),
        ("postgresql:///approvals?host=/srv/a/run", "postgres:///approvals?host=/srv/b/run"),
        ("postgresql://db.a:5432/approvals", "postgresql:///approvals?host=db.b&port=5432"),
        ("postgresql:///approvals?service=prod", "postgresql:///approvals?service=staging"),
        (
            "postgresql://db/approvals?hostaddr=10.0.0.1",
            "postgresql://db/approvals?hostaddr=10.0.0.2",
        ),
    ],
)
def test_deployments_whose_databases_differ_only_in_a_host_parameter_get_two_channels(
    ours: str, theirs: str
) -> None:
    channels = signal_channel(ours), signal_channel(theirs)
    assert channels[0] != channels[1], channels
    assert not any("s3cret" in c or "app@" in c for c in channels)


def test_both_processes_use_the_deployment_channel_or_signal_channel(
    settings: WorkerConfig,
) -> None:
    derived = open_bus(settings)
    chosen = open_bus(settings.model_copy(update={"signal_channel": "agent_bridge:prod"}))
    assert isinstance(derived, RedisBus) and isinstance(chosen, RedisBus)
    assert derived.channel == signal_channel(settings.database_url)
    assert "@" not in derived.channel and chosen.channel == "agent_bridge:prod"


async def test_background_calls_are_spaced_per_channel_and_per_workspace() -> None:
    now = [0.0]
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    pacer = Pacer(post_interval_s=1.0, update_interval_s=1.5, clock=lambda: now[0], sleep=sleep)
    await pacer.post("C1")
    await pacer.post("C2")  # another channel: its own slot
    assert slept == []
    await pacer.post("C1")
    await pacer.update()
    await pacer.update()
    assert slept == [1.0, 1.5]


async def test_a_signal_for_another_agents_run_is_not_claimed(
    sqlite_store: ApprovalStore,
) -> None:
    await sqlite_store.create_run(
        Run(run_id="r1", thread_id="t1", task="t", channel_id="C1", user_id="U1", agent="sql")
    )
    other = await sqlite_store.claim_run(
        "r1", owner="w", lease_s=10, from_state=RunState.QUEUED, agent="default"
    )
    assert other is None
    own = await sqlite_store.claim_run(
        "r1", owner="w", lease_s=10, from_state=RunState.QUEUED, agent="sql"
    )
    assert own is not None and own.state == RunState.RUNNING


class HeldDriver(StandInDriver):
    """A driver whose drives each wait for the test to let them end, in order."""

    def __init__(self) -> None:
        self.started: asyncio.Queue[asyncio.Event] = asyncio.Queue()

    async def drive(self, run: Run) -> tuple[RunState, str | None]:
        done = asyncio.Event()
        await self.started.put(done)
        await done.wait()
        return RunState.WAITING, None


async def test_a_decision_signalled_while_its_run_is_advanced_is_advanced_after(
    sqlite_store: ApprovalStore,
) -> None:
    await sqlite_store.create_run(
        Run(run_id="r1", thread_id="t1", task="t", channel_id="C1", user_id="U1")
    )
    claimed = await sqlite_store.claim_run("r1", owner="w", lease_s=60, from_state=RunState.QUEUED)
    assert claimed is not None
    await sqlite_store.release_run("r1", owner="w", state=RunState.WAITING)
    bus, driver, stop = InProcessBus(), HeldDriver(), asyncio.Event()
    worker = Worker(
        store=sqlite_store,
        bus=bus,
        driver=cast(RunDriver, driver),
        failures=cast(RunFailures, SimpleNamespace()),
        poll_interval_s=3600.0,
    )
    running = asyncio.create_task(worker.run(stop))
    await bus.publish(Signal(kind="decision_recorded", run_id="r1"))
    first = await driver.started.get()
    await bus.publish(Signal(kind="decision_recorded", run_id="r1"))  # while it is driven
    while "r1" not in worker._again:  # the second signal heard (no other event to wait on)
        await asyncio.sleep(0)
    first.set()
    second = await asyncio.wait_for(driver.started.get(), 10.0)  # driven again
    second.set()
    stop.set()
    await running
    assert worker.sweeps == 1


async def _swept_once(harness: Harness) -> bool:
    return harness.worker.sweeps >= 1


async def _reminders_posted(harness: Harness, count: int) -> bool:
    return len(_reminder_calls(harness)) >= count


def _reminder_calls(harness: Harness) -> list[int]:
    """Indexes in the sandbox's call log of the reminders posted."""
    return [
        i
        for i, call in enumerate(harness.sandbox.calls)
        if call["method"] == "chat.postMessage"
        and str(call["args"].get("text", "")).startswith("Reminder:")
    ]


def _resumed_at(harness: Harness) -> int:
    """Index in the sandbox's call log of the first tool result posted: the resume."""
    found = [
        i
        for i, call in enumerate(harness.sandbox.calls)
        if call["method"] == "chat.postMessage"
        and " returned: " in str(call["args"].get("text", ""))
    ]
    assert found, "no tool result was posted"
    return found[0]

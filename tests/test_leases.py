"""Leases are short and renewed; a worker that cannot renew stops driving in time.

A real ``Worker`` on a real SQLite store drives a run whose driving never ends by itself
(a slow tool); the store's renewals are made to fail or to find the run taken. The
driving must be cancelled before the lease the database holds ends, so no second
worker can take the run while the first still drives it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection
from typing import Any, cast

import pytest

from agent_bridge.bus import InProcessBus, Signal
from agent_bridge.errors import StoreUnavailableError
from agent_bridge.lease import STOP_MARGIN, LeaseLost, Leases
from agent_bridge.models import Run, RunState
from agent_bridge.run_driver import RunDriver
from agent_bridge.run_failure import RunFailures
from agent_bridge.store import ApprovalStore
from agent_bridge.store_sql import SELECT_RUN
from agent_bridge.worker import Worker
from bot.testing import RecordingNotifier

LEASE_S = 0.6
ROOMY_LEASE_S = LEASE_S * 3
"""For tests of a healthy worker, whose renewals must all land in time: a lease lapses
when one renewal takes a third of it, as a SQLite statement did (0.3 s) on the busy
machine of a full test run, two test processes and Agent Servers beside it."""
OWNER = "worker-a"


class StandInDriver:
    """What the worker reads of a driver besides ``drive``: no answer given to a graph."""

    def answers_sent(self, run_id: str) -> frozenset[str]:
        return frozenset()


class SlowDriver(StandInDriver):
    """A driver whose drive runs until cancelled, or until ``enough`` is set."""

    def __init__(self) -> None:
        self.cancelled_at: float | None = None
        self.enough = asyncio.Event()

    async def drive(self, run: Run) -> tuple[RunState, str | None]:
        try:
            await self.enough.wait()
        except asyncio.CancelledError:
            self.cancelled_at = time.time()
            raise
        return RunState.DONE, "finished"


class FailingRenewals(ApprovalStore):
    """A store whose lease renewals fail as an unreachable database's would."""

    async def renew_leases(
        self, run_ids: Collection[str], *, owner: str, lease_s: float
    ) -> set[str]:
        raise StoreUnavailableError("database unreachable")


class TakenRenewals(ApprovalStore):
    """A store whose renewals find the run held by someone else."""

    async def renew_leases(
        self, run_ids: Collection[str], *, owner: str, lease_s: float
    ) -> set[str]:
        return set()


class CountedRenewals(ApprovalStore):
    """A store that sets ``enough`` on the driver after ``needed`` renewals."""

    needed = 4
    driver: SlowDriver | None = None
    renewals = 0

    async def renew_leases(
        self, run_ids: Collection[str], *, owner: str, lease_s: float
    ) -> set[str]:
        renewed = await super().renew_leases(run_ids, owner=owner, lease_s=lease_s)
        self.renewals += 1
        if self.renewals >= self.needed and self.driver is not None:
            self.driver.enough.set()
        return renewed


async def advance(
    store: ApprovalStore, driver: SlowDriver, *, lease_s: float = LEASE_S
) -> dict[str, Any]:
    """Queue a run, let a worker with ``lease_s`` advance it, return its row after."""
    await store.create_run(
        Run(run_id="run-1", thread_id="t-1", task="slow", channel_id="C1", user_id="U1")
    )
    worker = Worker(
        store=store,
        bus=InProcessBus(),
        driver=cast(RunDriver, driver),
        failures=RunFailures(store=store, notifier=RecordingNotifier(store)),
        lease_s=lease_s,
        owner=OWNER,
    )
    await worker.advance("run-1", RunState.QUEUED)
    row = await store.db.fetch_one(SELECT_RUN, {"run_id": "run-1"})
    assert row is not None
    return dict(row)


async def test_a_worker_that_cannot_renew_stops_driving_before_its_lease_ends(
    sqlite_store: ApprovalStore,
) -> None:
    store = FailingRenewals(sqlite_store.db)
    driver = SlowDriver()
    run = await advance(store, driver)
    assert driver.cancelled_at is not None
    assert driver.cancelled_at < run["lease_until"]
    assert (run["state"], run["lease_owner"]) == ("running", OWNER)  # left to expire


class SlowClaims(ApprovalStore):
    """A store whose claim comes back a whole lease after it was sent (its statement
    waited on a locked row, or for a connection): the lease it wrote has ended."""

    async def claim_run(self, run_id: str, **kwargs: Any) -> Run | None:
        claimed = await super().claim_run(run_id, **kwargs)
        await asyncio.sleep(kwargs["lease_s"])  # the database answering late
        return claimed


class NotingDriver(StandInDriver):
    """A driver that notes whether a drive started, and ends it at once."""

    started = False

    async def drive(self, run: Run) -> tuple[RunState, str | None]:
        self.started = True
        return RunState.DONE, "finished"


async def test_a_claim_that_comes_back_with_its_lease_spent_drives_nothing(
    sqlite_store: ApprovalStore,
) -> None:
    """Another worker may take the run as soon as the lease the claim wrote ends: a
    drive started after that would run the same thread's tools beside it."""
    store = SlowClaims(sqlite_store.db)
    driver = NotingDriver()
    run = await advance(store, cast(SlowDriver, driver))
    assert not driver.started
    assert (run["state"], run["lease_owner"]) == ("running", OWNER)  # left to expire


async def test_a_worker_whose_run_was_taken_stops_driving_at_once(
    sqlite_store: ApprovalStore,
) -> None:
    store = TakenRenewals(sqlite_store.db)
    driver = SlowDriver()
    run = await advance(store, driver)
    assert driver.cancelled_at is not None
    assert driver.cancelled_at < run["lease_until"]
    assert run["state"] == "running"


async def test_a_healthy_worker_keeps_its_lease_through_a_long_drive(
    sqlite_store: ApprovalStore,
) -> None:
    store = CountedRenewals(sqlite_store.db)
    driver = SlowDriver()
    store.driver = driver
    run = await advance(store, driver, lease_s=ROOMY_LEASE_S)
    assert driver.cancelled_at is None
    assert store.renewals >= CountedRenewals.needed  # more than one lease long
    assert (run["state"], run["final_answer"], run["lease_owner"]) == ("done", "finished", None)


class FailingDriver(StandInDriver):
    """A driver whose drive raises at once (a tool or the graph failed)."""

    async def drive(self, run: Run) -> tuple[RunState, str | None]:
        raise RuntimeError("boom")


class TakenWhileFailing(ApprovalStore):
    """A store whose first renewal (the failure's own check) keeps the lease, and whose
    later ones find the run held by someone else."""

    renewals = 0

    async def renew_leases(
        self, run_ids: Collection[str], *, owner: str, lease_s: float
    ) -> set[str]:
        self.renewals += 1
        if self.renewals > 1:
            return set()
        return await super().renew_leases(run_ids, owner=owner, lease_s=lease_s)


class SlowToTell(RecordingNotifier):
    """Slack holds the failure's post for two leases (a 429's ``Retry-After``)."""

    cut = False

    async def run_failed(self, run: Run) -> None:
        try:
            await asyncio.sleep(2 * LEASE_S)
        except asyncio.CancelledError:
            self.cut = True
            raise
        await super().run_failed(run)


async def fail_a_run(store: ApprovalStore, notifier: RecordingNotifier) -> None:
    """Queue a run and let a worker with ``LEASE_S`` advance it: its drive fails."""
    await store.create_run(
        Run(run_id="run-1", thread_id="t-1", task="t", channel_id="C1", user_id="U1")
    )
    worker = Worker(
        store=store,
        bus=InProcessBus(),
        driver=cast(RunDriver, FailingDriver()),
        failures=RunFailures(store=store, notifier=notifier),
        lease_s=LEASE_S,
        owner=OWNER,
    )
    await worker.advance("run-1", RunState.QUEUED)


async def test_a_failure_told_slowly_is_stopped_when_the_lease_is_lost(
    sqlite_store: ApprovalStore,
) -> None:
    """A run fails; telling Slack takes longer than a lease, and meanwhile another worker
    takes the run. The failure is told under the lease, renewed with the others, so it is
    stopped there: no 'run failed' for a run that is no longer this worker's."""
    store = TakenWhileFailing(sqlite_store.db)
    notifier = SlowToTell(store)
    await fail_a_run(store, notifier)
    assert notifier.cut and ("failed", "run-1") not in notifier.events
    assert (await store.get_run("run-1")).state == RunState.RUNNING  # the new holder's


class ClosesOneCard(ApprovalStore):
    """A store whose failing of a run closes one open request (its card to redraw)."""

    async def fail_run(self, run_id: str, **kwargs: Any) -> list[Any]:
        await super().fail_run(run_id, **kwargs)
        return ["card-1"]


class SlowToRedraw(RecordingNotifier):
    """Slack holds each card's redraw for half a lease (a 429's ``Retry-After``)."""

    cut = False

    async def approval_updated(self, request: Any, *, run: Run) -> None:
        try:
            await asyncio.sleep(LEASE_S / 2)
        except asyncio.CancelledError:
            self.cut = True
            raise
        self.events.append(("updated", request))


async def test_the_cards_a_failure_closed_are_redrawn_after_the_run_is_released(
    sqlite_store: ApprovalStore,
) -> None:
    """Once the run is released as failed its lease is gone, so the closed cards are
    redrawn outside the lease: a renewal finding no lease does not cut them off."""
    store = ClosesOneCard(sqlite_store.db)
    notifier = SlowToRedraw(store)
    await fail_a_run(store, notifier)
    assert (await store.get_run("run-1")).state == RunState.FAILED
    assert not notifier.cut and ("updated", "card-1") in notifier.events


class RecordedRenewals(ApprovalStore):
    """A store that records which runs each renewal statement named, and sets ``enough``
    after ``needed`` statements."""

    needed = 2

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.statements: list[set[str]] = []
        self.enough = asyncio.Event()

    async def renew_leases(
        self, run_ids: Collection[str], *, owner: str, lease_s: float
    ) -> set[str]:
        self.statements.append(set(run_ids))
        if len(self.statements) >= self.needed:
            self.enough.set()
        return await super().renew_leases(run_ids, owner=owner, lease_s=lease_s)


async def test_one_statement_renews_every_lease_a_worker_holds(
    sqlite_store: ApprovalStore,
) -> None:
    lease_s = ROOMY_LEASE_S
    store = RecordedRenewals(sqlite_store.db)
    run_ids = [f"run-{i}" for i in range(5)]
    for run_id in run_ids:
        await store.create_run(
            Run(run_id=run_id, thread_id=f"t-{run_id}", task="slow", channel_id="C1", user_id="U1")
        )
        assert await store.claim_run(
            run_id, owner=OWNER, lease_s=lease_s, from_state=RunState.QUEUED
        )
    leases = Leases(store, owner=OWNER, lease_s=lease_s)

    async def drive() -> str:
        await store.enough.wait()  # two renewal periods: never cancelled meanwhile
        return "finished"

    claimed_at = time.monotonic()
    held = (leases.hold(run_id, drive(), claimed_at=claimed_at) for run_id in run_ids)
    results = await asyncio.gather(*held)
    assert results == ["finished"] * 5
    assert len(store.statements) >= RecordedRenewals.needed
    assert all(named == set(run_ids) for named in store.statements)
    assert leases.renewals == len(store.statements)


class CountingDriver(StandInDriver):
    """A driver whose drives wait for ``enough``; it counts drives at once."""

    def __init__(self, started_needed: int) -> None:
        self.enough = asyncio.Event()
        self.started = asyncio.Event()
        self.started_needed = started_needed
        self.at_once = 0
        self.most_at_once = 0
        self.driven = 0

    async def drive(self, run: Run) -> tuple[RunState, str | None]:
        self.at_once += 1
        self.driven += 1
        self.most_at_once = max(self.most_at_once, self.at_once)
        if self.driven >= self.started_needed:
            self.started.set()
        try:
            await self.enough.wait()
        finally:
            self.at_once -= 1
        return RunState.DONE, "finished"


async def test_a_worker_drives_no_more_runs_than_its_room_and_leaves_the_rest_unclaimed(
    sqlite_store: ApprovalStore,
) -> None:
    store = sqlite_store
    driver = CountingDriver(started_needed=2)
    worker = Worker(
        store=store,
        bus=InProcessBus(),
        driver=cast(RunDriver, driver),
        failures=RunFailures(store=store, notifier=RecordingNotifier(store)),
        lease_s=LEASE_S,
        owner=OWNER,
        max_concurrent_runs=2,
    )
    run_ids = [f"run-{i}" for i in range(5)]
    for run_id in run_ids:
        await store.create_run(
            Run(run_id=run_id, thread_id=f"t-{run_id}", task="t", channel_id="C1", user_id="U1")
        )
    worker._advance_signalled([Signal(kind="run_requested", run_id=r) for r in run_ids])
    await driver.started.wait()
    states = [(await store.get_run(r)).state for r in run_ids]
    assert states.count(RunState.RUNNING) == 2
    assert states.count(RunState.QUEUED) == 3  # not claimed: free for another worker
    driver.enough.set()
    await worker.idle()
    assert [(await store.get_run(r)).state for r in run_ids] == [RunState.DONE] * 5
    assert driver.most_at_once == 2


async def test_a_late_claim_beside_a_held_run_stops_at_its_own_lease_end(
    sqlite_store: ApprovalStore,
) -> None:
    """The keeper sleeps a renewal period (10 s for a 30 s lease) for the runs it holds;
    a claim that comes back with a tenth of a second of lease left is stopped then, not
    at the keeper's next wake, when another worker could have been driving it for
    seconds."""
    lease_s = 30.0
    leases = Leases(sqlite_store, owner=OWNER, lease_s=lease_s)
    for run_id in ("held", "late"):
        await sqlite_store.create_run(
            Run(run_id=run_id, thread_id=f"t-{run_id}", task="t", channel_id="C1", user_id="U1")
        )
        assert await sqlite_store.claim_run(
            run_id, owner=OWNER, lease_s=lease_s, from_state=RunState.QUEUED
        )
    enough = asyncio.Event()
    first = asyncio.ensure_future(leases.hold("held", enough.wait(), claimed_at=time.monotonic()))
    await asyncio.sleep(0)  # the keeper is asleep for its period
    spent = lease_s * (1 - STOP_MARGIN) - 0.1  # 0.1 s of the late claim's lease left
    late = leases.hold("late", asyncio.Event().wait(), claimed_at=time.monotonic() - spent)
    with pytest.raises(LeaseLost):
        await asyncio.wait_for(late, timeout=5.0)
    enough.set()
    await first
    await leases.close()

"""Leases are short and renewed; a worker that cannot renew stops driving in time.

A real ``Worker`` on a real SQLite store drives a run whose driving never ends by itself
(a slow tool); the store's renewals are made to fail or to find the run taken. The
driving must be cancelled before the lease the database holds ends, so no second
worker can take the run while the first still drives it.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, cast

from agent_bridge.bus import InProcessBus
from agent_bridge.errors import StoreUnavailableError
from agent_bridge.models import Run, RunState
from agent_bridge.run_driver import RunDriver
from agent_bridge.run_failure import RunFailures
from agent_bridge.store import ApprovalStore
from agent_bridge.store_sql import SELECT_RUN
from agent_bridge.worker import Worker
from bot.testing import RecordingNotifier

LEASE_S = 0.6
OWNER = "worker-a"


class SlowDriver:
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

    async def renew_lease(self, run_id: str, *, owner: str, lease_s: float) -> bool:
        raise StoreUnavailableError("database unreachable")


class TakenRenewals(ApprovalStore):
    """A store whose renewals find the run held by someone else."""

    async def renew_lease(self, run_id: str, *, owner: str, lease_s: float) -> bool:
        return False


class CountedRenewals(ApprovalStore):
    """A store that sets ``enough`` on the driver after ``needed`` renewals."""

    needed = 4
    driver: SlowDriver | None = None
    renewals = 0

    async def renew_lease(self, run_id: str, *, owner: str, lease_s: float) -> bool:
        renewed = await super().renew_lease(run_id, owner=owner, lease_s=lease_s)
        self.renewals += 1
        if self.renewals >= self.needed and self.driver is not None:
            self.driver.enough.set()
        return renewed


async def advance(store: ApprovalStore, driver: SlowDriver) -> dict[str, Any]:
    """Queue a run, let a worker with ``LEASE_S`` advance it, return its row after."""
    await store.create_run(
        Run(run_id="run-1", thread_id="t-1", task="slow", channel_id="C1", user_id="U1")
    )
    worker = Worker(
        store=store,
        bus=InProcessBus(),
        driver=cast(RunDriver, driver),
        failures=RunFailures(store=store, notifier=RecordingNotifier(store)),
        lease_s=LEASE_S,
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
    run = await advance(store, driver)
    assert driver.cancelled_at is None
    assert store.renewals >= CountedRenewals.needed  # more than one lease long
    assert (run["state"], run["final_answer"], run["lease_owner"]) == ("done", "finished", None)

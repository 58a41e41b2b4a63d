"""Keeping the leases of the runs a worker drives, and stopping a drive that lost its own.

A lease is short (``LEASE_S``, seconds) and renewed every third of it, so a run whose
worker died is taken by another worker within about one lease. A worker renews every
lease it holds in one statement per renewal period (``Leases``): the cost of keeping
leases does not grow with the number of runs driven at once.

The other half of that bargain: a worker that cannot renew a lease (the database is
unreachable, or another worker took the run) must stop driving that run *before* the
lease can expire, or the two would drive one ``thread_id`` at once and a slow tool would
run twice. ``Leases.hold`` cancels the drive at ``STOP_MARGIN`` of a lease before the last
lease it knows it holds ends (docs/architecture.md, step 7).

What cancelling cannot stop: a synchronous tool already running in a thread finishes
its body (LangGraph's at-least-once rule for a tool's body; the README says so).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from agent_bridge.errors import StoreUnavailableError
from agent_bridge.store import ApprovalStore

logger = logging.getLogger(__name__)

T = TypeVar("T")

RENEWALS_PER_LEASE = 3
"""Renewals attempted per lease period: two may fail before the worker stops."""
STOP_MARGIN = 1 / 6
"""Share of a lease before its end at which an unrenewed worker stops driving."""


class LeaseLost(Exception):
    """The worker stopped driving a run because it could not keep its lease.

    Nothing to do: the run is left ``running`` under the old lease, which expires, and
    a worker's sweep continues it from its checkpoint.
    """


@dataclass
class _Held:
    """One run being driven: its drive, and when it must stop unless renewed first
    (this process's monotonic clock, seconds)."""

    task: asyncio.Future[Any]
    stop_at: float
    lost: bool = False
    watch: asyncio.TimerHandle | None = None


class Leases:
    """The leases one worker holds, renewed together.

    Args:
        store: Where leases are kept.
        owner: The worker's name in leases.
        lease_s: Lease length, seconds (as claimed by ``ApprovalStore.claim_run``).
    """

    def __init__(self, store: ApprovalStore, *, owner: str, lease_s: float) -> None:
        self.store = store
        self.owner = owner
        self.lease_s = lease_s
        self._held: dict[str, _Held] = {}
        self._keeper: asyncio.Task[None] | None = None
        self.renewals = 0
        """Renewal statements sent (tests count them)."""

    async def hold(self, run_id: str, work: Coroutine[Any, Any, T], *, claimed_at: float) -> T:
        """Await ``work`` while ``run_id``'s lease is kept with the others'.

        Args:
            run_id: The run, claimed by this worker just before (its lease runs
                ``lease_s``).
            work: The driving of the run (not started yet).
            claimed_at: When the claim was sent, on ``time.monotonic``: the database's
                lease ends ``lease_s`` after the claim's own clock read, which came
                before; a claim the database held up (a locked row, a full pool) may
                return with little of its lease left, or none.

        Returns:
            What ``work`` returned.

        Raises:
            LeaseLost: The lease could not be renewed in time, or another worker has the
                run; ``work`` was cancelled before the lease could expire (or never
                started, when the claim came back with its lease already spent).
            Exception: Whatever ``work`` raised.
        """
        # The database's lease ends at least lease_s after the claim was *sent*; stopping
        # a margin before that, measured on this process's monotonic clock, is safe.
        stop_at = claimed_at + self.lease_s * (1 - STOP_MARGIN)
        if time.monotonic() >= stop_at:
            work.close()
            raise LeaseLost(f"run {run_id}: the claim came back with its lease spent")
        task = asyncio.ensure_future(work)
        held = _Held(task, stop_at)
        self._held[run_id] = held
        self._watch(run_id, held)
        if self._keeper is None or self._keeper.done():
            self._keeper = asyncio.create_task(self._keep())
        try:
            return await task
        except asyncio.CancelledError:
            if held.lost:
                raise LeaseLost(f"run {run_id}: lease not kept, driving stopped") from None
            raise
        finally:
            if held.watch is not None:
                held.watch.cancel()
            if self._held.get(run_id) is held:
                del self._held[run_id]
            if not task.done():
                task.cancel()

    def _watch(self, run_id: str, held: _Held) -> None:
        """Stop ``held``'s drive at its ``stop_at`` unless a renewal moved it first: the
        keeper wakes once a renewal period, and a claim that came back late may have less
        lease left than that (``hold``'s ``claimed_at``)."""
        if held.lost or held.task.done():
            return
        left = held.stop_at - time.monotonic()
        if left <= 0:
            self._expired(run_id, held)
            return
        loop = asyncio.get_running_loop()
        held.watch = loop.call_later(left, self._watch, run_id, held)

    async def close(self) -> None:
        """Stop renewing (the drives still held are left to their leases' ends)."""
        if self._keeper is not None:
            self._keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keeper

    async def _keep(self) -> None:
        """Every ``lease_s / RENEWALS_PER_LEASE``, renew every held lease in one statement;
        stop the drives whose run another worker has, or whose deadline passed
        unrenewed. Ends when no drive is held."""
        period = self.lease_s / RENEWALS_PER_LEASE
        while holding := self._holding():
            soonest = min(h.stop_at for h in holding.values())
            await asyncio.sleep(max(0.0, min(period, soonest - time.monotonic())))
            sent = time.monotonic()
            for run_id, held in self._holding().items():
                if sent >= held.stop_at:
                    self._expired(run_id, held)
            holding = self._holding()
            if not holding:
                break
            try:
                async with asyncio.timeout(min(h.stop_at for h in holding.values()) - sent):
                    self.renewals += 1
                    renewed = await self.store.renew_leases(
                        holding, owner=self.owner, lease_s=self.lease_s
                    )
            except (StoreUnavailableError, TimeoutError) as exc:
                logger.warning(
                    "leases of %d runs not renewed: %s", len(holding), exc or "timed out"
                )
                continue
            for run_id, held in holding.items():
                if run_id in renewed:
                    held.stop_at = sent + self.lease_s * (1 - STOP_MARGIN)
                elif not held.task.done():
                    logger.error("run=%s lease lost to another worker; driving stopped", run_id)
                    self._lose(held)

    def _holding(self) -> dict[str, _Held]:
        """The held runs whose drive goes on (not stopped for a lost lease)."""
        return {run_id: h for run_id, h in self._held.items() if not h.lost}

    def _expired(self, run_id: str, held: _Held) -> None:
        """Stop ``held``'s drive: its lease end came unrenewed (the watch's timer or the
        keeper, whichever sees it first)."""
        logger.error("run=%s lease not renewed in time; stopping its driving", run_id)
        self._lose(held)

    @staticmethod
    def _lose(held: _Held) -> None:
        held.lost = True
        held.task.cancel()

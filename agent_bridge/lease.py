"""Keeping a run's lease while it is driven, and stopping the driving when it cannot.

A lease is short (``LEASE_S``, seconds) and renewed every third of it, so a run whose
worker died is taken by another worker within about one lease. The other half of that
bargain: a worker that cannot renew (the database is unreachable, or another worker
took the run) must stop driving the run *before* its lease can expire, or the two would
drive one ``thread_id`` at once and a slow tool would run twice. ``hold`` cancels the
drive at ``STOP_MARGIN`` of a lease before the last lease it knows it holds ends
(docs/architecture.md, step 7).

What cancelling cannot stop: a synchronous tool already running in a thread finishes
its body (LangGraph's at-least-once rule for a tool's body; the README says so).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable
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


async def hold(
    store: ApprovalStore, run_id: str, *, owner: str, lease_s: float, work: Awaitable[T]
) -> T:
    """Await ``work`` while renewing ``owner``'s lease on ``run_id``.

    Args:
        store: Where the lease is kept.
        run_id: The run, claimed by ``owner`` just before (its lease runs ``lease_s``).
        owner: This worker's name in leases.
        lease_s: Lease length, seconds.
        work: The driving of the run.

    Returns:
        What ``work`` returned.

    Raises:
        LeaseLost: The lease could not be renewed in time, or another worker has the
            run; ``work`` was cancelled before the lease could expire.
        Exception: Whatever ``work`` raised.
    """
    task = asyncio.ensure_future(work)
    lost = asyncio.Event()
    keeper = asyncio.create_task(_keep(store, run_id, owner, lease_s, task, lost))
    try:
        return await task
    except asyncio.CancelledError:
        if lost.is_set():
            raise LeaseLost(f"run {run_id}: lease not kept, driving stopped") from None
        raise
    finally:
        keeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await keeper
        if not task.done():
            task.cancel()


async def _keep(
    store: ApprovalStore,
    run_id: str,
    owner: str,
    lease_s: float,
    task: asyncio.Future[Any],
    lost: asyncio.Event,
) -> None:
    """Renew the lease every ``lease_s / RENEWALS_PER_LEASE``; cancel ``task`` (setting
    ``lost``) when another worker has the run or the deadline passes unrenewed."""
    # The database's lease ends at least lease_s after the renewal was *sent*; stopping
    # a margin before that, measured on this process's monotonic clock, is safe.
    stop_at = time.monotonic() + lease_s * (1 - STOP_MARGIN)
    while True:
        now = time.monotonic()
        await asyncio.sleep(max(0.0, min(lease_s / RENEWALS_PER_LEASE, stop_at - now)))
        sent = time.monotonic()
        if sent >= stop_at:
            logger.error("run=%s lease not renewed in time; stopping its driving", run_id)
            break
        try:
            async with asyncio.timeout(stop_at - sent):
                renewed = await store.renew_lease(run_id, owner=owner, lease_s=lease_s)
        except (StoreUnavailableError, TimeoutError) as exc:
            logger.warning("run=%s lease not renewed: %s", run_id, exc or "timed out")
            continue
        if not renewed:
            logger.error("run=%s lease lost to another worker; stopping its driving", run_id)
            break
        stop_at = sent + lease_s * (1 - STOP_MARGIN)
    lost.set()
    task.cancel()

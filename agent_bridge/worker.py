"""The worker loop: which runs to advance, when, and under whose lease.

It waits on "signal, poll interval or stop" (the bus rings, the database is swept),
then starts queued runs and advances waiting runs that have decisions to apply or
messages to post. A run is advanced only under its lease (a per-run lock in the
database, so two workers never drive one ``thread_id``); ``RunDriver`` does the advancing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets

from agent_bridge.bus import Bus
from agent_bridge.errors import StoreUnavailableError
from agent_bridge.expiry import ExpiryKeeper
from agent_bridge.lease import LeaseLost, hold
from agent_bridge.models import DEFAULT_AGENT, Run, RunState, StartRules
from agent_bridge.notifier import NotifyError
from agent_bridge.run_driver import RunDriver
from agent_bridge.run_failure import RunFailures
from agent_bridge.store import ApprovalStore

logger = logging.getLogger(__name__)

STORE_BACKOFF_MAX_S = 30.0
"""Longest pause between sweeps while the database is unreachable, seconds."""
LEASE_WAKE_S = 0.05
"""How long after another worker's lease ends the sweep that can take its run begins,
seconds (and the shortest wait between sweeps)."""
CARD_REDRAW_GRACE_S = 2.0
"""How old a change must be before the sweep redraws a card that does not show it, s."""
CARD_REDRAW_MAX = 20
"""Most lagging cards redrawn per sweep (``chat.update`` is rate limited, Tier 3)."""
STOP_GRACE_S = 30.0
"""How long ``run`` lets in-flight runs finish after ``stop`` is set, seconds."""


class Worker:
    """Drives runs: one asyncio task per run being advanced.

    Args:
        store: The approval store (the truth).
        bus: Where wake-up signals arrive.
        driver: Advances one run's graph.
        failures: Ends failed runs.
        expiry: Reminds and expires requests with a review time limit.
        agent_name: The agent ``driver`` runs; only its runs are picked up.
        poll_interval_s: Sweep period when no signal arrives, seconds.
        lease_s: Lease on a run while advancing it, renewed every third of it, seconds
            (``agent_bridge.lease``); a dead worker's run is taken up about this long
            after its last renewal.
        owner: This worker's name in leases (random by default).
        start_rules: Who may start runs of this agent (its policy's ``requesters`` and
            ``max_active_runs_per_user``); published for the web process on the first sweep.
    """

    def __init__(
        self,
        *,
        store: ApprovalStore,
        bus: Bus,
        driver: RunDriver,
        failures: RunFailures,
        expiry: ExpiryKeeper | None = None,
        agent_name: str = DEFAULT_AGENT,
        poll_interval_s: float = 5.0,
        lease_s: float = 3.0,
        owner: str | None = None,
        start_rules: StartRules | None = None,
    ) -> None:
        self.store = store
        self.bus = bus
        self.driver = driver
        self.failures = failures
        self.expiry = expiry
        self.agent_name = agent_name
        self.poll_interval_s = poll_interval_s
        self.lease_s = lease_s
        self.owner = owner or f"worker-{secrets.token_hex(4)}"
        self.start_rules = start_rules
        self._published = False
        self._active: dict[str, asyncio.Task[None]] = {}

    async def publish_start_rules(self) -> None:
        """Publish this agent's start rules (the web process refuses runs of an agent that
        has none yet: it fails closed).

        Raises:
            StoreUnavailableError: If the database is unreachable (the next sweep retries).
        """
        if self.start_rules is not None:
            await self.store.publish_start_rules(self.agent_name, self.start_rules)
        self._published = True

    async def run(self, stop: asyncio.Event) -> None:
        """Sweep and wait for signals until ``stop`` is set, then let runs finish."""
        backoff_s = 0.0
        while not stop.is_set():
            try:
                await self.sweep()
                backoff_s = 0.0
            except StoreUnavailableError as exc:
                backoff_s = min(max(backoff_s * 2, 0.5), STORE_BACKOFF_MAX_S)
                logger.warning(
                    "sweep failed, database unavailable (%s); retry in %.1f s", exc, backoff_s
                )
            await self._wait(stop, backoff_s or await self._until_next_sweep())
        if self._active:
            await asyncio.wait(list(self._active.values()), timeout=STOP_GRACE_S)
        for task in list(self._active.values()):
            task.cancel()

    async def sweep(self) -> None:
        """Remind and expire due requests; start every queued run and advance every
        waiting run that has work; redraw cards that missed a redraw."""
        if not self._published:
            await self.publish_start_rules()
        if self.expiry is not None:
            await self.expiry.sweep()
        for run_id in await self.store.startable_runs(self.agent_name):
            self._spawn(run_id, RunState.QUEUED)
        for run_id in await self.store.runs_needing_work(self.agent_name):
            self._spawn(run_id, RunState.WAITING)
        await self._redraw_lagging_cards()

    async def _redraw_lagging_cards(self) -> None:
        """Redraw cards whose last change they may not show (the process that made the
        change died before its redraw, or Slack failed it): ``drawn_revision`` lags
        ``revision``. Changes younger than ``CARD_REDRAW_GRACE_S`` are left to the
        process that made them."""
        lagging = await self.store.undrawn_cards(
            changed_before=self.store.clock() - CARD_REDRAW_GRACE_S, limit=CARD_REDRAW_MAX
        )
        for request in lagging:
            logger.info(
                "run=%s request=%s card behind its state (r%d drawn, r%d now), redrawing",
                request.run_id,
                request.request_id,
                request.drawn_revision,
                request.revision,
            )
            run = await self.store.get_run(request.run_id)
            await self.driver.notifier.approval_updated(request, run=run)

    async def _until_next_sweep(self) -> float:
        """Seconds to wait for a signal before sweeping again: the poll interval, or
        less when another worker's lease ends sooner (its worker may have died, and the
        run should be taken up at once, not a poll interval later)."""
        try:
            ends = await self.store.next_lease_end(self.agent_name, other_than=self.owner)
        except StoreUnavailableError:
            return self.poll_interval_s
        if ends is None:
            return self.poll_interval_s
        return max(
            LEASE_WAKE_S, min(self.poll_interval_s, ends - self.store.clock() + LEASE_WAKE_S)
        )

    async def idle(self) -> None:
        """Wait until no run is being advanced by this worker (for tests and the demo)."""
        while self._active:
            await asyncio.gather(*self._active.values(), return_exceptions=True)

    async def _wait(self, stop: asyncio.Event, timeout_s: float) -> None:
        signal_task = asyncio.create_task(self.bus.wait(timeout_s))
        stop_task = asyncio.create_task(stop.wait())
        await asyncio.wait({signal_task, stop_task}, return_when=asyncio.FIRST_COMPLETED)
        for task in (signal_task, stop_task):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _spawn(self, run_id: str, from_state: RunState) -> None:
        if run_id in self._active:
            return
        task = asyncio.create_task(self.advance(run_id, from_state))
        self._active[run_id] = task
        task.add_done_callback(lambda _: self._active.pop(run_id, None))

    async def advance(self, run_id: str, from_state: RunState) -> None:
        """Claim the run and drive it until it waits for people or ends.

        If Slack fails, the run goes back to the queue and the next sweep drives it
        again from its checkpoint (the driver only ever continues from there). If the
        database fails, the lease is left to expire and a later sweep retries. If the
        lease cannot be renewed, the driving stops before the lease can end
        (``agent_bridge.lease``) and the run is left for whoever takes it next. A failure
        of the graph, or a message Slack refuses for good, ends the run (``RunFailures``).
        """
        run = await self.store.claim_run(
            run_id, owner=self.owner, lease_s=self.lease_s, from_state=from_state
        )
        if run is None:
            return
        try:
            state, answer = await hold(
                self.store,
                run_id,
                owner=self.owner,
                lease_s=self.lease_s,
                work=self.driver.drive(run),
            )
            await self.store.release_run(run_id, owner=self.owner, state=state, final_answer=answer)
        except LeaseLost as exc:
            logger.error("run=%s thread_id=%s %s", run.run_id, run.thread_id, exc)
        except NotifyError as exc:
            await self._slack_failed(run, exc)
        except StoreUnavailableError as exc:
            logger.warning(
                "run=%s thread_id=%s paused until its lease expires, will retry: %s",
                run.run_id,
                run.thread_id,
                exc,
            )
        except Exception as exc:
            logger.exception("run=%s thread_id=%s failed", run.run_id, run.thread_id)
            await self.failures.fail(run, owner=self.owner, error=f"{type(exc).__name__}: {exc}")

    async def _slack_failed(self, run: Run, exc: NotifyError) -> None:
        """Requeue the run after a passing Slack failure; fail it after a refusal."""
        if exc.retryable:
            logger.warning(
                "run=%s thread_id=%s Slack failed, will retry on the next sweep: %s",
                run.run_id,
                run.thread_id,
                exc,
            )
            await self.store.release_run(run.run_id, owner=self.owner, state=RunState.QUEUED)
            return
        logger.error(
            "run=%s thread_id=%s failed, Slack refused a message: %s",
            run.run_id,
            run.thread_id,
            exc,
        )
        await self.failures.fail(run, owner=self.owner, error=str(exc))

"""The worker loop: which runs to advance, when, and under whose lease.

It waits on "signal, sweep time or stop". A signal names its run, which is advanced at
once (the click path: no sweep on the way). The sweep, every poll interval, starts queued
runs and advances waiting runs that have decisions to apply or messages to post: the
safety net for lost signals, reading indexes only. Reminders, expiries and card redraws
run in a task of their own, paced to Slack's rate limits. A run is advanced only under
its lease (a per-run lock in the database, so two workers never drive one
``thread_id``); ``RunDriver`` does the advancing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Collection

from agent_bridge import log_context, logs
from agent_bridge.bus import Bus, Signal
from agent_bridge.errors import (
    AgentServerUnavailableError,
    CheckpointLostError,
    CheckpointUnavailableError,
    StoreUnavailableError,
    error_text,
)
from agent_bridge.expiry import ExpiryKeeper
from agent_bridge.graph import PausedThreads
from agent_bridge.lease import LeaseLost, Leases
from agent_bridge.models import DEFAULT_AGENT, Run, RunState, StartRules
from agent_bridge.notifier import FAILED_NOTICE, NotifyError
from agent_bridge.pacing import Pacer
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
"""Most lagging cards redrawn per time-keeping pass (``chat.update`` is Tier 3; paced)."""
FAILURE_TELL_GRACE_S = 30.0
"""How old a failure note's intention must be before time keeping posts it again: the
worker ending the run may still be posting it (past Slack's retries of a 429), s."""
FAILURES_TOLD_MAX = 20
"""Most failure notes posted again per time-keeping pass (paced like the rest)."""
TIME_KEEPING_S = 1.0
"""Longest pause between two time-keeping passes (reminders, expiries, redraws), seconds;
each is a few indexed queries, whatever the number of paused runs."""
MAX_CONCURRENT_RUNS = 10
"""Runs one worker drives at once by default (the pool's size: each drive holds a
connection at times); further signalled runs wait unclaimed, so another worker with room
takes them (arq's ``max_jobs``, procrastinate's ``concurrency``)."""
PAUSED_THREADS_SCAN = 10
"""Most recently changed paused threads a sweep asks a deployed agent for
(``PausedThreads``): a thread that just paused is among them, whatever the number of
runs waiting for people."""
CHECKPOINT_RETRIES = 5
"""Drives of one run in a row that did not go through, at which the run fails: a
checkpoint's outage while the graph ran (``CheckpointUnavailableError.tools_may_have_run``)
in the last of them fails it instead of sending it back to the queue, and a claim that
finds that many before it (their failing could not be recorded, or workers stopped, died
or lost the lease mid-drive) fails it before the graph runs. Each retry may run again a
tool whose result was not saved, and no reading of PostgreSQL's errors is right every
time (a message over 1 GiB ends the connection, as an outage does). The count is the
run's (``Run.drives_in_a_row``, in the database, counted at each claim), whichever
workers drive it; a drive that failed before a tool could run takes its count back (if
the database takes the release); 0 again only when a drive goes through."""
STOP_GRACE_S = 20.0
"""How long ``run`` lets in-flight drives (a resume and what follows it, up to the run's
next interrupt or its end) and the time-keeping pass finish after ``stop`` is set,
seconds: inside the 30 s platforms give between SIGTERM and SIGKILL. A drive still going
then is cancelled and its run given back to the queue (``_give_back``)."""


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
        pacer: Spaces out the redraws of lagging cards (share the ``ExpiryKeeper``'s, so
            all background Slack calls keep to one budget).
        max_concurrent_runs: Runs driven at once; a run waiting for room is not claimed
            (another worker may take it), and a slow tool holds its room until it ends.
        stop_grace_s: How long in-flight drives may finish after ``stop``, seconds.
        paused_threads: The deployed agent's threads (``AGENT_URL``): each sweep also
            drives this agent's runs whose thread waits on an interrupt with no request
            yet (a run the engineer's own app started on an attached thread paused it).
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
        pacer: Pacer | None = None,
        max_concurrent_runs: int = MAX_CONCURRENT_RUNS,
        stop_grace_s: float = STOP_GRACE_S,
        paused_threads: PausedThreads | None = None,
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
        self.pacer = pacer or Pacer()
        self.leases = Leases(store, owner=self.owner, lease_s=lease_s)
        self._room = asyncio.Semaphore(max_concurrent_runs)
        self.stop_grace_s = stop_grace_s
        self.paused_threads = paused_threads
        self._published = False
        self._active: dict[str, asyncio.Task[None]] = {}
        self._again: set[str] = set()
        self._stopping = False
        self.sweeps = 0
        """Sweeps finished (tests wait on it to prove something was not due)."""
        self.time_kept = 0
        """Time-keeping passes finished (``keep_time``)."""

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
        """Advance signalled runs, sweep, and keep time until ``stop`` is set, then let
        in-flight drives finish (``stop_grace_s``; no new one starts) and return.

        A signal names its run, which is advanced at once, with no sweep on the way (the
        click path). The sweep runs every ``poll_interval_s`` (sooner when another
        worker's lease ends) and whenever a wait ends with no signal (a broken bus): the
        safety net for lost signals. Reminders, expiries and card redraws run in their
        own task (``keep_time``), so a backlog of them never delays a decision.
        """
        loop = asyncio.get_running_loop()
        keeper = asyncio.create_task(self._keep_time(stop))
        backoff_s = 0.0
        next_sweep = loop.time()
        while not stop.is_set():
            if loop.time() >= next_sweep:
                try:
                    await self.sweep()
                    backoff_s = 0.0
                    next_sweep = loop.time() + await self._until_next_sweep()
                except StoreUnavailableError as exc:
                    backoff_s = min(max(backoff_s * 2, 0.5), STORE_BACKOFF_MAX_S)
                    next_sweep = loop.time() + backoff_s
                    logger.warning(
                        "sweep failed, database unavailable (%s); retry in %.1f s", exc, backoff_s
                    )
            signals = await self._wait(stop, max(0.0, next_sweep - loop.time()))
            if signals:
                self._advance_signalled(signals)
            elif not backoff_s:
                next_sweep = loop.time()  # no signal: the bus may be broken; sweep now
        self._stopping = True
        in_flight = [keeper, *self._active.values()]
        if len(in_flight) > 1:
            logger.info("stopping: finishing %d in-flight runs", len(in_flight) - 1)
        _, late = await asyncio.wait(in_flight, timeout=self.stop_grace_s)
        for task in late:
            task.cancel()  # a drive gives its run back as it ends (``advance``)
        if late:
            await asyncio.wait(late, timeout=self.stop_grace_s)
        await self.leases.close()
        await self.pacer.close()

    def _advance_signalled(self, signals: list[Signal]) -> None:
        """Advance each signalled run from the state its signal implies: a requested run
        from ``queued``, a decided one from ``waiting``. A run this worker is advancing
        now is advanced again once that ends (the decision may have come too late for
        it). A signal of another agent's run is left to its workers (``claim_run``)."""
        for signal in signals:
            state = RunState.QUEUED if signal.kind == "run_requested" else RunState.WAITING
            if signal.run_id in self._active:
                self._again.add(signal.run_id)
            else:
                self._spawn(signal.run_id, state)

    async def sweep(self) -> None:
        """Start queued runs and advance waiting runs that have work (the safety net for
        lost signals): indexed queries, bounded batches, nothing read of paused runs with
        nothing to do."""
        if not self._published:
            await self.publish_start_rules()
        for run_id in await self.store.startable_runs(self.agent_name):
            self._spawn(run_id, RunState.QUEUED)
        for run_id in await self.store.runs_needing_work(self.agent_name):
            self._spawn(run_id, RunState.WAITING)
        for run in await self._newly_paused():
            self._spawn(run.run_id, run.state)
        self.sweeps += 1

    async def _newly_paused(self) -> list[Run]:
        """This agent's waiting or done runs whose deployed thread waits on an interrupt
        none of their requests is for (a run nobody here streamed paused it). Only the
        ``PAUSED_THREADS_SCAN`` most recently changed threads are read; an unreachable
        server is logged and left to the next sweep."""
        if self.paused_threads is None:
            return []
        try:
            threads = await self.paused_threads.paused_threads(limit=PAUSED_THREADS_SCAN)
        except AgentServerUnavailableError as exc:
            logger.warning("paused threads not read, will retry on the next sweep: %s", exc)
            return []
        found = []
        for thread in threads:
            run = await self.store.run_of_thread(thread.thread_id)
            if run is None or run.agent != self.agent_name:
                continue
            if run.state not in (RunState.WAITING, RunState.DONE):
                continue
            known = {r.interrupt_id for r in await self.store.requests_for_run(run.run_id)}
            if thread.interrupt_ids - known:
                logger.info(
                    "run=%s thread_id=%s paused on the server with no card yet",
                    run.run_id,
                    run.thread_id,
                )
                found.append(run)
        return found

    async def keep_time(self, stop: asyncio.Event | None = None) -> bool:
        """One pass of time keeping: remind, escalate and expire due requests (a batch of
        each, ``ExpiryKeeper``), advance the runs whose requests expired, redraw cards
        that missed a redraw, and tell the failures Slack did not take. Slack calls are
        paced (``agent_bridge.pacing``).

        Returns:
            Whether more may be due at once (the next pass should follow now).

        Raises:
            StoreUnavailableError: If the database is unreachable.
        """
        more = False
        if self.expiry is not None:
            kept = await self.expiry.sweep(stop=stop)
            for run_id in kept.expired_runs:
                self._advance_signalled([Signal(kind="decision_recorded", run_id=run_id)])
            more = kept.more
        more = await self._redraw_lagging_cards(stop) or more
        more = await self._tell_untold_failures(stop) or more
        self.time_kept += 1
        return more

    async def _keep_time(self, stop: asyncio.Event) -> None:
        """``keep_time`` until ``stop`` is set: at once again while a backlog lasts, else
        every ``TIME_KEEPING_S`` or ``poll_interval_s``, the shorter (after a database
        failure, with backoff)."""
        backoff_s = 0.0
        while not stop.is_set():
            try:
                more = await self.keep_time(stop)
                backoff_s = 0.0
            except StoreUnavailableError as exc:
                more = False
                backoff_s = min(max(backoff_s * 2, 0.5), STORE_BACKOFF_MAX_S)
                logger.warning(
                    "time keeping failed, database unavailable (%s); retry in %.1f s",
                    exc,
                    backoff_s,
                )
            except Exception:  # one bad request must not end time keeping for good
                more = False
                backoff_s = min(max(backoff_s * 2, 0.5), STORE_BACKOFF_MAX_S)
                logger.exception("time keeping failed; retry in %.1f s", backoff_s)
            if not more:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        stop.wait(), backoff_s or min(self.poll_interval_s, TIME_KEEPING_S)
                    )

    async def _redraw_lagging_cards(self, stop: asyncio.Event | None = None) -> bool:
        """Redraw cards whose last change they may not show (the process that made the
        change died before its redraw, or Slack failed it): ``drawn_revision`` lags
        ``revision``. Changes younger than ``CARD_REDRAW_GRACE_S`` are left to the
        process that made them. Returns whether more may lag (a full batch)."""
        lagging = await self.store.undrawn_cards(
            changed_before=self.store.clock() - CARD_REDRAW_GRACE_S, limit=CARD_REDRAW_MAX
        )
        for request in lagging:
            if stop is not None and stop.is_set():
                break
            logger.info(
                "run=%s request=%s card behind its state (r%d drawn, r%d now), redrawing",
                request.run_id,
                request.request_id,
                request.drawn_revision,
                request.revision,
            )
            await self.pacer.update()
            run = await self.store.get_run(request.run_id)
            await self.driver.notifier.approval_updated(request, run=run)
        return len(lagging) == CARD_REDRAW_MAX

    async def _tell_untold_failures(self, stop: asyncio.Event | None = None) -> bool:
        """Post the failure note of this agent's failed runs that Slack did not take when
        they failed (``RunFailures.end`` goes on without it), and mark their first
        message failed: the run's thread said it was working, forever. One worker takes
        each turn (``ApprovalStore.take_untold``); a note Slack fails again (a channel
        archived) waits a grace for its next, and does not hold back the others.
        Returns whether more may be untold (a full batch)."""
        untold = await self.store.untold_failures(
            self.agent_name,
            key=FAILED_NOTICE,
            meant_before=self.store.clock() - FAILURE_TELL_GRACE_S,
            limit=FAILURES_TOLD_MAX,
        )
        for run, meant_at in untold:
            if stop is not None and stop.is_set():
                break
            if not await self.store.take_untold(run.run_id, FAILED_NOTICE, meant_at=meant_at):
                continue  # another worker's turn
            await self.pacer.post(run.channel_id)
            try:
                await self.failures.notifier.run_failed(run)
            except NotifyError as exc:  # its next turn comes a grace later; the rest go on
                logger.warning("run=%s failure still not told: %s", run.run_id, exc)
                continue
            logger.info("run=%s failure told after Slack failed it", run.run_id)
        return len(untold) == FAILURES_TOLD_MAX

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

    async def _wait(self, stop: asyncio.Event, timeout_s: float) -> list[Signal]:
        """Return the signals that arrive within ``timeout_s`` seconds; none on stop."""
        signal_task = asyncio.create_task(self.bus.wait(timeout_s))
        stop_task = asyncio.create_task(stop.wait())
        await asyncio.wait({signal_task, stop_task}, return_when=asyncio.FIRST_COMPLETED)
        signals = signal_task.result() if signal_task.done() else []
        for task in (signal_task, stop_task):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        return signals

    def _spawn(self, run_id: str, from_state: RunState) -> None:
        if run_id in self._active or self._stopping:
            return
        context = log_context.task_context(run_id=run_id)  # run_id on every line of it
        context.run(logs.hold_run_secrets)  # and none of its redacted values
        task = asyncio.create_task(
            self.advance(run_id, from_state, agent=self.agent_name), context=context
        )
        self._active[run_id] = task
        task.add_done_callback(lambda _: self._ended(run_id))

    def _ended(self, run_id: str) -> None:
        """Forget the run's task; advance it again if a signal came for it meanwhile."""
        self._active.pop(run_id, None)
        if run_id in self._again:
            self._again.discard(run_id)
            if not self._stopping:
                self._spawn(run_id, RunState.WAITING)

    async def advance(
        self, run_id: str, from_state: RunState, *, agent: str = DEFAULT_AGENT
    ) -> None:
        """Claim the run (if it is ``agent``'s) once there is room (``max_concurrent_runs``)
        and drive it until it waits for people or ends.

        If Slack, the Agent Server (``AGENT_URL``) or the database (a store statement, or
        a checkpoint's: ``postgres_checkpointer``) fails, the run goes back to the queue
        and the next sweep drives it again from its checkpoint (the driver only ever
        continues from there); if the database cannot take even that, the lease is left
        to expire and a later sweep retries. A run whose last ``CHECKPOINT_RETRIES``
        drives did not go through (the last failing for a checkpoint while its graph ran,
        or none of them recorded) fails instead. If the lease cannot be renewed, the
        driving stops before the lease can end (``agent_bridge.lease``) and the run is
        left for whoever takes it next. A failure of the graph, or a message Slack refuses
        for good, ends the run (``RunFailures``).
        """
        async with self._room:
            await self._claim_and_drive(run_id, from_state, agent)

    async def _claim_and_drive(self, run_id: str, from_state: RunState, agent: str) -> None:
        if self._stopping:
            return  # it waited for room past the stop: left unclaimed, for other workers
        claimed_at = time.monotonic()  # before the claim's own clock read (Leases.hold)
        try:
            run = await self.store.claim_run(
                run_id, owner=self.owner, lease_s=self.lease_s, from_state=from_state, agent=agent
            )
        except StoreUnavailableError as exc:
            logger.warning("run=%s not claimed, database unavailable, will retry: %s", run_id, exc)
            return
        if run is None:
            return
        if run.drives_before >= CHECKPOINT_RETRIES:
            await self._fail_unfinished(run)
            return
        went_through = False
        try:
            state, answer = await self.leases.hold(
                run_id, self.driver.drive(run), claimed_at=claimed_at
            )
            went_through = True
            await self.store.release_run(
                run_id, owner=self.owner, state=state, final_answer=answer, drives_in_a_row=0
            )
        except asyncio.CancelledError:
            if self._stopping:
                await self._give_back(run)
            raise
        except LeaseLost as exc:
            logger.error("run=%s thread_id=%s %s", run.run_id, run.thread_id, exc)
        except NotifyError as exc:
            await self._slack_failed(run, exc)
        except AgentServerUnavailableError as exc:
            # Nothing was sent, or what was sent goes on on the server by itself: the next
            # drive joins it before reading the state (agent_bridge.remote_agent).
            logger.warning(
                "run=%s thread_id=%s agent server unavailable, will retry on the next sweep: %s",
                run.run_id,
                run.thread_id,
                exc,
            )
            await self._requeue(run, drives_in_a_row=run.drives_before)
        except CheckpointUnavailableError as exc:
            await self._checkpoint_failed(run, exc)
        except StoreUnavailableError as exc:
            # The checkpoint is intact (a store statement failed, not the graph): back
            # to the queue if the database takes that, else to the lease.
            logger.warning(
                "run=%s thread_id=%s database failed mid-drive, will retry: %s",
                run.run_id,
                run.thread_id,
                exc,
            )
            await self._requeue(run, drives_in_a_row=0 if went_through else run.drives_before)
        except Exception as exc:
            logger.exception("run=%s thread_id=%s failed", run.run_id, run.thread_id)
            lost = isinstance(exc, CheckpointLostError)  # with what earlier drives sent
            await self._fail(run, error_text(exc), sent=None if lost else self._sent(run))
        finally:
            self.driver.answers_sent(run_id)  # forgotten: only a failure reads it
            self.store.forget_notices_ts(run_id)  # left by a drive that was not released

    async def _fail_unfinished(self, run: Run) -> None:
        """Fail ``run`` without driving it: its last ``CHECKPOINT_RETRIES`` drives did not
        go through (their failing could not be recorded, as when a checkpoint's write
        takes the database down with it, or their workers died or lost the lease), and
        another might run a tool again whose result was never saved."""
        logger.error(
            "run=%s thread_id=%s its last %d drives did not go through; failing it",
            run.run_id,
            run.thread_id,
            run.drives_before,
        )
        await self._fail(
            run,
            f"its last {run.drives_before} drives in a row did not go through (a checkpoint "
            "unavailable while the graph ran, or a worker that stopped, died or lost its "
            "lease mid-drive); not driven again, so that no tool runs again",
            sent=None,  # which answers those drives gave the graph is not known
        )

    async def _checkpoint_failed(self, run: Run, exc: CheckpointUnavailableError) -> None:
        """Send ``run`` back to the queue after a checkpoint's outage (its checkpoint is
        as it was before the failed statement); fail it if the graph ran
        (``tools_may_have_run``) and this is the ``CHECKPOINT_RETRIES``-th drive in a row
        that did not go through (``Run.drives_in_a_row``, counted by the claim: every
        worker, and a restarted one, adds to the same). A drive whose graph did not run
        takes its count back. If the database cannot take the release, the lease expires
        and the drive stays counted."""
        if not exc.tools_may_have_run:
            logger.warning(
                "run=%s thread_id=%s checkpoint unavailable before the graph ran, will retry: %s",
                run.run_id,
                run.thread_id,
                exc,
            )
            await self._requeue(run, drives_in_a_row=run.drives_before)
            return
        failures = run.drives_in_a_row
        if failures < CHECKPOINT_RETRIES:
            logger.warning(
                "run=%s thread_id=%s checkpoint unavailable while the graph ran "
                "(%d of %d drives in a row), will retry: %s",
                run.run_id,
                run.thread_id,
                failures,
                CHECKPOINT_RETRIES,
                exc,
            )
            await self._requeue(run)
            return
        logger.error(
            "run=%s thread_id=%s checkpoint unavailable in %d drives in a row; failing it: %s",
            run.run_id,
            run.thread_id,
            failures,
            exc,
        )
        await self._fail(
            run, f"{type(exc).__name__} in {failures} drives in a row: {exc}", sent=None
        )

    async def _give_back(self, run: Run) -> None:
        """Release a run whose drive was cut by the end of ``stop_grace_s`` as ``queued``,
        so another worker continues it from its checkpoint at once rather than after
        the lease; what the cut step had not saved runs again there (LangGraph's
        at-least-once rule for a tool's body)."""
        logger.warning(
            "run=%s thread_id=%s still driven %g s after the stop; given back to the queue",
            run.run_id,
            run.thread_id,
            self.stop_grace_s,
        )
        await self._requeue(run)

    async def _requeue(self, run: Run, *, drives_in_a_row: int | None = None) -> None:
        """Release this worker's lease on ``run`` as ``queued``, so the next sweep (here
        or in another worker) continues it from its checkpoint rather than after the
        lease; if the database cannot take that either, the lease expires instead.
        ``drives_in_a_row`` sets ``Run.drives_in_a_row`` (``None`` keeps the claim's
        count: this drive counted)."""
        try:
            await self.store.release_run(
                run.run_id,
                owner=self.owner,
                state=RunState.QUEUED,
                drives_in_a_row=drives_in_a_row,
            )
        except StoreUnavailableError as exc:
            logger.warning("run=%s not given back, its lease will expire: %s", run.run_id, exc)

    async def _slack_failed(self, run: Run, exc: NotifyError) -> None:
        """Requeue the run after a passing Slack failure; fail it after a refusal."""
        if exc.retryable:
            logger.warning(
                "run=%s thread_id=%s Slack failed, will retry on the next sweep: %s",
                run.run_id,
                run.thread_id,
                exc,
            )
            # The step was saved before its results were posted: its tools do not run again.
            await self._requeue(run, drives_in_a_row=run.drives_before)
            return
        logger.error(
            "run=%s thread_id=%s failed, Slack refused a message: %s",
            run.run_id,
            run.thread_id,
            exc,
        )
        await self._fail(run, str(exc), sent=self._sent(run))

    def _sent(self, run: Run) -> frozenset[str] | None:
        """The requests whose answers the failed drive of ``run`` gave the graph; ``None``
        (not known) if drives before it did not go through: they may have given it others."""
        sent = self.driver.answers_sent(run.run_id)
        return None if run.drives_before else sent

    async def _fail(self, run: Run, error: str, *, sent: Collection[str] | None) -> None:
        """End the run as failed (``RunFailures.end``, ``sent``: the requests whose answers
        the failed drive gave the graph, ``None`` if not known) under its lease, renewed
        with the others' while Slack is told (a post held by a rate limit can outlast one lease):
        a lease lost meanwhile stops it there, the run being its next holder's to end.
        The cards it closed are redrawn after, the run no longer leased. If the database
        cannot take it, the lease expires and the next claim drives the run again (or,
        after ``CHECKPOINT_RETRIES`` drives that did not go through, fails it at once)."""
        try:
            closed = await self.leases.hold(
                run.run_id,
                self.failures.end(
                    run, owner=self.owner, error=error, lease_s=self.lease_s, sent=sent
                ),
                claimed_at=time.monotonic(),  # end's first statement renews the lease
            )
        except StoreUnavailableError as exc:
            logger.warning(
                "run=%s thread_id=%s not recorded as failed, database unavailable; its lease "
                "will expire: %s",
                run.run_id,
                run.thread_id,
                exc,
            )
            return
        except LeaseLost as exc:
            logger.error(
                "run=%s thread_id=%s lease lost while ending it as failed (closed cards, if "
                "any, are redrawn by time-keeping): %s",
                run.run_id,
                run.thread_id,
                exc,
            )
            return
        await self.failures.redraw(run, closed)

"""Ending a failed run, in one place: say so in its Slack thread, record it, close its
cards.

Slack gets one sentence naming the run (``wording.run_failed_text``), never the error:
exception text can hold server paths and data. The error is logged here with the run's
ID and ``thread_id``, and kept in ``runs.error``.

The worker calls ``end``, then ``redraw``, when the graph raised or Slack refused a
message for good; nobody should then decide a call of the run, and each closed card says
whether its call ran, may have run, or will not run.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Collection

from agent_bridge.models import ApprovalRequest, Run
from agent_bridge.notifier import Notifier, NotifyError
from agent_bridge.store import ApprovalStore
from agent_bridge.wording import (
    run_failed_after_call_ran_note,
    run_failed_call_may_have_run_note,
    run_failed_note,
)

logger = logging.getLogger(__name__)


class RunFailures:
    """Ends failed runs.

    Args:
        store: The approval store.
        notifier: Posts the failure and redraws the closed cards.
    """

    def __init__(self, *, store: ApprovalStore, notifier: Notifier) -> None:
        self.store = store
        self.notifier = notifier

    async def end(
        self,
        run: Run,
        *,
        owner: str,
        error: str,
        lease_s: float,
        sent: Collection[str] | None = (),
    ) -> list[ApprovalRequest]:
        """End ``run``, which ``owner`` drove: if ``owner`` still holds its lease (renewed
        for ``lease_s`` seconds, so it holds while Slack is told), post the failure in
        the run's Slack thread (best effort, without ``error``), then release the run as
        failed with ``error`` and close its open requests at once
        (``ApprovalStore.fail_run``: one transaction). A worker that lost the lease
        (another worker drives the run now, or its workspace was closed) says and changes
        nothing: the run is not its to end.

        A closed request's note says its call will not run (``run_failed_note``), but for
        one whose decision lets it run (``ApprovalRequest.may_run_once_sent``): with a
        result recorded, it ran (``run_failed_after_call_ran_note``); in ``sent``, the
        requests whose answers the failed drive gave the graph
        (``RunDriver.answers_sent``; ``None``: not known, as when earlier drives did not go
        through), it may have run (``run_failed_call_may_have_run_note``).

        Returns:
            The requests closed, whose cards are to be redrawn; none if the run was not
            ``owner``'s.

        Raises:
            StoreUnavailableError: The database failed; the lease expires and a later
                sweep drives the run again.
        """
        if not await self.store.renew_leases([run.run_id], owner=owner, lease_s=lease_s):
            logger.warning(
                "run=%s thread_id=%s failed after its lease was lost; left to its holder: %s",
                run.run_id,
                run.thread_id,
                error,
            )
            return []
        # As stored: the drive that failed may have posted the run's Slack thread since
        # the claim the caller's copy is from, and the failure goes in that thread.
        run = await self.store.get_run(run.run_id)
        with contextlib.suppress(NotifyError):
            await self.notifier.run_failed(run)
        note = run_failed_note(run.run_id)

        def note_for(request: ApprovalRequest) -> str | None:
            if not request.may_run_once_sent:
                return None
            if request.result is not None:
                return run_failed_after_call_ran_note(run.run_id)
            if sent is None or request.request_id in sent:
                return run_failed_call_may_have_run_note(run.run_id)
            return None

        closed = await self.store.fail_run(
            run.run_id, owner=owner, error=error, note=note, note_for=note_for
        )
        logger.info("run=%s thread_id=%s failed: %s", run.run_id, run.thread_id, error)
        return closed

    async def redraw(self, run: Run, closed: list[ApprovalRequest]) -> None:
        """Redraw the cards of the requests ``end`` closed (a redraw lost to a crash is
        made by the worker's time-keeping: ``undrawn_cards``)."""
        for request in closed:
            await self.notifier.approval_updated(request, run=run)

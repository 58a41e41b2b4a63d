"""Review time limits: a reminder at half-time, escalation to the backup approvers after
``escalate_after_s``, and the policy's default decision at expiry.

Swept by the worker's time-keeping task with the store's clock (tests control it), apart
from applying decisions, in batches paced to Slack's rate limits. Every step is
compare-and-set in the database, so with several workers each reminder and escalation
is posted once and an expiry races a reviewer's click like any other decision: the first
one wins.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from agent_bridge import log_context, metrics, wording
from agent_bridge.models import ApprovalRequest
from agent_bridge.notifier import Notifier, NotifyError
from agent_bridge.pacing import Pacer
from agent_bridge.store import ApprovalStore

logger = logging.getLogger(__name__)

BATCH = 100
"""Most reminders, escalations and expiries one sweep handles of each (the next sweep
takes the rest): a backlog is read a batch at a time, never all into memory."""


def expiry_note(request: ApprovalRequest) -> str:
    """What the card says after the request expired."""
    decision = request.timeout_decision
    verb = wording.EXPIRY_VERBS.get(decision.type if decision else "", wording.DECIDED_VERB)
    return wording.expiry_note(verb)


@dataclass(frozen=True)
class KeptTime:
    """What one ``ExpiryKeeper.sweep`` did.

    Attributes:
        expired_runs: Runs with a request it expired (each has a decision to apply now).
        more: Whether a batch was full, so more may be due at once (sweep again now).
    """

    expired_runs: list[str]
    more: bool


class ExpiryKeeper:
    """Reminds, escalates and expires approval requests whose tool has
    ``review_timeout_s`` or ``escalate_after_s``.

    It runs apart from applying decisions (``Worker``'s time-keeping task) and in
    bounded batches, its Slack calls paced by ``pacer``: thousands falling due at once
    (after an outage) are worked off steadily and never delay a click's resume.

    Args:
        store: The approval store (its clock decides what is due).
        notifier: Posts reminders and redraws expired cards.
        pacer: Spaces out its Slack calls (``agent_bridge.pacing``).
    """

    def __init__(
        self, *, store: ApprovalStore, notifier: Notifier, pacer: Pacer | None = None
    ) -> None:
        self.store = store
        self.notifier = notifier
        self.pacer = pacer or Pacer()

    async def sweep(self, *, limit: int = BATCH, stop: asyncio.Event | None = None) -> KeptTime:
        """Post up to ``limit`` due reminders, escalate up to ``limit`` due requests, and
        expire up to ``limit`` due requests; stop between two of them once ``stop`` is
        set.

        Returns:
            The runs whose requests expired (their decision is to be applied), and
            whether more may be due.

        Raises:
            StoreUnavailableError: If the database is unreachable.
        """

        def stopping() -> bool:
            return stop is not None and stop.is_set()

        reminders = await self.store.due_reminders(limit=limit)  # posted, half-way
        for request in reminders:
            if stopping():
                break
            await self.pacer.update()  # the card is redrawn first, then the post under it
            await self.pacer.post(request.channel_id)
            if await self.store.mark_reminded(request.request_id):
                await self._tell(request, reminder=True)
        escalations = await self.store.due_escalations(limit=limit)
        for request in escalations:
            if stopping():
                break
            await self.pacer.update()  # the card is redrawn first, then the post under it
            await self.pacer.post(request.channel_id)
            escalated = await self.store.escalate(request.request_id)
            if escalated is not None:
                logger.info(
                    "run=%s interrupt=%s request=%s escalated to %s",
                    escalated.run_id,
                    escalated.interrupt_id,
                    escalated.request_id,
                    ",".join(escalated.rules.escalate_to),
                )
                await self._escalate(escalated)
        expiries = await self.store.due_expiries(limit=limit)
        expired_runs: list[str] = []
        for request in expiries:
            if stopping():
                break
            await self.pacer.update()
            expired = await self.store.expire(request.request_id, note=expiry_note(request))
            if expired is not None:
                metrics.decision_recorded(expired, source="timeout")
                logger.info(
                    "run=%s interrupt=%s request=%s expired",
                    expired.run_id,
                    expired.interrupt_id,
                    expired.request_id,
                )
                expired_runs.append(expired.run_id)
                await self._tell(expired, reminder=False)
        more = limit in (len(reminders), len(escalations), len(expiries))
        return KeptTime(expired_runs=list(dict.fromkeys(expired_runs)), more=more)

    @log_context.request_ids
    async def _escalate(self, request: ApprovalRequest) -> None:
        """Tell the backup approvers; a Slack failure is logged (the card is escalated in
        the store, so they may decide, and its next redraw shows it)."""
        run = await self.store.get_run(request.run_id)
        try:
            await self.notifier.escalated(request, run=run)
        except NotifyError as exc:
            logger.warning(
                "run=%s request=%s escalation not posted: %s", run.run_id, request.request_id, exc
            )

    @log_context.request_ids
    async def _tell(self, request: ApprovalRequest, *, reminder: bool) -> None:
        run = await self.store.get_run(request.run_id)
        try:
            if reminder:
                await self.notifier.reminder(request, run=run)
            else:
                await self.notifier.approval_updated(request, run=run)
        except NotifyError as exc:
            if reminder:
                await self.store.unmark_reminded(request.request_id)  # next sweep retries
            logger.warning(
                "run=%s request=%s %s not posted: %s",
                request.run_id,
                request.request_id,
                "reminder" if reminder else "expiry",
                exc,
            )

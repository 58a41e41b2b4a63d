"""Review time limits: a reminder at half-time, escalation to the backup approvers after
``escalate_after_s``, and the policy's default decision at expiry.

Swept by the worker with the store's clock (tests control it). Every step is
compare-and-set in the database, so with several workers each reminder and escalation
is posted once and an expiry races a reviewer's click like any other decision: the first
one wins.
"""

from __future__ import annotations

import logging

from agent_bridge import wording
from agent_bridge.models import ApprovalRequest
from agent_bridge.notifier import Notifier, NotifyError
from agent_bridge.store import ApprovalStore

logger = logging.getLogger(__name__)


def expiry_note(request: ApprovalRequest) -> str:
    """What the card says after the request expired."""
    decision = request.timeout_decision
    verb = wording.EXPIRY_VERBS.get(decision.type if decision else "", wording.DECIDED_VERB)
    return wording.expiry_note(verb)


class ExpiryKeeper:
    """Reminds, escalates and expires approval requests whose tool has
    ``review_timeout_s`` or ``escalate_after_s``.

    Args:
        store: The approval store (its clock decides what is due).
        notifier: Posts reminders and redraws expired cards.
    """

    def __init__(self, *, store: ApprovalStore, notifier: Notifier) -> None:
        self.store = store
        self.notifier = notifier

    async def sweep(self) -> None:
        """Post due reminders, escalate due requests, and expire due requests (the
        worker's sweep then finds their runs with a decision to apply).

        Raises:
            StoreUnavailableError: If the database is unreachable.
        """
        for request in await self.store.due_reminders():  # posted, half-way, not yet expired
            if await self.store.mark_reminded(request.request_id):
                await self._tell(request, reminder=True)
        for request in await self.store.due_escalations():
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
        for request in await self.store.due_expiries():
            expired = await self.store.expire(request.request_id, note=expiry_note(request))
            if expired is not None:
                logger.info(
                    "run=%s interrupt=%s request=%s expired",
                    expired.run_id,
                    expired.interrupt_id,
                    expired.request_id,
                )
                await self._tell(expired, reminder=False)

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

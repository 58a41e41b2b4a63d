"""Recording a reviewer's decision and redrawing the cards it changes.

``record`` is the hot path of a click: one compare-and-set in the database (the first
valid decision wins, docs/architecture.md invariant 2); ``signal`` then tells the
workers, once Slack has its answer (the signal is only a doorbell: a stalled Redis must
never hold back an ack, and a signal lost is found by the workers' sweep).
Approvals and edits are counted towards the tool's ``required_approvals`` (quorum) on the
version of the call the person saw; a reject or respond decides at once.
``refresh`` hands the redraw to the card owner, the same path the worker redraws by.
"""

from __future__ import annotations

import logging

from agent_bridge import metrics
from agent_bridge.bus import Bus, Signal
from agent_bridge.models import ApprovalRequest, Decision, Recorded, Recording
from agent_bridge.store import ApprovalStore
from bot.card_owner import CardOwner

logger = logging.getLogger(__name__)


class DecisionRecorder:
    """Records decisions in the store, tells workers, redraws cards.

    Args:
        store: The approval store.
        bus: Where the "decision recorded" signal goes.
        cards: The card owner.
    """

    def __init__(self, *, store: ApprovalStore, bus: Bus, cards: CardOwner) -> None:
        self.store = store
        self.bus = bus
        self.cards = cards

    async def record(
        self,
        request_id: str,
        decision: Decision,
        *,
        user_id: str,
        team_id: str | None,
        version: str,
        still_approvers: frozenset[str] | None = None,
        known: ApprovalRequest | None = None,
    ) -> Recording:
        """Record ``decision`` if the request is still pending (the caller signals the
        workers with ``signal`` once Slack has its answer).

        The decision must have passed ``agent_bridge.decisions.check_decision`` and the
        person ``bot.guard.Guard``.

        Args:
            request_id: The request.
            decision: What the person decided.
            user_id: Who (Slack user ID).
            team_id: Their workspace.
            version: The call's version they saw (``ApprovalRequest.version``, from the
                card's button or the opened form).
            still_approvers: Of the earlier approvals, the people who may still approve
                (``bot.guard.Guard.current_approvers``); ``None``: all of them.
            known: The request as the guard just read it (approve: saves a read,
                ``ApprovalStore.approve``).

        Returns:
            As ``ApprovalStore.approve`` (approve), ``propose_edit`` (edit) or
            ``record_decision`` (reject, respond).

        Raises:
            StoreUnavailableError: If the database is unreachable; nothing was recorded.
        """
        if decision.type == "approve":
            outcome = await self.store.approve(
                request_id,
                user_id=user_id,
                team_id=team_id,
                version=version,
                still_approvers=still_approvers,
                known=known,
            )
        elif decision.type == "edit":
            outcome = await self.store.propose_edit(
                request_id, decision, user_id=user_id, team_id=team_id, version=version
            )
        else:
            outcome = await self.store.record_decision(
                request_id, decision, user_id=user_id, team_id=team_id, version=version
            )
        if isinstance(outcome, Recorded):
            request = outcome.request
            metrics.decision_recorded(request)
            logger.info(
                "run=%s thread_id=%s interrupt=%s index=%s request=%s decided %s by %s",
                request.run_id,
                request.thread_id,
                request.interrupt_id,
                request.index,
                request.request_id,
                decision.type,
                user_id,
            )
        return outcome

    async def signal(self, outcome: Recording) -> None:
        """Tell the workers that ``outcome`` decided its request (``Recorded``), so its run
        resumes at once; nothing for any other outcome. A Redis failure is logged
        (``RedisBus.publish``) and the workers' sweep finds the decision instead."""
        if isinstance(outcome, Recorded):
            await self.bus.publish(Signal(kind="decision_recorded", run_id=outcome.request.run_id))

    async def refresh(self, request: ApprovalRequest) -> None:
        """Redraw ``request``'s card and its batch's pending siblings (``CardOwner.redraw``)."""
        await self.cards.redraw(request.request_id, known=request)

"""Button clicks (``block_actions``): approve at once; edit, reject and respond open modals.

Every listener acks first (Slack wants an answer within 3 s); a modal is opened with
the click's ``trigger_id`` straight away, before any other work (it expires in 3 s).
A click that cannot be honoured (stale card, already decided, not allowed, database
down) is answered privately with ``chat.postEphemeral``, in the wording of
``agent_bridge.wording``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncApp

from agent_bridge import wording
from agent_bridge.decisions import check_decision, refusal
from agent_bridge.errors import StoreUnavailableError
from agent_bridge.models import (
    DECISION_TYPES,
    AlreadyDecided,
    ApprovalRequest,
    ApprovalState,
    Decision,
    Recorded,
)
from agent_bridge.store import ApprovalStore
from bot import ids
from bot.blocks import already_decided_text
from bot.errors import PayloadError, SlackCallError
from bot.modals import (
    render_edit_modal,
    render_full_args_modal,
    render_reject_modal,
    render_respond_modal,
)
from bot.mrkdwn import escape
from bot.payloads import BlockActions, parse
from bot.recorder import DecisionRecorder
from bot.slack_gateway import Slack

logger = logging.getLogger(__name__)

Ack = Callable[..., Awaitable[Any]]

MODALS: dict[str, Callable[[ApprovalRequest], dict[str, Any]]] = {
    "edit": render_edit_modal,
    "reject": render_reject_modal,
    "respond": render_respond_modal,
}


class ActionListeners:
    """The ``block_actions`` listeners.

    Args:
        store: The approval store (to read requests for modals).
        recorder: Records approve clicks.
        slack: The Slack gateway (private answers, modals).
    """

    def __init__(self, *, store: ApprovalStore, recorder: DecisionRecorder, slack: Slack) -> None:
        self.store = store
        self.recorder = recorder
        self.slack = slack

    def register(self, app: AsyncApp) -> None:
        """Attach the listeners to ``app``."""
        app.action(re.compile(f"^{re.escape(ids.ACTION_PREFIX)}"))(self.on_decision)
        app.action(ids.VIEW_ARGS_ACTION)(self.on_view_args)

    async def on_decision(self, ack: Ack, body: dict[str, Any]) -> None:
        """A decision button: record approve; open the modal of edit/reject/respond."""
        await ack()
        try:
            payload = parse(BlockActions, body)
        except PayloadError as exc:
            logger.warning("%s", exc)
            return
        decision_type = payload.action.action_id.removeprefix(ids.ACTION_PREFIX)
        request_id = payload.action.value or ""
        if decision_type not in DECISION_TYPES:
            logger.warning(
                "unknown action_id %r from %s", payload.action.action_id, payload.user.id
            )
            await self.tell(payload, wording.STALE_TEXT)
            return
        try:
            if decision_type == "approve":
                await self._approve(payload, request_id)
            else:
                await self._open_modal(payload, request_id, decision_type)
        except StoreUnavailableError as exc:
            logger.error(
                "request=%s %s click by %s not recorded: %s",
                request_id,
                decision_type,
                payload.user.id,
                exc,
            )
            await self.tell(payload, wording.STORE_DOWN_TEXT)

    async def on_view_args(self, ack: Ack, body: dict[str, Any]) -> None:
        """ "View full arguments": a read-only modal with every argument in full."""
        await ack()
        try:
            payload = parse(BlockActions, body)
            request = await self.store.get_request(payload.action.value or "")
        except PayloadError as exc:
            logger.warning("%s", exc)
            return
        except StoreUnavailableError as exc:
            logger.error("full arguments not shown: %s", exc)
            await self.tell(payload, wording.STORE_DOWN_TEXT)
            return
        if request is None:
            await self.tell(payload, wording.STALE_TEXT)
            return
        await self._open_view(payload, render_full_args_modal(request))

    async def tell(self, payload: BlockActions, text: str) -> None:
        """Answer the clicking user privately in the card's channel (and Slack thread);
        a failure is logged (there is no one else to tell)."""
        channel_id = payload.container.channel_id
        if channel_id is None:
            return
        try:
            await self.slack.post_ephemeral(
                team_id=payload.team_id,
                channel_id=channel_id,
                user_id=payload.user.id,
                text=text,
                thread_ts=payload.message.thread_ts if payload.message else None,
            )
        except SlackCallError as exc:
            logger.warning("ephemeral to %s not posted: %s", payload.user.id, exc)

    async def _approve(self, payload: BlockActions, request_id: str) -> None:
        decision = Decision(type="approve")
        known = await self.store.get_request(request_id)
        refused = check_decision(known, decision) if known is not None else {}
        if refused:  # a forged click: the card never had this button
            await self.tell(payload, escape(" ".join(refused.values())))
            return
        outcome = await self.recorder.record(request_id, decision, user_id=payload.user.id)
        if isinstance(outcome, Recorded):
            await self._refresh(outcome.request)
        elif isinstance(outcome, AlreadyDecided):
            await self.tell(payload, already_decided_text(outcome.request))
        else:
            await self.tell(payload, wording.STALE_TEXT)

    async def _refresh(self, request: ApprovalRequest) -> None:
        """Redraw the decided card; the decision is recorded, so a database failure here
        is logged, never told to the reviewer as "not recorded"."""
        try:
            await self.recorder.refresh(request)
        except StoreUnavailableError as exc:
            logger.warning(
                "run=%s request=%s recorded, card not redrawn: %s",
                request.run_id,
                request.request_id,
                exc,
            )

    async def _open_modal(self, payload: BlockActions, request_id: str, decision_type: str) -> None:
        request = await self.store.get_request(request_id)
        if request is None:
            await self.tell(payload, wording.STALE_TEXT)
        elif request.state != ApprovalState.PENDING:
            await self.tell(payload, already_decided_text(request))
        elif refused := refusal(request, decision_type):
            await self.tell(payload, escape(refused))  # plain words, shown as mrkdwn
        else:
            await self._open_view(payload, MODALS[decision_type](request))

    async def _open_view(self, payload: BlockActions, view: dict[str, Any]) -> None:
        try:
            await self.slack.open_view(
                team_id=payload.team_id, trigger_id=payload.trigger_id, view=view
            )
        except SlackCallError as exc:
            logger.warning("modal for %s not opened: %s", payload.user.id, exc)
            await self.tell(payload, wording.FORM_NOT_OPENED_TEXT)

"""Button clicks (``block_actions``): approve at once; edit, reject and respond open modals.

Every listener acks first (Slack wants an answer within 3 s); a modal is opened with
the click's ``trigger_id`` straight away, before any other work (it expires in 3 s).
A click that cannot be honoured (stale card, already decided, database down) is
answered privately with ``chat.postEphemeral``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import ClientError
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from agent_bridge.decisions import check_decision
from agent_bridge.errors import StoreUnavailableError
from agent_bridge.models import DECISION_TYPES, ApprovalRequest, ApprovalState, Decision
from agent_bridge.store import ApprovalStore
from bot import ids
from bot.blocks import already_decided_text, stale_text
from bot.errors import PayloadError
from bot.modals import (
    render_edit_modal,
    render_full_args_modal,
    render_reject_modal,
    render_respond_modal,
)
from bot.payloads import BlockActions, parse
from bot.recorder import DecisionRecorder

logger = logging.getLogger(__name__)

Ack = Callable[..., Awaitable[Any]]

STORE_DOWN_TEXT = (
    ":warning: Your decision was *not* recorded: the approval database is unreachable. "
    "Please try again in a moment."
)

MODALS: dict[str, Callable[[ApprovalRequest], dict[str, Any]]] = {
    "edit": render_edit_modal,
    "reject": render_reject_modal,
    "respond": render_respond_modal,
}


async def tell(client: AsyncWebClient, payload: BlockActions, text: str) -> None:
    """Answer the clicking user privately in the card's channel (and thread)."""
    channel_id = payload.container.channel_id
    if channel_id is None:
        return
    try:
        await client.chat_postEphemeral(
            channel=channel_id,
            user=payload.user.id,
            text=text,
            thread_ts=payload.message.thread_ts if payload.message else None,
        )
    except (SlackApiError, ClientError, TimeoutError) as exc:
        logger.warning("ephemeral to %s not posted: %s", payload.user.id, exc)


class ActionListeners:
    """The ``block_actions`` listeners.

    Args:
        store: The approval store (to read requests for modals).
        recorder: Records approve clicks.
    """

    def __init__(self, *, store: ApprovalStore, recorder: DecisionRecorder) -> None:
        self.store = store
        self.recorder = recorder

    def register(self, app: AsyncApp) -> None:
        """Attach the listeners to ``app``."""
        app.action(re.compile(f"^{re.escape(ids.ACTION_PREFIX)}"))(self.on_decision)
        app.action(ids.VIEW_ARGS_ACTION)(self.on_view_args)

    async def on_decision(self, ack: Ack, body: dict[str, Any], client: AsyncWebClient) -> None:
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
            await tell(client, payload, stale_text())
            return
        try:
            if decision_type == "approve":
                await self._approve(client, payload, request_id)
            else:
                await self._open_modal(client, payload, request_id, decision_type)
        except StoreUnavailableError as exc:
            logger.error(
                "request=%s %s click by %s not recorded: %s",
                request_id,
                decision_type,
                payload.user.id,
                exc,
            )
            await tell(client, payload, STORE_DOWN_TEXT)

    async def on_view_args(self, ack: Ack, body: dict[str, Any], client: AsyncWebClient) -> None:
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
            await tell(client, payload, STORE_DOWN_TEXT)
            return
        if request is None:
            await tell(client, payload, stale_text())
            return
        await self._views_open(client, payload, render_full_args_modal(request))

    async def _approve(
        self, client: AsyncWebClient, payload: BlockActions, request_id: str
    ) -> None:
        decision = Decision(type="approve")
        known = await self.store.get_request(request_id)
        refused = check_decision(known, decision) if known is not None else {}
        if refused:  # a forged click: the card never had this button
            await tell(client, payload, " ".join(refused.values()))
            return
        won, request = await self.recorder.record(request_id, decision, user_id=payload.user.id)
        if request is None:
            await tell(client, payload, stale_text())
        elif not won:
            await tell(client, payload, already_decided_text(request))
        else:
            await self.recorder.refresh(client, request)

    async def _open_modal(
        self, client: AsyncWebClient, payload: BlockActions, request_id: str, decision_type: str
    ) -> None:
        request = await self.store.get_request(request_id)
        if request is None:
            await tell(client, payload, stale_text())
        elif request.state != ApprovalState.PENDING:
            await tell(client, payload, already_decided_text(request))
        elif decision_type not in request.allowed_decisions:
            await tell(client, payload, f"'{decision_type}' is not allowed for this tool call.")
        else:
            await self._views_open(client, payload, MODALS[decision_type](request))

    async def _views_open(
        self, client: AsyncWebClient, payload: BlockActions, view: dict[str, Any]
    ) -> None:
        try:
            await client.views_open(trigger_id=payload.trigger_id, view=view)
        except (SlackApiError, ClientError, TimeoutError) as exc:
            logger.warning("modal for %s not opened: %s", payload.user.id, exc)
            await tell(client, payload, "The form could not be opened; click again.")

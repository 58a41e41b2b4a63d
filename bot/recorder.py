"""Recording a reviewer's decision and redrawing the cards it changes.

``record`` is the hot path of a click: one compare-and-set in the database (the first
valid decision wins, DESIGN invariant 2), then a signal to the workers. ``refresh``
redraws every card of the interrupt (the decided one loses its buttons; its batched
siblings show "n of m decided") with ``chat.update``.
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import ClientError
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from agent_bridge.bus import Bus, Signal
from agent_bridge.models import ApprovalRequest, ApprovalState, Decision
from agent_bridge.store import ApprovalStore
from bot.cards import current_card

logger = logging.getLogger(__name__)

SIBLING_REDRAW_MAX = 10
"""Largest batch whose pending cards are all redrawn after each decision."""


class DecisionRecorder:
    """Records decisions in the store and tells workers.

    Args:
        store: The approval store.
        bus: Where the "decision recorded" signal goes.
    """

    def __init__(self, *, store: ApprovalStore, bus: Bus) -> None:
        self.store = store
        self.bus = bus

    async def record(
        self, request_id: str, decision: Decision, *, user_id: str
    ) -> tuple[bool, ApprovalRequest | None]:
        """Record ``decision`` if the request is still pending.

        Returns:
            As ``ApprovalStore.record_decision``: ``(won, request)``.

        Raises:
            StoreUnavailableError: If the database is unreachable; nothing was recorded.
        """
        won, request = await self.store.record_decision(request_id, decision, user_id=user_id)
        if won and request is not None:
            logger.info(
                "run=%s thread=%s interrupt=%s index=%s request=%s decided %s by %s",
                request.run_id,
                request.thread_id,
                request.interrupt_id,
                request.index,
                request.request_id,
                decision.type,
                user_id,
            )
            await self.bus.publish(Signal(kind="decision_recorded", run_id=request.run_id))
        return won, request

    async def refresh(self, client: AsyncWebClient, request: ApprovalRequest) -> None:
        """Redraw the cards of ``request``'s interrupt with ``chat.update``.

        The decided card always; its pending siblings (to show "n of m decided") only
        in batches of up to ``SIBLING_REDRAW_MAX`` cards: redrawing every sibling on
        every click costs m² updates, and ``chat.update`` is rate limited (Tier 3,
        about 50 a minute). Slack failures are logged, not raised: the decision is
        already recorded.
        """
        run = await self.store.get_run(request.run_id)
        siblings = await self.store.requests_for_interrupt(request.interrupt_id)
        decided = sum(1 for r in siblings if r.state != ApprovalState.PENDING)
        if len(siblings) > SIBLING_REDRAW_MAX:
            siblings = [r for r in siblings if r.request_id == request.request_id]
        for sibling in siblings:
            if sibling.channel_id is None or sibling.message_ts is None:
                continue
            text, blocks = current_card(sibling, run, decided_count=decided)
            try:
                await client.chat_update(
                    channel=sibling.channel_id, ts=sibling.message_ts, text=text, blocks=blocks
                )
            except SlackApiError as exc:
                if exc.response.get("error") == "message_not_found" and sibling.state == "pending":
                    await self._repost(client, sibling, text, blocks)
                else:
                    logger.warning(
                        "run=%s request=%s card not updated: %s",
                        sibling.run_id,
                        sibling.request_id,
                        exc,
                    )
            except (ClientError, TimeoutError) as exc:
                logger.warning(
                    "run=%s request=%s card not updated: %s",
                    sibling.run_id,
                    sibling.request_id,
                    exc,
                )

    async def _repost(
        self, client: AsyncWebClient, request: ApprovalRequest, text: str, blocks: list[Any]
    ) -> None:
        """Post again a pending card someone deleted, so the request can still be decided."""
        assert request.channel_id is not None
        try:
            response = await client.chat_postMessage(
                channel=request.channel_id, text=text, blocks=blocks, thread_ts=request.thread_ts
            )
        except (SlackApiError, ClientError, TimeoutError) as exc:
            logger.warning(
                "run=%s request=%s deleted card not re-posted: %s",
                request.run_id,
                request.request_id,
                exc,
            )
            return
        await self.store.set_message(
            request.request_id, channel_id=request.channel_id, message_ts=str(response["ts"])
        )
        logger.info("run=%s request=%s deleted card re-posted", request.run_id, request.request_id)

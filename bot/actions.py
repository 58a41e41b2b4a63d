"""Button clicks (``block_actions``): approve and ignore at once; edit, reject and respond
open modals.

Every click is acked before its listener starts (``ack_first``; Slack wants an answer
within 3 s). Then, before anything is recorded or opened, the click is authorized
against its signed payload (``bot.guard.Guard``: workspace, the card clicked, four
eyes, approvers). A modal is opened with the click's ``trigger_id`` straight after (it
expires in 3 s), recorded first as an ``OpenedView`` so its submission can be bound to
this user and request. The database work before ``views.open`` (the request read, the
authorization, the ``OpenedView``) runs under a deadline (``MODAL_DB_S``,
``agent_bridge.deadline``) well inside the trigger's life, so a slow database never
makes the trigger expire: past it the clicker is told privately to click again. A click
that cannot be honoured (not allowed, stale card, already decided, the call changed,
database down or slow) is answered privately with ``chat.postEphemeral``, in the
wording of ``agent_bridge.wording`` and ``agent_bridge.review_wording``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncApp

from agent_bridge import log_context, review_wording, wording
from agent_bridge.deadline import within
from agent_bridge.decisions import check_decision, refusal
from agent_bridge.errors import StoreTooSlowError, StoreUnavailableError
from agent_bridge.models import (
    ALL_DECISION_TYPES,
    AlreadyCounted,
    AlreadyDecided,
    ApprovalRequest,
    ApprovalState,
    CallChanged,
    Counted,
    Decision,
    DecisionType,
    Recorded,
    Recording,
)
from agent_bridge.opened_views import OpenedViews
from agent_bridge.store import ApprovalStore
from bot import ids
from bot.authorization import Installation
from bot.blocks import already_decided_text
from bot.errors import ApprovalsUnjudgedError, PayloadError, SlackCallError
from bot.guard import Guard, actor_of, clicked_of, installation_of
from bot.modals import (
    render_edit_modal,
    render_full_args_modal,
    render_reject_modal,
    render_respond_modal,
)
from bot.mrkdwn import escape, text_object
from bot.payloads import BlockActions, parse
from bot.recorder import DecisionRecorder
from bot.slack_gateway import Slack

logger = logging.getLogger(__name__)

Ack = Callable[..., Awaitable[Any]]

MODALS: dict[str, Callable[..., dict[str, Any]]] = {
    "edit": render_edit_modal,
    "reject": render_reject_modal,
    "respond": render_respond_modal,
}

AT_ONCE: dict[str, DecisionType] = {"approve": "approve", "ignore": "ignore"}
"""The decisions a click records with no form."""


async def ack_first(ack: Ack, next: Callable[[], Awaitable[None]]) -> None:
    """Bolt listener middleware: ack the click (an empty 200) before its listener starts.

    With ``process_before_response=False`` Bolt starts the listener in a task of its own
    and notices an ``ack()`` made there by polling every 10 ms
    (``slack_bolt/listener/asyncio_runner.py``), so under a burst each answer waited a
    poll or more behind other clicks' work. An ack made here is already set when the
    listener runner looks, and the 200 goes out before the listener runs. A
    ``block_actions`` ack carries nothing (https://docs.slack.dev/interactivity/
    handling-user-interaction#acknowledgment_response), so no listener needs to choose it.
    """
    await ack()
    await next()


DECISION_DB_S = 2.0
"""How long an Approve or Ignore click's record may wait on the database, seconds. The
click was acked already (``ack_first``); past this the reviewer is told nothing was
recorded and may click again, PostgreSQL aborts the compare-and-set (a bounded
transaction, ``ApprovalStore._change_audited``), and its pooled connection is free again:
clicks on a card whose row another transaction holds must not take every connection of
the web process."""

MODAL_DB_S = 1.5
"""How long a modal-opening click may wait on the database before ``views.open``,
seconds: its ``trigger_id`` expires 3 s after the click
(https://docs.slack.dev/reference/methods/views.open)."""


class ActionListeners:
    """The ``block_actions`` listeners.

    Args:
        store: The approval store (to read requests for modals).
        recorder: Records approve clicks.
        slack: The Slack gateway (private answers, modals).
        guard: Authorizes each click.
        views: Where opened modals are recorded.
    """

    def __init__(
        self,
        *,
        store: ApprovalStore,
        recorder: DecisionRecorder,
        slack: Slack,
        guard: Guard,
        views: OpenedViews,
    ) -> None:
        self.store = store
        self.recorder = recorder
        self.slack = slack
        self.guard = guard
        self.views = views

    def register(self, app: AsyncApp) -> None:
        """Attach the listeners to ``app``."""
        decision = re.compile(f"^{re.escape(ids.ACTION_PREFIX)}")
        app.action(decision, middleware=[ack_first])(self.on_decision)
        app.action(ids.VIEW_ARGS_ACTION, middleware=[ack_first])(self.on_view_args)

    async def on_decision(self, body: dict[str, Any], context: Any) -> None:
        """A decision button (acked already, ``ack_first``): authorize, then count an
        approval, record an ignore, or open the modal of edit/reject/respond."""
        try:
            payload = parse(BlockActions, body)
        except PayloadError as exc:
            logger.warning("%s", exc)
            return
        decision_type = payload.action.action_id.removeprefix(ids.ACTION_PREFIX)
        request_id, version = ids.parse_decision_value(payload.action.value or "")
        if decision_type not in ALL_DECISION_TYPES:
            logger.warning(
                "unknown action_id %r from %s", payload.action.action_id, payload.user.id
            )
            await self.tell(payload, wording.STALE_TEXT)
            return
        try:
            if decision_type in AT_ONCE:
                request = await self._authorized(payload, decision_type, request_id, context)
                if request is not None:
                    decision = Decision(type=AT_ONCE[decision_type])
                    outcome = await self._decide(
                        payload, request, decision, version, installation_of(context)
                    )
                    if outcome is not None:  # then: the signal, and the redraw or a word
                        await self.recorder.signal(outcome)
                        await self._answer(payload, outcome)
            else:
                await self._open_modal(payload, request_id, decision_type, version, context)
        except StoreUnavailableError as exc:
            # Not in time (DECISION_DB_S, MODAL_DB_S) says so; anything else was an outage.
            slow = isinstance(exc, StoreTooSlowError)
            logger.error(
                "request=%s %s click by %s not %s: %s",
                request_id,
                decision_type,
                payload.user.id,
                "answered in time" if slow else "recorded",
                exc,
            )
            await self.tell(payload, _not_recorded_text(decision_type, slow=slow))

    async def on_view_args(self, body: dict[str, Any], context: Any) -> None:
        """ "View full arguments" (acked already, ``ack_first``): a read-only modal with
        every argument in full."""
        try:
            payload = parse(BlockActions, body)
        except PayloadError as exc:
            logger.warning("%s", exc)
            return
        try:
            with within(MODAL_DB_S):
                request = await self.store.get_request(payload.action.value or "")
                why = request and await self.guard.refusal(
                    actor_of(payload),
                    "view",
                    request,
                    installation=installation_of(context),
                    clicked=clicked_of(payload),
                )
                run = await self.store.get_run(request.run_id) if request and not why else None
        except StoreTooSlowError as exc:
            logger.error("full arguments not shown in time: %s", exc)
            await self.tell(payload, wording.STORE_SLOW_TEXT)
            return
        except StoreUnavailableError as exc:
            logger.error("full arguments not shown: %s", exc)
            await self.tell(payload, wording.STORE_DOWN_TEXT)
            return
        if request is None:
            await self.tell(payload, wording.STALE_TEXT)
        elif why:
            await self.tell(payload, why)
        else:
            await self._open_view(payload, render_full_args_modal(request.redacted(), run))

    async def tell(self, payload: BlockActions, text: str) -> None:
        """Answer the clicking user privately in the card's channel (and Slack thread);
        a failure is logged (there is no one else to tell)."""
        channel_id = payload.container.channel_id
        if channel_id is None:  # a click in the App Home tab: told in the app's DM
            await self._tell_in_dm(payload, text)
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

    async def _tell_in_dm(self, payload: BlockActions, text: str) -> None:
        """Answer a click that came from no channel (the Home tab) in the app's DM with
        the clicker (``chat.postMessage`` to the user ID opens it); a failure is logged."""
        try:
            await self.slack.post_message(
                team_id=payload.team_id,
                channel_id=payload.user.id,
                text=text,
                blocks=[{"type": "section", "text": text_object(text)}],
            )
        except SlackCallError as exc:
            logger.warning("answer to %s's Home click not posted: %s", payload.user.id, exc)

    async def _decide(
        self,
        payload: BlockActions,
        request: ApprovalRequest,
        decision: Decision,
        version: str,
        installation: Installation,
    ) -> Recording | None:
        """Record a decision that needs no form (approve: counted towards the quorum;
        ignore: decided at once); return what was recorded or why nothing was (for the
        listener to answer), or ``None`` if the clicker was told why not already.

        Only the store's reads and the record run under ``DECISION_DB_S``: the approvers
        still allowed are read before the record with no deadline, since a user group
        Slack lists too slowly under one counts as unreadable and would drop its
        members' earlier approvals from the quorum (``Guard.current_approvers``).

        Raises:
            StoreTooSlowError: Not read or recorded within ``DECISION_DB_S``; nothing was
                recorded.
        """
        refused = check_decision(request, decision)
        if refused:  # a forged click: the card never had this button
            await self.tell(payload, escape(" ".join(refused.values())))
            return None
        if decision.type != "approve" and version != request.version:
            # approve's compare-and-set checks the version itself (ApprovalStore.approve)
            await self.tell(payload, review_wording.CALL_CHANGED_TEXT)
            await self._refresh(request)
            return None
        still_approvers = None  # an Ignore decides alone: no earlier approval to judge
        if decision.type == "approve":
            # A click the store would not count (decided, the call changed, counted
            # already) changes nothing: answered before judging the earlier approvals,
            # whose groups Slack may fail to list; confirmed from a read after
            # authorizing, which may have waited on Slack.
            with within(DECISION_DB_S):
                answer = await self.store.answer_without_counting(
                    request.request_id, user_id=payload.user.id, version=version, known=request
                )
            if answer is not None:
                return answer
            try:
                still_approvers = await self.guard.current_approvers(
                    request, actor=actor_of(payload), installation=installation
                )
            except ApprovalsUnjudgedError as exc:
                await self.tell(payload, exc.answer)
                return None
        with within(DECISION_DB_S):
            return await self.recorder.record(
                request.request_id,
                decision,
                user_id=payload.user.id,
                team_id=payload.actor_team_id,
                version=version,
                still_approvers=still_approvers,
                known=request,
            )

    async def _answer(self, payload: BlockActions, outcome: Recording) -> None:
        """Redraw what changed, and tell the clicker privately when nothing did."""
        if isinstance(outcome, Recorded | Counted):
            await self._refresh(outcome.request)
        elif isinstance(outcome, AlreadyCounted):
            await self.tell(payload, review_wording.ALREADY_APPROVED_TEXT)
        elif isinstance(outcome, CallChanged):
            await self.tell(payload, review_wording.CALL_CHANGED_TEXT)
            await self._refresh(outcome.request)
        elif isinstance(outcome, AlreadyDecided):
            await self.tell(payload, already_decided_text(outcome.request))
        else:
            await self.tell(payload, wording.STALE_TEXT)

    async def _refresh(self, request: ApprovalRequest) -> None:
        """Redraw the card; the decision is recorded, so a database failure here is
        logged, never told to the reviewer as "not recorded"."""
        try:
            await self.recorder.refresh(request)
        except StoreUnavailableError as exc:
            logger.warning(
                "run=%s request=%s recorded, card not redrawn: %s",
                request.run_id,
                request.request_id,
                exc,
            )

    async def _authorized(
        self, payload: BlockActions, decision_type: str, request_id: str, context: Any
    ) -> ApprovalRequest | None:
        """The clicked request if the clicker may ``decision_type`` it; else tell them
        why not and return ``None``."""
        request = await self.store.get_request(request_id)
        if request is None:
            await self.tell(payload, wording.STALE_TEXT)
            return None
        log_context.bind_request(request)  # on every line of this click from here on
        why = await self.guard.refusal(
            actor_of(payload),
            decision_type,
            request,
            installation=installation_of(context),
            clicked=clicked_of(payload),
        )
        if why:
            await self.tell(payload, why)
            return None
        return request

    async def _open_modal(
        self,
        payload: BlockActions,
        request_id: str,
        decision_type: str,
        version: str,
        context: Any,
    ) -> None:
        """Authorize, record the ``OpenedView`` (both within ``MODAL_DB_S``), then open
        the form with the click's trigger."""
        with within(MODAL_DB_S):
            view = await self._modal_view(payload, request_id, decision_type, version, context)
        if view is None:
            return
        view_key, modal = view
        view_id = await self._open_view(payload, modal)
        if view_id is not None:
            await self._remember_view_id(view_key, view_id)

    async def _modal_view(
        self,
        payload: BlockActions,
        request_id: str,
        decision_type: str,
        version: str,
        context: Any,
    ) -> tuple[str, dict[str, Any]] | None:
        """``(view key, modal)`` to open, or ``None`` once the clicker was told why not."""
        request = await self._authorized(payload, decision_type, request_id, context)
        if request is None:
            return None
        if request.state != ApprovalState.PENDING:
            await self.tell(payload, already_decided_text(request))
        elif refused := refusal(request, decision_type):
            await self.tell(payload, escape(refused))  # plain words, shown as mrkdwn
        elif version != request.version:
            await self.tell(payload, review_wording.CALL_CHANGED_TEXT)
            await self._refresh(request)
        else:
            opened = await self.views.open_view(
                request_id=request.request_id,
                user_id=payload.user.id,
                team_id=payload.actor_team_id,
                decision_type=decision_type,
                version=version,
            )
            # Drawn redacted; an edit's submission puts the real values back
            # (SubmissionListeners._edit_decision).
            return opened.view_key, MODALS[decision_type](
                request.redacted(), view_key=opened.view_key
            )
        return None

    async def _remember_view_id(self, view_key: str, view_id: str) -> None:
        """Add Slack's ``view.id`` to the opened view. Best effort: the form is open
        already, and its submission is bound by the unguessable key, user and decision;
        a database failure here is logged, never told as "not recorded"."""
        try:
            await self.views.set_view_id(view_key, view_id)
        except StoreUnavailableError as exc:
            logger.warning("view %s opened; its id not remembered: %s", view_id, exc)

    async def _open_view(self, payload: BlockActions, view: dict[str, Any]) -> str | None:
        try:
            return await self.slack.open_view(
                team_id=payload.team_id, trigger_id=payload.trigger_id, view=view
            )
        except SlackCallError as exc:
            logger.warning("modal for %s not opened: %s", payload.user.id, exc)
            await self.tell(payload, wording.FORM_NOT_OPENED_TEXT)
            return None


def _not_recorded_text(decision_type: str, *, slow: bool) -> str:
    """What a click told of a database that failed it: a decision not recorded (in time,
    or at all), or a form not opened in time."""
    if not slow:
        return wording.STORE_DOWN_TEXT
    return wording.STORE_SLOW_DECISION_TEXT if decision_type in AT_ONCE else wording.STORE_SLOW_TEXT

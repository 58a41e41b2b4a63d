"""Modal submissions (``view_submission``): edit, reject and respond decisions.

Unlike a click, a submission is checked and recorded *before* the ack, because the ack
is how Slack shows field errors in the modal (``response_action: "errors"``): a bad
edit, an empty answer, a decision someone else already made, or a database outage are
shown on the form and nothing is saved (docs/architecture.md, invariant 4). First the
submission must be for a view the product opened for this same user, request and
decision (its ``private_metadata`` is an ``OpenedView`` key; ``view.id`` must match), and
the person must still be allowed (``bot.guard.Guard``); the call must still be the
version the form was drawn from. The decision is checked once, by
``agent_bridge.decisions.check_decision``. The workers' signal and the card's redraw come
after the ack: Redis has its own timeouts, which the deadline below does not bound.

The database work before the ack runs under a deadline (``SUBMISSION_DB_S``,
``agent_bridge.deadline``), so the ack leaves within Slack's 3 s whatever the database
does: a held lock or a slow statement makes PostgreSQL abort the compare-and-set (its
transaction is rolled back, never cut off half-way by us), and the reviewer reads on
the form that nothing was recorded and may submit again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from slack_bolt.async_app import AsyncApp

from agent_bridge import log_context, review_wording, wording
from agent_bridge.arguments import GENERAL_KEY
from agent_bridge.deadline import within
from agent_bridge.decisions import check_decision
from agent_bridge.errors import StoreTooSlowError, StoreUnavailableError
from agent_bridge.models import (
    AlreadyDecided,
    ApprovalRequest,
    ApprovalState,
    CallChanged,
    Counted,
    Decision,
    Recorded,
)
from agent_bridge.opened_views import OpenedView, OpenedViews
from agent_bridge.redaction import restore
from agent_bridge.store import ApprovalStore
from bot import ids
from bot.actions import Ack
from bot.blocks import already_decided_plain
from bot.edit_form import parse_submission
from bot.errors import PayloadError
from bot.form_fields import is_text
from bot.guard import Guard, actor_of, installation_of
from bot.payloads import ViewState, ViewSubmission, parse
from bot.recorder import DecisionRecorder

logger = logging.getLogger(__name__)

Draft = tuple[Decision | None, Callable[[dict[str, str]], dict[str, str]]]
"""What a modal's values make: the decision (``None``: unreadable) and how to place
argument-keyed errors on the form's blocks."""
Build = Callable[[ApprovalRequest, ViewState], Draft]

SUBMISSION_DB_S = 2.0
"""How long a submission's checks and record may wait on the database, seconds: the
ack must reach Slack within 3 s of the submission
(https://docs.slack.dev/interactivity/handling-user-interaction#acknowledgment_response)."""


def field_errors(errors: dict[str, str], state: ViewState) -> dict[str, str]:
    """Map argument-keyed errors to the modal's ``block_id``s.

    An error about an argument goes on its input (``arg:<name>``) when the form has
    one; anything else goes on the form's first input, so Slack can show it.
    """
    blocks = list(state.values)
    first = blocks[0] if blocks else ids.ARGS_JSON_BLOCK
    mapped: dict[str, str] = {}
    for key, message in errors.items():
        block_id = key if key in state.values else ids.arg_block_id(key)
        if key == GENERAL_KEY or block_id not in state.values:
            block_id = first
        mapped[block_id] = f"{mapped[block_id]} {message}" if block_id in mapped else message
    return mapped


def text_value(state: ViewState, block_id: str, action_id: str) -> str:
    """Return a plain_text_input's value ("" when empty or absent)."""
    return str((state.values.get(block_id, {}).get(action_id) or {}).get("value") or "")


class SubmissionListeners:
    """The ``view_submission`` listeners.

    Args:
        store: The approval store.
        recorder: Records decisions and redraws cards.
        guard: Authorizes each submission.
        views: The modals the product opened.
    """

    def __init__(
        self,
        *,
        store: ApprovalStore,
        recorder: DecisionRecorder,
        guard: Guard,
        views: OpenedViews,
    ) -> None:
        self.store = store
        self.recorder = recorder
        self.guard = guard
        self.views = views

    def register(self, app: AsyncApp) -> None:
        """Attach the listeners to ``app``."""
        app.view(ids.EDIT_CALLBACK)(self.on_edit)
        app.view(ids.REJECT_CALLBACK)(self.on_reject)
        app.view(ids.RESPOND_CALLBACK)(self.on_respond)

    async def on_edit(self, ack: Ack, body: dict[str, Any], context: Any) -> None:
        """Edit modal: parse the typed form, check it against the tool's schema, record."""
        await self._submit(ack, body, context, self._edit_decision)

    async def on_reject(self, ack: Ack, body: dict[str, Any], context: Any) -> None:
        """Reject modal: an optional reason."""
        await self._submit(ack, body, context, self._reject_decision)

    async def on_respond(self, ack: Ack, body: dict[str, Any], context: Any) -> None:
        """Respond modal: the answer the model gets as the tool's result."""
        await self._submit(ack, body, context, self._respond_decision)

    @staticmethod
    def _edit_decision(request: ApprovalRequest, state: ViewState) -> Draft:
        # The form was drawn from the redacted arguments: read it against them, then put
        # the real value back wherever the reviewer left a redacted one as it was.
        shown = request.redacted().current_args
        parsed = parse_submission(request.args_schema, shown, state.values)
        if parsed.args is None:
            return None, lambda _: parsed.errors
        args = restore(parsed.args, request.current_args, request.redact)
        return Decision(type="edit", edited_args=args), parsed.placed

    @staticmethod
    def _reject_decision(request: ApprovalRequest, state: ViewState) -> Draft:
        reason = text_value(state, ids.REASON_BLOCK, ids.REASON_ACTION).strip()
        if not is_text(reason):
            return None, lambda _: {ids.REASON_BLOCK: wording.NOT_TEXT_PLAIN}
        return Decision(type="reject", message=reason or None), dict

    @staticmethod
    def _respond_decision(request: ApprovalRequest, state: ViewState) -> Draft:
        answer = text_value(state, ids.ANSWER_BLOCK, ids.ANSWER_ACTION)
        if not is_text(answer):
            return None, lambda _: {ids.ANSWER_BLOCK: wording.NOT_TEXT_PLAIN}
        return Decision(type="respond", message=answer), dict

    async def _submit(self, ack: Ack, body: dict[str, Any], context: Any, build: Build) -> None:
        try:
            payload = parse(ViewSubmission, body)
        except PayloadError as exc:
            logger.warning("%s", exc)
            await ack()
            return
        state = payload.view.state
        outcome: Recorded | Counted | None = None
        try:
            with within(SUBMISSION_DB_S):
                errors, outcome = await self._check_and_record(payload, context, build)
        except StoreTooSlowError as exc:
            logger.error(
                "view %s by %s not recorded in time: %s",
                payload.view.callback_id,
                payload.user.id,
                exc,
            )
            errors = {GENERAL_KEY: wording.STORE_SLOW_PLAIN}
        except StoreUnavailableError as exc:
            logger.error(
                "view %s by %s not recorded: %s", payload.view.callback_id, payload.user.id, exc
            )
            errors = {GENERAL_KEY: wording.STORE_DOWN_PLAIN}
        except Exception:
            # The edge of the app: whatever went wrong, the reviewer gets an answer.
            logger.exception(
                "view %s (request %s) by %s failed",
                payload.view.callback_id,
                payload.view.private_metadata,
                payload.user.id,
            )
            errors = {GENERAL_KEY: wording.FAILED_PLAIN}
        if errors:
            await ack(response_action="errors", errors=field_errors(errors, state))
            return
        await ack()  # Slack's answer first: the workers' signal and the redraw come after
        if outcome is None:
            return
        await self.recorder.signal(outcome)
        try:
            await self.recorder.refresh(outcome.request)
        except StoreUnavailableError as exc:  # recorded already: only the redraw waits
            logger.warning("request=%s card not redrawn: %s", outcome.request.request_id, exc)

    async def _check_and_record(
        self, payload: ViewSubmission, context: Any, build: Build
    ) -> tuple[dict[str, str], Recorded | Counted | None]:
        """Return ``(errors, what was recorded)``; errors keyed by argument or block, and
        nothing recorded unless there are none."""
        decision_type = ids.CALLBACK_DECISIONS.get(payload.view.callback_id, "")
        opened = await self.views.opened_view(payload.view.private_metadata)
        request = await self.store.get_request(opened.request_id) if opened else None
        if request is not None:
            log_context.bind_request(request)  # on every line of this submission from here on
        if opened is None or not _same_view(opened, payload, decision_type):
            if request is not None:
                await self.store.record_refusal(
                    request,
                    user_id=payload.user.id,
                    team_id=payload.actor_team_id,
                    action=decision_type,
                    reason=review_wording.VIEW_NOT_OPENED_PLAIN,
                )
            logger.warning(
                "view %s (%s) by %s refused: not opened for this user and request",
                payload.view.id,
                payload.view.callback_id,
                payload.user.id,
            )
            return {GENERAL_KEY: review_wording.VIEW_NOT_OPENED_PLAIN}, None
        if request is None:
            return {GENERAL_KEY: wording.STALE_TEXT}, None
        why = await self.guard.refusal(
            actor_of(payload), decision_type, request, installation=installation_of(context)
        )
        if why:
            return {GENERAL_KEY: review_wording.plain(why)}, None
        if request.state != ApprovalState.PENDING:
            return {GENERAL_KEY: already_decided_plain(request)}, None
        if opened.version != request.version:
            return {GENERAL_KEY: review_wording.CALL_CHANGED_PLAIN}, None
        decision, place = build(request, payload.view.state)
        errors = place(check_decision(request, decision) if decision else {})
        if errors or decision is None:
            return errors, None
        outcome = await self.recorder.record(
            request.request_id,
            decision,
            user_id=payload.user.id,
            team_id=payload.actor_team_id,
            version=opened.version,
        )
        if isinstance(outcome, Recorded | Counted):
            return {}, outcome
        if isinstance(outcome, AlreadyDecided):
            return {GENERAL_KEY: already_decided_plain(outcome.request)}, None
        if isinstance(outcome, CallChanged):
            return {GENERAL_KEY: review_wording.CALL_CHANGED_PLAIN}, None
        return {GENERAL_KEY: wording.STALE_TEXT}, None


def _same_view(opened: OpenedView, payload: ViewSubmission, decision_type: str) -> bool:
    """Whether the submitted view is the one opened for this user and decision."""
    return (
        opened.user_id == payload.user.id
        and opened.decision_type == decision_type
        and opened.view_id in (None, payload.view.id)
    )

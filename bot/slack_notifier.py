"""The Slack notifier: the worker's ``Notifier`` port, posting rendered Block Kit.

Each method renders with a pure function from ``bot.blocks`` and makes its Web API call
through ``bot.slack_gateway`` (for the run's workspace); cards are the card owner's.
Every post goes through ``bot.outbox``, so each message is posted once per key, even
across crashes. A failure is a ``SlackCallError``, which is a ``NotifyError``: the worker
never sees slack_sdk types.
"""

from __future__ import annotations

import logging
from typing import Any

from agent_bridge import review_wording
from agent_bridge.models import ApprovalRequest, ApprovalState, Run, RunState
from agent_bridge.notifier import FAILED_NOTICE, Answered
from agent_bridge.policy import duration_text
from bot.blocks import (
    Message,
    render_final_answer,
    render_ran_without_review,
    render_reminder,
    render_run_failed,
    render_run_started,
    render_tool_result,
)
from bot.card_owner import CardOwner
from bot.errors import ChannelUnreachableError, SlackCallError, SlackUnavailableError
from bot.mrkdwn import inline_code
from bot.progress import ProgressReporter
from bot.review_blocks import TOOL_NAME_MAX_CHARS, render_escalation
from bot.slack_gateway import Slack

logger = logging.getLogger(__name__)

HEADER_KEY = "header"
ANSWER_KEY = "final_answer"
FAILED_KEY = FAILED_NOTICE
"""Keys of a run's messages (``bot.outbox``); a tool result's is ``tool:<tool_call_id>``."""


def reminder_key(request: ApprovalRequest) -> str:
    """The outbox key of a request's reminder: one per review window, named by its
    deadline (a reopen starts a new window: ``REOPEN_REQUEST``)."""
    return f"reminder:{request.request_id}:{int(request.expires_at or 0)}"


class SlackNotifier:
    """Posts runs' progress and approval cards.

    Args:
        slack: The Slack gateway.
        cards: The card owner (posts and redraws approval cards).
        progress: Draws each run's first message as it works (the driver's progress
            hook too); one of its own when not given.
    """

    def __init__(
        self, *, slack: Slack, cards: CardOwner, progress: ProgressReporter | None = None
    ) -> None:
        self.slack = slack
        self.cards = cards
        self.outbox = cards.outbox
        self.progress = progress or ProgressReporter(store=cards.store, slack=slack)

    async def run_started(self, run: Run) -> str:
        """See ``Notifier.run_started``: a top-level message, found by its metadata in the
        channel's history if a dead worker posted it."""
        return await self._post(run, HEADER_KEY, run.channel_id, render_run_started(run))

    async def approval_requested(self, request: ApprovalRequest, *, run: Run) -> None:
        """See ``Notifier.approval_requested``.

        When the card's channel cannot be reached (a private channel the bot is not in,
        an archived one), the person who started the run is told privately, once, what
        to do, and the post is retried by later sweeps instead of failing the run.

        Raises:
            SlackCallError: Retryable when the channel is unreachable (told once).
        """
        try:
            await self.cards.post(request, run)
        except ChannelUnreachableError as exc:
            await self._tell_requester(request, run, exc)
            raise SlackUnavailableError(
                f"{exc} (card of request {request.request_id}; the requester was told)",
                method=exc.method,
                code=exc.code,
                retryable=True,
            ) from exc

    async def _tell_requester(
        self, request: ApprovalRequest, run: Run, exc: ChannelUnreachableError
    ) -> None:
        if not await self.cards.store.claim_notice(run.run_id, f"unreachable:{request.request_id}"):
            return  # told already
        channel = f"<#{request.channel_id}>" if request.channel_id else "?"
        name = inline_code(request.tool_name, TOOL_NAME_MAX_CHARS)
        try:
            await self.slack.post_ephemeral(
                team_id=run.team_id,
                channel_id=run.channel_id,
                user_id=run.user_id,
                text=review_wording.cannot_post_text(name, channel, exc.code or "unknown"),
                thread_ts=run.thread_ts,
            )
        except SlackCallError as failed:
            logger.warning("run=%s requester not told: %s", run.run_id, failed)

    async def approval_updated(self, request: ApprovalRequest, *, run: Run) -> None:
        """See ``Notifier.approval_updated``: redrawn from the store's current state
        (a request alone in its batch from ``request`` itself, checked against the
        store as it is marked drawn: ``CardOwner.redraw``)."""
        await self.cards.redraw(request.request_id, known=request, run=run)

    async def reminder(self, request: ApprovalRequest, *, run: Run) -> None:
        """See ``Notifier.reminder``: posted where the card is (in its Slack thread, or under
        it in ``APPROVALS_CHANNEL``), so the reviewers see it. The card alone is redrawn
        first, so a deleted one is posted again and the reminder goes under it; a request
        decided meanwhile gets no reminder, and its mark is taken back (reopened, it would
        say "Reminder sent" and never be reminded)."""
        current = await self.cards.redraw(request.request_id, siblings=False)
        if current is None:
            return  # gone meanwhile: nothing to remind of
        if current.state != ApprovalState.PENDING:
            await self.cards.store.unmark_reminded(current.request_id)
            return
        await self._post(
            run,
            reminder_key(current),
            current.channel_id or run.channel_id,
            render_reminder(current),
            thread_ts=current.thread_ts or current.message_ts,
        )

    async def escalated(self, request: ApprovalRequest, *, run: Run) -> None:
        """See ``Notifier.escalated``: the card is redrawn first (so a deleted one is
        posted again), then the mention of the backup approvers goes under it, once."""
        current = await self.cards.redraw(request.request_id, siblings=False)
        if current is None or current.state != ApprovalState.PENDING:
            return
        waited = duration_text(current.rules.escalate_after_s or 0)
        await self._post(
            run,
            f"escalation:{current.request_id}",
            current.channel_id or run.channel_id,
            render_escalation(current, waited=waited),
            thread_ts=current.thread_ts or current.message_ts,
        )

    async def ran_without_review(
        self, run: Run, *, key: str, tool_name: str, args: dict[str, Any]
    ) -> None:
        """See ``Notifier.ran_without_review``."""
        message = render_ran_without_review(tool_name, args)
        await self._post(run, key, run.channel_id, message, thread_ts=run.thread_ts, drive=True)

    async def tool_ran(
        self,
        run: Run,
        *,
        key: str,
        tool_name: str,
        content: str | None,
        ok: bool,
        answered: Answered | None = None,
    ) -> None:
        """See ``Notifier.tool_ran``."""
        message = render_tool_result(
            tool_name, content, ok=ok, run_id=run.run_id, answered=answered
        )
        await self._post(run, key, run.channel_id, message, thread_ts=run.thread_ts, drive=True)

    async def run_finished(self, run: Run, *, answer: str) -> None:
        """See ``Notifier.run_finished``: the answer once, then the first message redrawn
        as done; a passing Slack failure of that redraw is raised, so the run is driven
        again and the header does not stay on "Working on"."""
        message = render_final_answer(answer)
        await self._post(
            run, ANSWER_KEY, run.channel_id, message, thread_ts=run.thread_ts, drive=True
        )
        await self._redraw_header(run.model_copy(update={"state": RunState.DONE}), strict=True)

    async def run_failed(self, run: Run) -> None:
        """See ``Notifier.run_failed``; also marks the run's first message failed."""
        message = render_run_failed(run.run_id)
        await self._post(run, FAILED_KEY, run.channel_id, message, thread_ts=run.thread_ts)
        await self._redraw_header(run.model_copy(update={"state": RunState.FAILED}))

    async def _redraw_header(self, run: Run, *, strict: bool = False) -> None:
        """Redraw the run's first message as ended (``bot.progress``: after any progress
        update in flight); a failure is logged (the answer is posted), or with
        ``strict`` a passing one is raised."""
        await self.progress.final(run, strict=strict)

    async def _post(
        self,
        run: Run,
        key: str,
        channel_id: str,
        message: Message,
        *,
        thread_ts: str | None = None,
        drive: bool = False,
    ) -> str:
        """Post the run's message ``key`` once (``Outbox.post_once``); ``drive``: one of
        a drive's messages (a tool result, a note, the answer), its ``ts`` recorded with
        the run's release."""
        text, blocks = message
        posted = await self.outbox.post_once(
            run,
            key,
            channel_id=channel_id,
            text=text,
            blocks=blocks,
            thread_ts=thread_ts,
            ts_at_release=drive,
        )
        return posted.ts

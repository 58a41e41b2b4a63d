"""Conversations with the bot: a direct message starts a run; a reply in a run's Slack
thread answers the question its agent waits on.

Events API ``message`` events (``message.im`` for the app's DMs, ``message.channels`` /
``message.groups`` for replies in runs' Slack threads). Each listener acks first. Only a
person's plain new message counts: bots (ours included), edits, deletions and joins
carry ``bot_id`` or a ``subtype`` and are ignored.

- A top-level DM is a task: the same path as ``/agent`` (``StartListeners.start``: the
  workspace, the agent's ``requesters`` and ``max_active_runs_per_user``); a refusal is
  told privately in the DM. The run's Slack thread is then in the DM.
- A reply in a run's Slack thread, while the run waits on exactly one question (a
  request whose only decision is ``respond``, as ``ask_user``'s), is that question's
  Respond decision: authorized by the guard exactly as the card's Respond button (four
  eyes, approvers; a refusal is told privately and kept in the audit trail), checked
  (``check_decision``) and recorded by ``DecisionRecorder`` (the same compare-and-set and
  audit event), then the card is redrawn. Slack's retries of the event are dropped by
  ``DedupeMiddleware``; one that gets past it finds the request decided by the same
  person with the same answer and is ignored. Replies while nothing is asked are chat,
  and are ignored.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp

from agent_bridge import home_wording, wording
from agent_bridge.decisions import check_decision
from agent_bridge.errors import StoreUnavailableError
from agent_bridge.inbox import Inbox
from agent_bridge.models import AlreadyDecided, ApprovalRequest, Decision, Recorded
from bot.actions import Ack
from bot.blocks import already_decided_text
from bot.errors import PayloadError, SlackCallError
from bot.guard import Guard, author_of, installation_of
from bot.mrkdwn import escape
from bot.payloads import MessageCallback, MessagePosted, parse
from bot.recorder import DecisionRecorder
from bot.slack_gateway import Slack
from bot.starts import StartListeners

logger = logging.getLogger(__name__)


class ConversationListeners:
    """The ``message`` listener.

    Args:
        starts: Starts runs (the slash command's path).
        inbox: Finds the requests pending in a Slack thread.
        guard: Authorizes an answer as the Respond button's click.
        recorder: Records it and redraws the card.
        slack: The Slack gateway (private answers).
    """

    def __init__(
        self,
        *,
        starts: StartListeners,
        inbox: Inbox,
        guard: Guard,
        recorder: DecisionRecorder,
        slack: Slack,
    ) -> None:
        self.starts = starts
        self.inbox = inbox
        self.guard = guard
        self.recorder = recorder
        self.slack = slack

    def register(self, app: AsyncApp) -> None:
        """Attach the listener to ``app``."""
        app.event("message")(self.on_message)

    async def on_message(self, ack: Ack, body: dict[str, Any], context: Any) -> None:
        """A DM starts a run; a reply in a run's Slack thread may answer its question."""
        await ack()
        try:
            callback = parse(MessageCallback, body)
        except PayloadError as exc:
            logger.warning("%s", exc)
            return
        message = callback.event
        if not message.from_person or message.user is None:
            return
        if message.is_reply:
            await self._answer(callback, message.user, context)
        elif message.channel_type == "im":
            await self._start(message, message.user, context)

    async def _start(self, message: MessagePosted, user_id: str, context: Any) -> None:
        task = message.typed_text.strip()
        if not task:
            await self._tell(context, message, user_id, wording.MENTION_USAGE_TEXT)
            return
        refused = await self.starts.start(
            task,
            channel_id=message.channel,
            user_id=user_id,
            team_id=message.team,
            installation=installation_of(context),
        )
        if refused:
            await self._tell(context, message, user_id, refused)

    async def _answer(self, callback: MessageCallback, user_id: str, context: Any) -> None:
        message = callback.event
        assert message.thread_ts is not None
        try:
            pending = await self.inbox.pending_in_slack_thread(message.channel, message.thread_ts)
            questions = [r for r in pending if r.is_question()]
            if not questions:
                return  # chat in a thread: nothing is asked
            if len(questions) > 1:
                await self._tell(context, message, user_id, home_wording.SEVERAL_QUESTIONS_TEXT)
                return
            await self._respond(callback, user_id, questions[0], context)
        except StoreUnavailableError as exc:
            logger.error("reply %s by %s not recorded: %s", message.ts, user_id, exc)
            await self._tell(context, message, user_id, wording.STORE_DOWN_TEXT)

    async def _respond(
        self, callback: MessageCallback, user_id: str, request: ApprovalRequest, context: Any
    ) -> None:
        message = callback.event
        actor = author_of(callback, user_id)
        installation = installation_of(context)
        why = await self.guard.refusal(actor, "respond", request, installation=installation)
        if why:
            await self._tell(context, message, user_id, why)
            return
        decision = Decision(type="respond", message=message.typed_text)
        refused = check_decision(request, decision)
        if refused:
            await self._tell(context, message, user_id, escape(" ".join(refused.values())))
            return
        outcome = await self.recorder.record(
            request.request_id,
            decision,
            user_id=user_id,
            team_id=actor.team_id,
            version=request.version,
        )
        await self.recorder.signal(outcome)  # the event was acked before its listener ran
        if isinstance(outcome, Recorded):
            logger.info(
                "run=%s request=%s answered by %s in its Slack thread (reply %s)",
                request.run_id,
                request.request_id,
                user_id,
                message.ts,
            )
            await self.recorder.refresh(outcome.request)
        elif isinstance(outcome, AlreadyDecided):
            decided = outcome.request
            same = (
                decided.decided_by == user_id
                and decided.decision is not None
                and decided.decision.message == message.typed_text
            )
            if not same:  # a retry of this very reply is not news to anyone
                await self._tell(context, message, user_id, already_decided_text(decided))

    async def _tell(self, context: Any, message: MessagePosted, user_id: str, text: str) -> None:
        """Answer privately where the message was (its Slack thread), with the token of
        the workspace that delivered it (not the author's own: a Slack Connect guest's
        home workspace need not have the app); a failure is logged."""
        try:
            await self.slack.post_ephemeral(
                team_id=installation_of(context).team_id,
                channel_id=message.channel,
                user_id=user_id,
                text=text,
                thread_ts=message.thread_ts or message.ts,
            )
        except SlackCallError as exc:
            logger.warning("reply to %s's message not posted: %s", user_id, exc)

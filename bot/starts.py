"""Starting runs: the ``/agent <task>`` slash command and ``@agent <task>`` mentions.

Both ack at once, then queue a run: it is recorded in the database (the truth) and the
workers are signalled; the worker posts the run's first message in the channel, which
becomes its Slack thread (``thread_ts``).
"""

from __future__ import annotations

import logging
import re
import secrets
import uuid
from collections.abc import Mapping
from typing import Any

from slack_bolt.async_app import AsyncApp

from agent_bridge import wording
from agent_bridge.bus import Bus, Signal
from agent_bridge.errors import BridgeError
from agent_bridge.models import DEFAULT_AGENT, Run
from agent_bridge.store import ApprovalStore
from bot.actions import Ack
from bot.errors import PayloadError, SlackCallError
from bot.mrkdwn import truncate
from bot.payloads import AppMention, MentionCallback, SlashCommand, parse
from bot.slack_gateway import Slack

logger = logging.getLogger(__name__)

COMMAND = "/agent"
RUN_ID_BYTES = 6
ECHO_MAX_CHARS = 300
"""How much of the task the command's private reply repeats, characters."""

LEADING_MENTIONS = re.compile(r"^(\s*<@[A-Z0-9]+(\|[^>]*)?>)+")


def new_run(*, task: str, channel_id: str, user_id: str, team_id: str | None, agent: str) -> Run:
    """Return a new queued run of ``agent`` for ``task`` by ``user_id`` in ``channel_id``."""
    return Run(
        run_id=f"run-{secrets.token_hex(RUN_ID_BYTES)}",
        agent=agent,
        thread_id=str(uuid.uuid4()),
        task=task,
        channel_id=channel_id,
        user_id=user_id,
        team_id=team_id,
    )


def mention_task(text: str) -> str:
    """The task in an ``app_mention``'s text: the text without its leading mention(s)."""
    return LEADING_MENTIONS.sub("", text).strip()


class StartListeners:
    """The ``/agent`` and ``app_mention`` listeners.

    Args:
        store: Where runs are recorded.
        bus: Where "run requested" goes.
        slack: The Slack gateway (answers to mentions and commands).
        channel_agents: Channel ID -> agent name; other channels get ``DEFAULT_AGENT``.
    """

    def __init__(
        self,
        *,
        store: ApprovalStore,
        bus: Bus,
        slack: Slack,
        channel_agents: Mapping[str, str],
    ) -> None:
        self.store = store
        self.bus = bus
        self.slack = slack
        self.channel_agents = dict(channel_agents)

    def register(self, app: AsyncApp) -> None:
        """Attach the listeners to ``app``."""
        app.command(COMMAND)(self.on_agent)
        app.event("app_mention")(self.on_mention)

    async def on_agent(self, ack: Ack, body: dict[str, Any]) -> None:
        """Start a run for the command's text."""
        try:
            command = parse(SlashCommand, body)
        except PayloadError as exc:
            logger.warning("%s", exc)
            await ack(wording.COMMAND_UNREADABLE_TEXT)
            return
        task = command.text.strip()
        if not task:
            await ack(wording.USAGE_TEXT)
            return
        shown, _ = truncate(task, ECHO_MAX_CHARS)
        await ack(wording.starting_run_text(shown))
        if not await self.start(task, command.channel_id, command.user_id, command.team_id):
            await self._respond(command, wording.RUN_NOT_STARTED_TEXT)

    async def _respond(self, command: SlashCommand, text: str) -> None:
        """Answer a command privately after its ack; a failure is logged."""
        if command.response_url is None:
            logger.warning("no response_url to tell %s: %s", command.user_id, text)
            return
        try:
            await self.slack.respond(
                team_id=command.team_id, response_url=command.response_url, text=text
            )
        except SlackCallError as exc:
            logger.warning("answer to %s's command not sent: %s", command.user_id, exc)

    async def on_mention(self, ack: Ack, body: dict[str, Any]) -> None:
        """Start a run for the text after ``@agent`` (Events API ``app_mention``)."""
        await ack()
        try:
            mention = parse(MentionCallback, body).event
        except PayloadError as exc:
            logger.warning("%s", exc)
            return
        task = mention_task(mention.text)
        if not task:
            await self._reply(mention, wording.MENTION_USAGE_TEXT)
        elif not await self.start(task, mention.channel, mention.user, mention.team):
            await self._reply(mention, wording.MENTION_NOT_STARTED_TEXT)

    async def _reply(self, mention: AppMention, text: str) -> None:
        """Answer a mention in its Slack thread; a failure is logged."""
        try:
            await self.slack.post_message(
                team_id=mention.team,
                channel_id=mention.channel,
                text=text,
                blocks=[{"type": "section", "text": {"type": "mrkdwn", "text": text}}],
                thread_ts=mention.ts,
            )
        except SlackCallError as exc:
            logger.warning("reply to %s's mention not posted: %s", mention.user, exc)

    async def start(self, task: str, channel_id: str, user_id: str, team_id: str | None) -> bool:
        """Record a run of the channel's agent and signal the workers.

        Returns:
            ``False`` if the run could not be recorded (the caller tells the user).
        """
        run = new_run(
            task=task,
            channel_id=channel_id,
            user_id=user_id,
            team_id=team_id,
            agent=self.channel_agents.get(channel_id, DEFAULT_AGENT),
        )
        try:
            await self.store.create_run(run)
        except BridgeError as exc:
            logger.error("run=%s not started: %s", run.run_id, exc)
            return False
        logger.info("run=%s thread_id=%s queued by %s", run.run_id, run.thread_id, run.user_id)
        await self.bus.publish(Signal(kind="run_requested", run_id=run.run_id))
        return True

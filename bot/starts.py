"""Starting runs: the ``/agent <task>`` slash command and ``@agent <task>`` mentions.

Both ack at once, then check who asks, then queue a run: it is recorded in the database
(the truth) and the workers are signalled; the worker posts the run's first message in
the channel, which becomes its Slack thread (``thread_ts``).

Who may start runs is the agent's policy (``requesters``, ``max_active_runs_per_user``),
published to the database by its workers (``OpenedViews.start_rules``). Messages from
bots, ours or others, never start runs; someone of another workspace cannot; a person
who is not a requester, or who is at the limit, is told privately and nothing is
queued. Unknown rules (no worker yet) or unreadable groups refuse: it fails closed.
"""

from __future__ import annotations

import logging
import re
import secrets
import uuid
from collections.abc import Mapping
from typing import Any

from slack_bolt.async_app import AsyncApp

from agent_bridge import log_context, review_wording, wording
from agent_bridge.bus import Bus, Signal
from agent_bridge.errors import BridgeError
from agent_bridge.models import DEFAULT_AGENT, Run
from agent_bridge.store import ApprovalStore
from bot.actions import Ack
from bot.authorization import Installation, refused_groups
from bot.directory import Directory
from bot.errors import PayloadError, SlackCallError
from bot.guard import installation_of
from bot.mrkdwn import quote
from bot.payloads import AppMention, MentionCallback, SlashCommand, parse
from bot.slack_gateway import Slack

logger = logging.getLogger(__name__)

COMMAND = "/agent"
RUN_ID_BYTES = 6
ECHO_MAX_CHARS = 300
"""How much of the task the command's private reply repeats, characters."""

LEADING_MENTIONS = re.compile(r"^(\s*<@[A-Z0-9]+(\|[^>]*)?>)+")


def new_run(
    *,
    task: str,
    channel_id: str,
    user_id: str,
    team_id: str | None,
    agent: str,
    requester_name: str | None = None,
) -> Run:
    """Return a new queued run of ``agent`` for ``task`` by ``user_id`` in ``channel_id``."""
    return Run(
        requester_name=requester_name,
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
        directory: Resolves requester user groups.
    """

    def __init__(
        self,
        *,
        store: ApprovalStore,
        bus: Bus,
        slack: Slack,
        channel_agents: Mapping[str, str],
        directory: Directory,
    ) -> None:
        self.store = store
        self.bus = bus
        self.slack = slack
        self.channel_agents = dict(channel_agents)
        self.directory = directory

    def register(self, app: AsyncApp) -> None:
        """Attach the listeners to ``app``."""
        app.command(COMMAND)(self.on_agent)
        app.event("app_mention")(self.on_mention)

    async def on_agent(self, ack: Ack, body: dict[str, Any], context: Any) -> None:
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
        shown, _ = quote(task, ECHO_MAX_CHARS)
        await ack(wording.starting_run_text(shown))
        refused = await self.start(
            task,
            channel_id=command.channel_id,
            user_id=command.user_id,
            team_id=command.team_id,
            installation=installation_of(context),
        )
        if refused:
            await self._respond(command, refused)

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

    async def on_mention(self, ack: Ack, body: dict[str, Any], context: Any) -> None:
        """Start a run for the text after ``@agent`` (Events API ``app_mention``)."""
        await ack()
        try:
            mention = parse(MentionCallback, body).event
        except PayloadError as exc:
            logger.warning("%s", exc)
            return
        if mention.from_bot or mention.user is None:
            logger.info(
                "mention %s by bot %s ignored: %s",
                mention.ts,
                mention.bot_id,
                review_wording.BOT_NEVER_STARTS,
            )
            return
        installation = installation_of(context)
        if mention.thread_ts is not None:  # e.g. in a run's thread: not a new task
            await self._reply(mention, installation, review_wording.MENTION_IN_THREAD_TEXT)
            return
        task = mention_task(mention.text)
        if not task:
            await self._reply(mention, installation, wording.MENTION_USAGE_TEXT)
            return
        refused = await self.start(
            task,
            channel_id=mention.channel,
            user_id=mention.user,
            team_id=mention.team,
            installation=installation,
        )
        if refused:
            await self._reply(mention, installation, refused)

    async def _reply(self, mention: AppMention, installation: Installation, text: str) -> None:
        """Answer a mention privately, in its Slack thread, with the token of the
        workspace that delivered it (``installation``; not the author's own: a Slack
        Connect guest's home workspace may lack the app); a failure is logged."""
        user_id = mention.user or ""
        try:
            await self.slack.post_ephemeral(
                team_id=installation.team_id or mention.team,
                channel_id=mention.channel,
                user_id=user_id,
                text=text,
                thread_ts=mention.ts,
            )
        except SlackCallError as exc:
            logger.warning("reply to %s's mention not posted: %s", user_id, exc)

    async def start(
        self,
        task: str,
        *,
        channel_id: str,
        user_id: str,
        team_id: str | None,
        installation: Installation,
    ) -> str | None:
        """Record a run of the channel's agent and signal the workers, if ``user_id`` may.

        Returns:
            ``None`` if the run was queued, else what to tell the user privately.
        """
        agent = self.channel_agents.get(channel_id, DEFAULT_AGENT)
        if installation.team_id is None or team_id != installation.team_id:
            return review_wording.OTHER_WORKSPACE_TEXT
        try:
            rules = await self.store.start_rules(agent)
            if rules is None:
                return review_wording.NO_WORKER_TEXT
            if rules.requesters is not None:
                members = await self.directory.members(team_id, rules.requesters)
                if members.unknown:
                    return review_wording.requesters_unknown_text(", ".join(members.unknown))
                if members.refused:  # an admin must act: trying again will not help
                    return review_wording.requesters_refused_text(refused_groups(members.refused))
                if not members.resolved:
                    return review_wording.requesters_unresolved_text(", ".join(members.unresolved))
                if user_id not in members.users:
                    return review_wording.NOT_A_REQUESTER_TEXT
            run = new_run(
                task=task,
                channel_id=channel_id,
                user_id=user_id,
                team_id=team_id,
                agent=agent,
                requester_name=await self.directory.name_of(team_id, user_id),
            )
            stored = await self.store.create_run_within(
                run, max_active=rules.max_active_runs_per_user
            )
        except BridgeError as exc:
            logger.error("run for %s not started: %s", user_id, exc)
            return wording.RUN_NOT_STARTED_TEXT
        if stored is None:
            logger.warning("run for %s not started: at max_active_runs_per_user", user_id)
            return review_wording.too_many_runs_text(rules.max_active_runs_per_user)
        log_context.bind_run(run)
        logger.info("run=%s thread_id=%s queued by %s", run.run_id, run.thread_id, run.user_id)
        await self.bus.publish(Signal(kind="run_requested", run_id=run.run_id))
        return None

"""Events API deliveries to the bot: mentions of it, changes of user groups' members, and
the events of an uninstall (``tokens_revoked``, ``app_uninstalled``).

Slack posts events as signed JSON ``event_callback`` envelopes to the same request
URL; the app must answer within 3 s like any delivery. A mention is also a message in
its channel, so the bot can reply in its Slack thread.
"""

from __future__ import annotations

import json

from slack_sandbox.core import Core
from slack_sandbox.errors import BotUnreachable, SandboxError
from slack_sandbox.event_payloads import (
    app_mention_payload,
    app_uninstalled_event,
    subteam_members_changed_event,
    tokens_revoked_event,
)
from slack_sandbox.event_payloads import event_callback as envelope
from slack_sandbox.interactions import Interactions
from slack_sandbox.people import bot_profile
from slack_sandbox.state import BOT_USER_ID
from slack_sandbox.usergroups import MembersChange

JSON = "application/json"


class Events:
    """Builds Events API callbacks and delivers them through ``interactions``.

    Args:
        core: The sandbox state.
        interactions: Signs, posts, and records late or failed answers.
        sent: ``event_id`` -> the body delivered, shared with ``Conversing`` (whose
            ``retry`` sends one again).
    """

    def __init__(self, *, core: Core, interactions: Interactions, sent: dict[str, bytes]) -> None:
        self.core = core
        self.interactions = interactions
        self.sent = sent

    async def mention(
        self, *, user_id: str, channel_id: str, text: str, thread_ts: str | None = None
    ) -> tuple[int, str]:
        """Post ``text`` by ``user_id`` in ``channel_id`` and deliver its ``app_mention``.

        The text gets a leading ``<@bot>`` unless it mentions the bot already. A bot
        user's message carries ``bot_id``, ``app_id`` and ``bot_profile``.

        Raises:
            SandboxError: The bot is not in the channel (Slack sends no event), or
                ``thread_ts`` is not a message of the channel.
        """
        ws = self.core.workspace
        channel_id = ws.resolve_channel(channel_id)
        if ws.unreachable(channel_id):
            raise SandboxError(f"the bot is not in {channel_id}: Slack would send no app_mention")
        if thread_ts is not None and ws.find(channel_id, thread_ts) is None:
            raise SandboxError(f"no message {thread_ts} in channel {channel_id} to reply to")
        mention = f"<@{BOT_USER_ID}>"
        text = text if mention in text else f"{mention} {text}"
        person = ws.people.get(user_id)
        team = ws.people.team_of(user_id)
        message = ws.post(
            channel_id, text=text, blocks=None, thread_ts=thread_ts, user=user_id, bot=False
        )
        message["team"] = team.id
        profile = bot_profile(person, updated=int(ws.clock())) if person.is_bot else None
        if profile is not None:
            message |= {"bot_id": person.bot_id, "app_id": person.app_id, "bot_profile": profile}
        outside_org = team.enterprise_id is None or team.enterprise_id != ws.team.enterprise_id
        payload = app_mention_payload(
            team_id=ws.team_id,
            enterprise_id=ws.team.enterprise_id,
            event_id=ws.new_id("Ev"),
            event_time=int(ws.clock()),
            user_id=user_id,
            user_team_id=team.id,
            channel_id=channel_id,
            text=text,
            ts=message["ts"],
            thread_ts=message.get("thread_ts"),
            bot_profile=profile,
            is_ext_shared_channel=team.id != ws.team_id and outside_org,
        )
        where = f"app_mention by {user_id} in {channel_id}"
        reply = await self.interactions.deliver(
            json.dumps(payload).encode(), where, content_type=JSON
        )
        return reply.status, reply.body

    async def members_changed(self, change: MembersChange) -> tuple[int, str]:
        """Deliver ``subteam_members_changed`` for ``change``; return the bot's answer."""
        ws = self.core.workspace
        event = subteam_members_changed_event(
            subteam_id=change.group.id,
            team_id=change.group.team_id,
            date_previous_update=change.date_previous_update,
            date_update=change.group.date_update,
            added_users=change.added,
            removed_users=change.removed,
            event_ts=f"{ws.clock():.6f}",
        )
        payload = envelope(
            team_id=ws.team_id,
            enterprise_id=ws.team.enterprise_id,
            event=event,
            event_id=ws.new_id("Ev"),
            event_time=int(ws.clock()),
        )
        where = f"subteam_members_changed of {change.group.id}"
        reply = await self.interactions.deliver(
            json.dumps(payload).encode(), where, content_type=JSON
        )
        return reply.status, reply.body

    async def uninstalled(self) -> list[tuple[int, str, str]]:
        """Deliver what Slack sends when the workspace removes the app: ``tokens_revoked``
        (the bot's token), then ``app_uninstalled``.

        Each is kept for ``Conversing.retry`` (Slack retries a delivery that failed,
        with the same ``event_id`` and ``event_time``:
        https://docs.slack.dev/apis/events-api/#retries); one the bot could not be
        reached for (``request_url`` unset or down) is not an error here, as Slack
        simply retries it later.

        Returns:
            ``(HTTP status, body, event_id)`` of each; status 0 and the reason when the
            bot was not reached.
        """
        ws = self.core.workspace
        replies = []
        for event in (
            tokens_revoked_event(bot_user_ids=[BOT_USER_ID], event_ts=f"{ws.clock():.6f}"),
            app_uninstalled_event(event_ts=f"{ws.clock():.6f}"),
        ):
            event_id = ws.new_id("Ev")
            payload = envelope(
                team_id=ws.team_id,
                enterprise_id=ws.team.enterprise_id,
                event=event,
                event_id=event_id,
                event_time=int(ws.clock()),
            )
            body = json.dumps(payload).encode()
            self.sent[event_id] = body
            where = f"{event['type']} of {ws.team_id}"
            try:
                reply = await self.interactions.deliver(body, where, content_type=JSON)
            except BotUnreachable as exc:
                replies.append((0, str(exc), event_id))
                continue
            replies.append((reply.status, reply.body, event_id))
        return replies

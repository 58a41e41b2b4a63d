"""A person talking with the app: direct messages, replies in Slack threads, the Home tab.

Each is stored as Slack stores it and delivered as Slack delivers it: a signed JSON
``event_callback`` (``message`` with ``channel_type``, ``app_home_opened``), or, for a
button in the Home tab, a signed ``block_actions`` whose ``container`` is the Home view.
A retry of an event re-sends the same ``event_id`` (Slack's ``X-Slack-Retry-Num``).
"""

from __future__ import annotations

import json
import secrets
import uuid
from typing import Any

from slack_sandbox.core import Core
from slack_sandbox.delivery import payload_body
from slack_sandbox.errors import SandboxError
from slack_sandbox.event_payloads import (
    app_home_opened_event,
    event_callback,
    message_event,
    slack_escaped,
)
from slack_sandbox.interactions import Interactions, find_button
from slack_sandbox.payloads import home_block_actions_payload

JSON = "application/json"


class Conversing:
    """Builds and delivers a person's messages and Home tab actions.

    Args:
        core: The sandbox state.
        interactions: Signs, posts, and records late or failed answers.
    """

    def __init__(self, *, core: Core, interactions: Interactions) -> None:
        self.core = core
        self.interactions = interactions
        self.sent: dict[str, bytes] = {}
        """``event_id`` -> the body delivered, for ``retry``."""

    def dm_channel(self, user_id: str) -> str:
        """The ID of the app's DM (``D…``) with ``user_id``, opening it if need be."""
        return self.core.workspace.resolve_channel(user_id)

    async def direct_message(self, *, user_id: str, text: str) -> tuple[int, str, str]:
        """``user_id`` writes ``text`` in their DM with the app (``message.im``).

        Returns:
            The bot's ``(HTTP status, body)`` and the ``event_id`` delivered.
        """
        return await self._message(user_id, self.dm_channel(user_id), "im", text, None)

    async def reply(
        self, *, user_id: str, channel_id: str, thread_ts: str, text: str
    ) -> tuple[int, str, str]:
        """``user_id`` replies ``text`` in the Slack thread ``thread_ts`` of ``channel_id``
        (``message.channels``, or ``message.groups`` in a private channel).

        Raises:
            SandboxError: No such parent message, or the bot is not in the channel
                (Slack would send no event).
        """
        ws = self.core.workspace
        if ws.unreachable(channel_id):
            raise SandboxError(f"the bot is not in {channel_id}: Slack would send no message")
        if ws.find(channel_id, thread_ts) is None:
            raise SandboxError(f"no message {thread_ts} in channel {channel_id} to reply to")
        kind = (
            "im"
            if channel_id.startswith("D")
            else ("group" if channel_id in ws.private else "channel")
        )
        return await self._message(user_id, channel_id, kind, text, thread_ts)

    async def _message(
        self, user_id: str, channel_id: str, kind: str, text: str, thread_ts: str | None
    ) -> tuple[int, str, str]:
        ws = self.core.workspace
        parent = ws.find(channel_id, thread_ts) if thread_ts else None
        message = ws.post(
            channel_id,
            text=slack_escaped(text),
            blocks=None,
            thread_ts=thread_ts,
            user=user_id,
            bot=False,
        )
        event = message_event(
            user_id=user_id,
            team_id=ws.people.team_of(user_id).id,
            channel_id=channel_id,
            channel_type=kind,
            text=text,
            ts=message["ts"],
            client_msg_id=str(uuid.uuid4()),
            thread_ts=thread_ts,
            parent_user_id=parent.get("user") if parent else None,
        )
        status, body, event_id = await self._deliver(event, f"message by {user_id} in {channel_id}")
        return status, body, event_id

    async def open_home(self, *, user_id: str) -> tuple[int, str]:
        """``user_id`` opens the app's Home tab: deliver ``app_home_opened`` (with the
        view published for them, if any)."""
        ws = self.core.workspace
        view = self.core.homes.views.get(user_id)
        event = app_home_opened_event(
            user_id=user_id,
            channel_id=self.dm_channel(user_id),
            event_ts=f"{ws.clock():.6f}",
            view=dict(view) if view else None,
        )
        status, body, _ = await self._deliver(event, f"app_home_opened by {user_id}")
        return status, body

    async def retry(self, event_id: str) -> tuple[int, str]:
        """Deliver event ``event_id`` again, as Slack retries a delivery it thinks failed."""
        body = self.sent.get(event_id)
        if body is None:
            raise SandboxError(f"no event {event_id} was delivered")
        reply = await self.interactions.deliver(body, f"retry of {event_id}", content_type=JSON)
        return reply.status, reply.body

    async def click_home(
        self, *, user_id: str, action_id: str, value: str | None = None
    ) -> tuple[int, str]:
        """Click the button ``action_id`` (with ``value``) in ``user_id``'s Home tab.

        Raises:
            SandboxError: Nothing was published for the user, or no such button.
        """
        ws = self.core.workspace
        view = self.core.homes.views.get(user_id)
        if view is None:
            raise SandboxError(f"no Home view was published for {user_id}")
        block, button = find_button({"ts": view["id"], **view}, action_id, value)
        payload = home_block_actions_payload(
            team_id=ws.team_id,
            enterprise_id=ws.team.enterprise_id,
            enterprise_name=ws.team.enterprise_name,
            user_team_id=ws.people.team_of(user_id).id,
            user_id=user_id,
            user_name=ws.people.get(user_id).name,
            view=view,
            block=block,
            button=button,
            trigger_id=self.core.modals.issue_trigger(user_id),
            action_ts=f"{ws.clock():.6f}",
        )
        reply = await self.interactions.deliver(
            payload_body(payload), f"Home click on {action_id} by {user_id}"
        )
        return reply.status, reply.body

    async def _deliver(self, event: dict[str, Any], where: str) -> tuple[int, str, str]:
        ws = self.core.workspace
        event_id = f"Ev{secrets.token_hex(5).upper()}"
        payload = event_callback(
            team_id=ws.team_id,
            enterprise_id=ws.team.enterprise_id,
            event=event,
            event_id=event_id,
            event_time=int(ws.clock()),
        )
        body = json.dumps(payload).encode()
        self.sent[event_id] = body
        reply = await self.interactions.deliver(body, where, content_type=JSON)
        return reply.status, reply.body, event_id

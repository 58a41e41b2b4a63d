"""The sandbox's in-memory workspace: users, channels, messages and ephemerals.

Everything is kept as the plain dicts Slack shows (``conversations.history`` shapes),
so inspection hands out deep copies and nothing needs converting.
"""

from __future__ import annotations

import copy
import itertools
import secrets
from collections.abc import Callable
from typing import Any

from slack_sandbox.people import People, Team

Clock = Callable[[], float]
"""Unix time in seconds; injectable so tests can move time without sleeping."""

BOT_USER_ID = "U0SANDBOXBOT"
BOT_ID = "B0SANDBOX"
APP_ID = "A0SANDBOX"
OTHER_BOT_USER_ID = "U0OTHERBOT"
OTHER_BOT_ID = "B0OTHERAPP"
OTHER_APP_ID = "A0OTHERAPP"
"""Another app installed in the workspace (``Sandbox.post_as_other_app``)."""
DEFAULT_USERS = {"U0REVIEWER": "reviewer", "U0DBA": "dba", "U0ALICE": "alice"}
DEFAULT_CHANNELS = {"C0GENERAL": "general", "C0APPROVAL": "approvals"}
TEAM_DOMAIN = "sandbox"
_NO_ACTION_ID = frozenset({"plain_text", "mrkdwn", "image"})


class Workspace:
    """Users, channels, messages (with thread replies) and ephemerals of one team.

    Args:
        team_id: The team's ID, e.g. ``T0SANDBOX``.
        users: ``user_id -> name`` of the team's own people.
        channels: ``channel_id -> name``.
        clock: Source of Unix time (s) for message timestamps.
        enterprise_id: The Enterprise Grid org the team belongs to, if any.
        enterprise_name: The org's name (its ID in lower case when None).
    """

    def __init__(
        self,
        *,
        team_id: str,
        users: dict[str, str],
        channels: dict[str, str],
        clock: Clock,
        enterprise_id: str | None = None,
        enterprise_name: str | None = None,
    ) -> None:
        self.team_id = team_id
        if enterprise_id is not None and enterprise_name is None:
            enterprise_name = enterprise_id.lower()
        self.team = Team(team_id, TEAM_DOMAIN, enterprise_id, enterprise_name)
        self.people = People(home=self.team, users=users)
        self.channels = dict(channels)
        self.private: set[str] = set()
        """Private channels (Slack hides them from non-members: ``channel_not_found``)."""
        self.outside: set[str] = set()
        """Channels the bot is not a member of."""
        self.clock = clock
        self.messages: dict[str, list[dict[str, Any]]] = {c: [] for c in self.channels}
        self.ephemerals: list[dict[str, Any]] = []
        self._last_ts_us = 0
        self._ids = itertools.count(1)

    def next_ts(self) -> str:
        """Return a new message ``ts`` ("1733000000.000100"), unique and increasing."""
        now_us = int(self.clock() * 1_000_000)
        self._last_ts_us = max(now_us, self._last_ts_us + 1)
        return f"{self._last_ts_us // 1_000_000}.{self._last_ts_us % 1_000_000:06d}"

    def new_id(self, prefix: str) -> str:
        """Return a new Slack-looking ID such as ``V0SBX00001``."""
        return f"{prefix}0SBX{next(self._ids):05d}"

    def channel_id(self, name: str) -> str:
        """Return the ID of channel ``name`` (a leading ``#`` is ignored), creating it."""
        name = name.lstrip("#")
        for channel_id, known in self.channels.items():
            if known == name:
                return channel_id
        channel_id = self.new_id("C")
        self.add_channel(channel_id, name)
        return channel_id

    @property
    def users(self) -> dict[str, str]:
        """``user_id -> name`` of everyone known, guests of other teams included."""
        return self.people.names()

    def add_channel(self, channel_id: str, name: str) -> None:
        """Create channel ``channel_id`` called ``name`` if it does not exist."""
        self.channels.setdefault(channel_id, name)
        self.messages.setdefault(channel_id, [])

    def set_membership(self, channel_id: str, *, private: bool, bot_member: bool) -> None:
        """Make ``channel_id`` private or public, with or without the bot in it."""
        for flagged, on in ((self.private, private), (self.outside, not bot_member)):
            if on:
                flagged.add(channel_id)
            else:
                flagged.discard(channel_id)

    def unreachable(self, channel_id: str) -> str | None:
        """Return Slack's error for the bot acting in ``channel_id``, or None if it may.

        A private channel the bot is not in does not exist for it (``channel_not_found``);
        a public one it may read but not post in (``not_in_channel``).
        """
        if channel_id not in self.outside:
            return None
        return "channel_not_found" if channel_id in self.private else "not_in_channel"

    def resolve_channel(self, ref: str) -> str:
        """Return the channel ID for ``ref``: an ID, ``#name``/``name`` or a user ID (a DM).

        Unknown channel IDs and names are created, so a bot configured with any channel
        can post. A user ID opens the DM ``D…`` with that user, as ``chat.postMessage``
        does.
        """
        if ref in self.channels:
            return ref
        if ref[:1] in ("U", "W") and ref in self.people.persons:
            dm_id = "D" + ref[1:]
            self.add_channel(dm_id, f"dm-{self.people.persons[ref].name}")
            return dm_id
        if ref[:1] in ("C", "G", "D") and ref[1:].isalnum() and ref.upper() == ref:
            self.add_channel(ref, ref.lower())
            return ref
        return self.channel_id(ref)

    def find(self, channel_id: str, ts: str) -> dict[str, Any] | None:
        """Return the stored message (not a copy) at ``ts`` in ``channel_id``, if any."""
        for message in self.messages.get(channel_id, []):
            if message["ts"] == ts:
                return message
        return None

    def find_ephemeral(self, channel_id: str, ts: str) -> dict[str, Any] | None:
        """Return the stored ephemeral (not a copy) at ``ts`` in ``channel_id``, if any."""
        for message in self.ephemerals:
            if message["channel"] == channel_id and message["ts"] == ts:
                return message
        return None

    def post(
        self,
        channel_id: str,
        *,
        text: str,
        blocks: list[dict[str, Any]] | None,
        thread_ts: str | None = None,
        user: str = BOT_USER_ID,
        bot: bool = True,
    ) -> dict[str, Any]:
        """Store and return a new message; a reply updates its parent's reply count."""
        message: dict[str, Any] = {"type": "message", "ts": self.next_ts(), "user": user}
        if bot:
            message |= {"bot_id": BOT_ID, "app_id": APP_ID}
        message |= {"text": text, "team": self.team_id}
        if blocks is not None:
            message["blocks"] = with_block_ids(blocks)
        if thread_ts is not None:
            message["thread_ts"] = thread_ts
            parent = self.find(channel_id, thread_ts)
            if parent is not None:
                parent["thread_ts"] = thread_ts
                parent["reply_count"] = parent.get("reply_count", 0) + 1
                parent["latest_reply"] = message["ts"]
        self.messages[channel_id].append(message)
        return message

    def post_ephemeral(
        self,
        channel_id: str,
        *,
        user: str,
        text: str,
        blocks: list[dict[str, Any]] | None,
        thread_ts: str | None = None,
    ) -> dict[str, Any]:
        """Store and return a message only ``user`` sees in ``channel_id``."""
        message: dict[str, Any] = {
            "type": "message",
            "channel": channel_id,
            "user": user,
            "ts": self.next_ts(),
            "bot_id": BOT_ID,
            "text": text,
        }
        if blocks is not None:
            message["blocks"] = with_block_ids(blocks)
        if thread_ts is not None:
            message["thread_ts"] = thread_ts
        self.ephemerals.append(message)
        return message

    def edit(
        self, message: dict[str, Any], *, text: str | None, blocks: list[dict[str, Any]] | None
    ) -> None:
        """Replace ``message``'s text and/or blocks in place and mark it edited."""
        if text is not None:
            message["text"] = text
        if blocks is not None:
            message["blocks"] = with_block_ids(blocks)
        if "channel" not in message:  # ephemerals show no "edited"
            message["edited"] = {"user": message.get("user", BOT_USER_ID), "ts": self.next_ts()}

    def delete(self, channel_id: str, ts: str) -> bool:
        """Delete the message at ``ts``; return whether it existed."""
        message = self.find(channel_id, ts)
        if message is None:
            return False
        self.messages[channel_id].remove(message)
        return True

    def user_name(self, user_id: str) -> str:
        """Return the name of ``user_id`` (the ID itself when unknown)."""
        person = self.people.persons.get(user_id)
        return person.name if person else user_id


def with_block_ids(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return a deep copy of ``blocks`` where every block and button has an ID.

    Slack fills a missing ``block_id`` / ``action_id`` (of interactive elements) with a
    random one; interaction payloads then carry those.
    """
    out = copy.deepcopy(blocks)
    for block in out:
        block.setdefault("block_id", secrets.token_urlsafe(4))
        found = [block.get("accessory"), block.get("element"), *(block.get("elements") or [])]
        for element in found:
            if isinstance(element, dict) and element.get("type") not in _NO_ACTION_ID:
                if not str(element.get("type", "")).startswith("rich_text"):
                    element.setdefault("action_id", secrets.token_urlsafe(4))
    return out

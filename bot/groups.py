"""Slack's user-group events: a group's members changed, so its cached members are
forgotten at once (``bot.directory.Directory.forget``).

Needs the ``subteam_members_changed`` event subscription (``manifest.yml``). Each web
process keeps its own cache; the event reaches one of them, and the others see the
change within ``GROUP_TTL_S``.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp

from bot.actions import Ack
from bot.directory import Directory
from bot.errors import PayloadError
from bot.payloads import SubteamCallback, parse

logger = logging.getLogger(__name__)


class GroupListeners:
    """The ``subteam_members_changed`` listener.

    Args:
        directory: The resolver whose cache it keeps fresh.
    """

    def __init__(self, *, directory: Directory) -> None:
        self.directory = directory

    def register(self, app: AsyncApp) -> None:
        """Attach the listener to ``app``."""
        app.event("subteam_members_changed")(self.on_members_changed)

    async def on_members_changed(self, ack: Ack, body: dict[str, Any]) -> None:
        """Forget the group's cached members."""
        await ack()
        try:
            callback = parse(SubteamCallback, body)
        except PayloadError as exc:
            logger.warning("%s", exc)
            return
        team_id = callback.event.team_id or callback.team_id
        self.directory.forget(team_id, callback.event.subteam_id)
        logger.info(
            "user group %s of team %s changed; members forgotten",
            callback.event.subteam_id,
            team_id,
        )

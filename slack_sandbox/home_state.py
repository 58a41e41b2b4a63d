"""Each user's App Home view as the app last published it (``views.publish``).

Publishing again replaces the view in place (same ``id``, a new ``hash``), as Slack does
(https://docs.slack.dev/surfaces/app-home).
"""

from __future__ import annotations

import copy
import secrets
from typing import Any

from slack_sandbox.state import APP_ID, BOT_ID, Workspace, with_block_ids


class Homes:
    """Each user's published Home view (what their Home tab shows)."""

    def __init__(self) -> None:
        self.views: dict[str, dict[str, Any]] = {}

    def publish(self, ws: Workspace, user_id: str, view: dict[str, Any]) -> dict[str, Any]:
        """Store ``view`` as ``user_id``'s Home (same ``id`` as before, a new hash)."""
        old = self.views.get(user_id)
        stored = {
            "id": old["id"] if old else ws.new_id("V"),
            "team_id": ws.team_id,
            "type": "home",
            "blocks": with_block_ids(copy.deepcopy(view.get("blocks") or [])),
            "private_metadata": view.get("private_metadata", ""),
            "callback_id": view.get("callback_id", ""),
            "state": {"values": {}},
            "hash": f"{int(ws.clock())}.{secrets.token_hex(4)}",
            "title": {"type": "plain_text", "text": "View Title"},
            "clear_on_close": False,
            "notify_on_close": False,
            "close": None,
            "submit": None,
            "previous_view_id": None,
            "root_view_id": old["id"] if old else None,
            "app_id": APP_ID,
            "external_id": view.get("external_id", ""),
            "app_installed_team_id": ws.team_id,
            "bot_id": BOT_ID,
        }
        if stored["root_view_id"] is None:
            stored["root_view_id"] = stored["id"]
        self.views[user_id] = stored
        return copy.deepcopy(stored)

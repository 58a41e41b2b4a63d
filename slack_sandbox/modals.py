"""Modal view stacks and the trigger IDs that open them.

Slack lets an app open a modal only with a ``trigger_id`` from an interaction that is
less than 3 s old, once; a user has a stack of at most 3 views. Stored views are the
dicts Slack sends in ``view_submission`` payloads, plus ``errors`` (the field errors
from the last ``response_action: errors``).
"""

from __future__ import annotations

import copy
import secrets
from dataclasses import dataclass
from typing import Any

from slack_sandbox.state import APP_ID, BOT_ID, Workspace, with_block_ids

TRIGGER_TTL_S = 3.0
MAX_STACK_VIEWS = 3


@dataclass
class Trigger:
    """A ``trigger_id`` issued with an interaction payload."""

    user_id: str
    issued_at: float
    """Unix time (s) from the sandbox clock."""
    used: bool = False


class Modals:
    """Every user's stack of open modals, and the trigger IDs handed out.

    Args:
        workspace: The team, its clock and ID generator.
    """

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.stacks: dict[str, list[dict[str, Any]]] = {}
        self.triggers: dict[str, Trigger] = {}

    def issue_trigger(self, user_id: str) -> str:
        """Return a fresh ``trigger_id`` for ``user_id``, valid for 3 s."""
        now = self.workspace.clock()
        trigger_id = f"{int(now)}.{len(self.triggers) + 1}.{secrets.token_hex(16)}"
        self.triggers[trigger_id] = Trigger(user_id=user_id, issued_at=now)
        return trigger_id

    def redeem(self, trigger_id: Any) -> tuple[str | None, str | None]:
        """Use ``trigger_id`` once; return ``(user_id, None)`` or ``(None, slack_error)``."""
        trigger = self.triggers.get(trigger_id) if isinstance(trigger_id, str) else None
        if trigger is None:
            return None, "invalid_trigger_id"
        if self.workspace.clock() - trigger.issued_at > TRIGGER_TTL_S:
            return None, "expired_trigger_id"
        if trigger.used:
            return None, "exchanged_trigger_id"
        trigger.used = True
        return trigger.user_id, None

    def open(self, user_id: str, view: dict[str, Any]) -> dict[str, Any]:
        """Open ``view`` as the root of a new stack for ``user_id``; return it."""
        stored = self._store(view, view_id=self.workspace.new_id("V"), user_id=user_id)
        stored["root_view_id"] = stored["id"]
        self.stacks[user_id] = [stored]
        return stored

    def push(self, user_id: str, view: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
        """Push ``view`` on ``user_id``'s stack; return ``(view, None)`` or ``(None, error)``."""
        stack = self.stacks.get(user_id) or []
        if not stack:
            return self.open(user_id, view), None
        if len(stack) >= MAX_STACK_VIEWS:
            return None, "push_limit_reached"
        stored = self._store(view, view_id=self.workspace.new_id("V"), user_id=user_id)
        stored["root_view_id"] = stack[0]["id"]
        stored["previous_view_id"] = stack[-1]["id"]
        stack.append(stored)
        return stored, None

    def find(
        self, *, view_id: str | None = None, external_id: str | None = None
    ) -> tuple[str, dict[str, Any]] | None:
        """Return ``(user_id, stored view)`` of an open view by ID or external ID."""
        for user_id, stack in self.stacks.items():
            for view in stack:
                if (view_id and view["id"] == view_id) or (
                    external_id and view.get("external_id") == external_id
                ):
                    return user_id, view
        return None

    def update(self, old: dict[str, Any], view: dict[str, Any]) -> dict[str, Any]:
        """Replace open view ``old`` by ``view`` in place (same ID, new hash); return it."""
        keep = {k: old[k] for k in ("id", "team_id", "root_view_id", "previous_view_id")}
        new = self._store(view, view_id=old["id"], user_id=None) | keep
        old.clear()
        old.update(new)
        return old

    def close(self, user_id: str, view_id: str) -> None:
        """Close view ``view_id`` of ``user_id`` and every view pushed above it."""
        stack = self.stacks.get(user_id) or []
        ids = [v["id"] for v in stack]
        if view_id in ids:
            del stack[ids.index(view_id) :]

    def clear(self, user_id: str) -> None:
        """Close every view of ``user_id``."""
        self.stacks.pop(user_id, None)

    def _store(self, view: dict[str, Any], *, view_id: str, user_id: str | None) -> dict[str, Any]:
        """Return ``view`` as stored; its ``team_id`` is the viewer's home team."""
        ws = self.workspace
        return {
            "id": view_id,
            "team_id": ws.team_id if user_id is None else ws.people.team_of(user_id).id,
            "type": view.get("type", "modal"),
            "blocks": with_block_ids(view.get("blocks") or []),
            "private_metadata": view.get("private_metadata", ""),
            "callback_id": view.get("callback_id", ""),
            "state": {"values": {}},
            "hash": f"{int(ws.clock())}.{secrets.token_hex(4)}",
            "title": copy.deepcopy(view.get("title")),
            "clear_on_close": bool(view.get("clear_on_close", False)),
            "notify_on_close": bool(view.get("notify_on_close", False)),
            "close": copy.deepcopy(view.get("close")),
            "submit": copy.deepcopy(view.get("submit")),
            "previous_view_id": None,
            "root_view_id": None,
            "app_id": APP_ID,
            "external_id": view.get("external_id", ""),
            "app_installed_team_id": ws.team_id,
            "bot_id": BOT_ID,
            "errors": {},
        }


def public_view(view: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of a stored view as Slack shows it to the app (without ``errors``)."""
    out = copy.deepcopy(view)
    out.pop("errors", None)
    return out

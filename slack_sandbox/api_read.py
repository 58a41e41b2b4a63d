"""Read-only Web API methods: ``auth.test``, ``conversations.*`` and ``users.info``.

A private channel the bot is not in is ``channel_not_found``; a public one it can
describe (``is_member: false``) but not read (``not_in_channel``).
"""

from __future__ import annotations

import base64
import binascii
import copy
from typing import Any

from slack_sandbox.core import Core
from slack_sandbox.people import user_object
from slack_sandbox.state import BOT_ID, BOT_USER_ID
from slack_sandbox.web_api import Handler, flag

DEFAULT_HISTORY_LIMIT = 100


def auth_test(core: Core, args: dict[str, Any]) -> dict[str, Any]:
    """``auth.test``: who the token belongs to (and its org, on Enterprise Grid)."""
    team = core.workspace.team
    return {
        "ok": True,
        "url": core.base_url,
        "team": "Sandbox",
        "user": "sandbox-bot",
        "team_id": core.workspace.team_id,
        "user_id": BOT_USER_ID,
        "bot_id": BOT_ID,
        "is_enterprise_install": False,
    } | ({"enterprise_id": team.enterprise_id} if team.enterprise_id else {})


def _limit(args: dict[str, Any]) -> int:
    try:
        return max(1, int(args.get("limit") or DEFAULT_HISTORY_LIMIT))
    except (TypeError, ValueError):
        return DEFAULT_HISTORY_LIMIT


def _shown(messages: list[dict[str, Any]], args: dict[str, Any]) -> list[dict[str, Any]]:
    """Copies of ``messages`` as a read method returns them: without their ``metadata``
    unless ``include_all_metadata`` was asked for (Slack's default is false)."""
    shown = copy.deepcopy(messages)
    if not flag(args, "include_all_metadata"):
        for message in shown:
            message.pop("metadata", None)
    return shown


def _since(messages: list[dict[str, Any]], args: dict[str, Any]) -> list[dict[str, Any]]:
    """``messages`` after ``oldest`` (a ``ts``), if given."""
    try:
        oldest = float(args.get("oldest") or 0)
    except (TypeError, ValueError):
        oldest = 0.0
    return [m for m in messages if float(m["ts"]) > oldest]


def _page(
    messages: list[dict[str, Any]], args: dict[str, Any]
) -> tuple[list[dict[str, Any]], str] | None:
    """The page of ``messages`` that ``cursor`` and ``limit`` ask for, and the cursor of
    the next one (``""`` after the last): Slack's cursor-based pagination
    (https://docs.slack.dev/apis/web-api/pagination), its cursors opaque strings.
    ``None`` for a cursor this sandbox did not give (Slack: ``invalid_cursor``)."""
    start = 0
    cursor = str(args.get("cursor") or "")
    if cursor:
        try:
            start = int(base64.b64decode(cursor, validate=True).decode().removeprefix("next:"))
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return None
    end = start + _limit(args)
    following = base64.b64encode(f"next:{end}".encode()).decode() if end < len(messages) else ""
    return messages[start:end], following


INVALID_CURSOR = {"ok": False, "error": "invalid_cursor"}


def _unreadable(core: Core, channel_id: str) -> dict[str, Any] | None:
    """Return Slack's refusal to read ``channel_id``'s messages, or None if the bot may."""
    if channel_id not in core.workspace.channels:
        return {"ok": False, "error": "channel_not_found"}
    error = core.workspace.unreachable(channel_id)
    return {"ok": False, "error": error} if error else None


def history(core: Core, args: dict[str, Any]) -> dict[str, Any]:
    """``conversations.history``: top-level messages (and broadcasts) after ``oldest``,
    newest first, a page at a time; ``metadata`` only with ``include_all_metadata``."""
    channel_id = str(args.get("channel"))
    refused = _unreadable(core, channel_id)
    if refused:
        return refused
    top = [
        m
        for m in core.workspace.messages[channel_id]
        if m.get("thread_ts", m["ts"]) == m["ts"] or m.get("subtype") == "thread_broadcast"
    ]
    paged = _page(list(reversed(_since(top, args))), args)
    if paged is None:
        return dict(INVALID_CURSOR)
    page, following = paged
    return {
        "ok": True,
        "messages": _shown(page, args),
        "has_more": bool(following),
        "pin_count": 0,
        "response_metadata": {"next_cursor": following},
    }


def replies(core: Core, args: dict[str, Any]) -> dict[str, Any]:
    """``conversations.replies``: a thread's messages after ``oldest`` (if given), the
    parent first, then its replies oldest first, a page at a time; ``metadata`` only
    with ``include_all_metadata``."""
    channel_id = str(args.get("channel"))
    refused = _unreadable(core, channel_id)
    if refused:
        return refused
    message = core.workspace.find(channel_id, str(args.get("ts")))
    if message is None:
        return {"ok": False, "error": "thread_not_found"}
    thread_ts = message.get("thread_ts", message["ts"])
    thread = [
        m
        for m in core.workspace.messages[channel_id]
        if m["ts"] == thread_ts or m.get("thread_ts") == thread_ts
    ]
    paged = _page(_since(thread, args), args)
    if paged is None:
        return dict(INVALID_CURSOR)
    page, following = paged
    return {
        "ok": True,
        "messages": _shown(page, args),
        "has_more": bool(following),
        "response_metadata": {"next_cursor": following},
    }


def conversation_info(core: Core, args: dict[str, Any]) -> dict[str, Any]:
    """``conversations.info``: a channel's ID, name, privacy and the bot's membership."""
    ws = core.workspace
    channel_id = args.get("channel")
    if channel_id not in ws.channels or ws.unreachable(channel_id) == "channel_not_found":
        return {"ok": False, "error": "channel_not_found"}
    is_im = str(channel_id).startswith("D")
    return {
        "ok": True,
        "channel": {
            "id": channel_id,
            "name": ws.channels[channel_id],
            "is_channel": not is_im,
            "is_group": channel_id in ws.private,
            "is_im": is_im,
            "is_private": is_im or channel_id in ws.private,
            "is_archived": False,
            "is_member": channel_id not in ws.outside,
            "created": 1_700_000_000,
        },
    }


def user_info(core: Core, args: dict[str, Any]) -> dict[str, Any]:
    """``users.info``: a user's ID, names, home team (``team_id``) and whether a bot."""
    person = core.workspace.people.persons.get(str(args.get("user")))
    if person is None:
        return {"ok": False, "error": "user_not_found"}
    team = core.workspace.people.teams[person.team_id]
    return {"ok": True, "user": user_object(person, team)}


READ_METHODS: dict[str, Handler] = {
    "auth.test": auth_test,
    "conversations.history": history,
    "conversations.replies": replies,
    "conversations.info": conversation_info,
    "users.info": user_info,
}

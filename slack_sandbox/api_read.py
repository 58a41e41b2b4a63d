"""Read-only Web API methods: ``auth.test``, ``conversations.*`` and ``users.info``.

A private channel the bot is not in is ``channel_not_found``; a public one it can
describe (``is_member: false``) but not read (``not_in_channel``).
"""

from __future__ import annotations

import copy
from typing import Any

from slack_sandbox.core import Core
from slack_sandbox.people import user_object
from slack_sandbox.state import BOT_ID, BOT_USER_ID
from slack_sandbox.web_api import Handler

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


def _unreadable(core: Core, channel_id: str) -> dict[str, Any] | None:
    """Return Slack's refusal to read ``channel_id``'s messages, or None if the bot may."""
    if channel_id not in core.workspace.channels:
        return {"ok": False, "error": "channel_not_found"}
    error = core.workspace.unreachable(channel_id)
    return {"ok": False, "error": error} if error else None


def history(core: Core, args: dict[str, Any]) -> dict[str, Any]:
    """``conversations.history``: top-level messages (and broadcasts), newest first."""
    channel_id = str(args.get("channel"))
    refused = _unreadable(core, channel_id)
    if refused:
        return refused
    top = [
        m
        for m in core.workspace.messages[channel_id]
        if m.get("thread_ts", m["ts"]) == m["ts"] or m.get("subtype") == "thread_broadcast"
    ]
    newest_first = list(reversed(top))
    limit = _limit(args)
    return {
        "ok": True,
        "messages": copy.deepcopy(newest_first[:limit]),
        "has_more": len(newest_first) > limit,
        "pin_count": 0,
        "response_metadata": {"next_cursor": ""},
    }


def replies(core: Core, args: dict[str, Any]) -> dict[str, Any]:
    """``conversations.replies``: a thread, parent first, then replies oldest first."""
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
    limit = _limit(args)
    return {
        "ok": True,
        "messages": copy.deepcopy(thread[:limit]),
        "has_more": len(thread) > limit,
        "response_metadata": {"next_cursor": ""},
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

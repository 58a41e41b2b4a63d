"""Read-only Web API methods: ``auth.test``, ``conversations.*`` and ``users.info``."""

from __future__ import annotations

import copy
from typing import Any

from slack_sandbox.core import Core
from slack_sandbox.state import BOT_ID, BOT_USER_ID
from slack_sandbox.web_api import Handler

DEFAULT_HISTORY_LIMIT = 100


def auth_test(core: Core, args: dict[str, Any]) -> dict[str, Any]:
    """``auth.test``: who the token belongs to."""
    return {
        "ok": True,
        "url": core.base_url,
        "team": "Sandbox",
        "user": "sandbox-bot",
        "team_id": core.workspace.team_id,
        "user_id": BOT_USER_ID,
        "bot_id": BOT_ID,
        "is_enterprise_install": False,
    }


def _limit(args: dict[str, Any]) -> int:
    try:
        return max(1, int(args.get("limit") or DEFAULT_HISTORY_LIMIT))
    except (TypeError, ValueError):
        return DEFAULT_HISTORY_LIMIT


def history(core: Core, args: dict[str, Any]) -> dict[str, Any]:
    """``conversations.history``: top-level messages (and broadcasts), newest first."""
    channel_id = args.get("channel")
    if channel_id not in core.workspace.channels:
        return {"ok": False, "error": "channel_not_found"}
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
    channel_id = args.get("channel")
    if channel_id not in core.workspace.channels:
        return {"ok": False, "error": "channel_not_found"}
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
    """``conversations.info``: a channel's ID and name."""
    channel_id = args.get("channel")
    if channel_id not in core.workspace.channels:
        return {"ok": False, "error": "channel_not_found"}
    is_im = str(channel_id).startswith("D")
    return {
        "ok": True,
        "channel": {
            "id": channel_id,
            "name": core.workspace.channels[channel_id],
            "is_channel": not is_im,
            "is_im": is_im,
            "is_private": is_im,
            "is_archived": False,
            "is_member": True,
            "created": 1_700_000_000,
        },
    }


def user_info(core: Core, args: dict[str, Any]) -> dict[str, Any]:
    """``users.info``: a user's ID and names."""
    user_id = args.get("user")
    if user_id not in core.workspace.users:
        return {"ok": False, "error": "user_not_found"}
    name = core.workspace.users[user_id]
    real_name = name.replace("_", " ").title()
    return {
        "ok": True,
        "user": {
            "id": user_id,
            "team_id": core.workspace.team_id,
            "name": name,
            "real_name": real_name,
            "deleted": False,
            "is_bot": False,
            "tz": "Etc/UTC",
            "profile": {"display_name": name, "real_name": real_name},
        },
    }


READ_METHODS: dict[str, Handler] = {
    "auth.test": auth_test,
    "conversations.history": history,
    "conversations.replies": replies,
    "conversations.info": conversation_info,
    "users.info": user_info,
}

"""The ``chat.*`` Web API methods: post, update, delete, ephemeral, permalink."""

from __future__ import annotations

import copy
from typing import Any

from slack_sandbox.core import Core
from slack_sandbox.state import BOT_USER_ID
from slack_sandbox.validation import MESSAGE_TEXT_MAX_CHARS, check_message
from slack_sandbox.web_api import Handler, flag, json_arg, refusal


def _content(
    core: Core, where: str, args: dict[str, Any]
) -> tuple[str | None, list[dict[str, Any]] | None, dict[str, Any] | None]:
    """Return ``(text, blocks, None)`` of a message call, or ``(.., .., refusal)``."""
    text = args.get("text")
    blocks = json_arg(args, "blocks", error="invalid_blocks_format")
    has_attachments = bool(args.get("attachments"))
    if blocks is not None and not isinstance(blocks, list):
        return None, None, refusal(core, where, "invalid_blocks_format")
    problems = check_message(text, blocks)
    if isinstance(text, str) and len(text) > MESSAGE_TEXT_MAX_CHARS:
        return None, None, refusal(core, where, "msg_too_long", problems)
    if problems:
        return None, None, refusal(core, where, "invalid_blocks", problems)
    if not text and not blocks and not has_attachments:
        return None, None, refusal(core, where, "no_text")
    return text, blocks, None


def _known_channel(core: Core, args: dict[str, Any]) -> str | None:
    """Return the ``channel`` argument if the bot can see that channel (not private to it)."""
    channel = args.get("channel")
    if channel not in core.workspace.channels:
        return None
    return None if core.workspace.unreachable(channel) == "channel_not_found" else channel


def post_message(core: Core, args: dict[str, Any]) -> dict[str, Any]:
    """``chat.postMessage``: post to a channel (by ID or name) or a thread."""
    ws = core.workspace
    if not isinstance(args.get("channel"), str) or not args["channel"]:
        return {"ok": False, "error": "channel_not_found"}
    channel_id = ws.resolve_channel(args["channel"])
    outside = ws.unreachable(channel_id)
    if outside:
        return {"ok": False, "error": outside}
    where = f"chat.postMessage in {channel_id}"
    text, blocks, refused = _content(core, where, args)
    if refused:
        return refused
    thread_ts = args.get("thread_ts") or None
    if thread_ts is not None:
        parent = ws.find(channel_id, str(thread_ts))
        if parent is None:
            return {"ok": False, "error": "thread_not_found"}
        thread_ts = parent.get("thread_ts", parent["ts"])
    metadata = json_arg(args, "metadata", error="invalid_metadata_format")
    if metadata is not None and not valid_metadata(metadata):
        return refusal(core, where, "invalid_metadata_format")
    message = ws.post(channel_id, text=text or "", blocks=blocks, thread_ts=thread_ts)
    if metadata is not None:
        message["metadata"] = metadata
    if thread_ts is not None and flag(args, "reply_broadcast"):
        message["subtype"] = "thread_broadcast"
    return {
        "ok": True,
        "channel": channel_id,
        "ts": message["ts"],
        "message": copy.deepcopy(message),
    }


def valid_metadata(metadata: Any) -> bool:
    """Whether ``metadata`` has Slack's shape: ``event_type`` (a string) and
    ``event_payload`` (an object), https://docs.slack.dev/messaging/message-metadata."""
    return (
        isinstance(metadata, dict)
        and isinstance(metadata.get("event_type"), str)
        and isinstance(metadata.get("event_payload"), dict)
    )


def update(core: Core, args: dict[str, Any]) -> dict[str, Any]:
    """``chat.update``: replace a message's text and/or blocks (the bot's own only)."""
    channel_id = _known_channel(core, args)
    if channel_id is None:
        return {"ok": False, "error": "channel_not_found"}
    if core.workspace.unreachable(channel_id):
        return {"ok": False, "error": "not_in_channel"}
    message = core.workspace.find(channel_id, str(args.get("ts")))
    if message is None:
        return {"ok": False, "error": "message_not_found"}
    if message.get("user") != BOT_USER_ID:
        return {"ok": False, "error": "cant_update_message"}
    text, blocks, refused = _content(core, f"chat.update of {channel_id}/{args['ts']}", args)
    if refused:
        return refused
    metadata = json_arg(args, "metadata", error="invalid_metadata_format")
    if metadata is not None and not valid_metadata(metadata):
        return refusal(core, f"chat.update of {channel_id}/{args['ts']}", "invalid_metadata_format")
    core.workspace.edit(message, text=text, blocks=blocks)
    if metadata is not None:
        message["metadata"] = metadata
    return {
        "ok": True,
        "channel": channel_id,
        "ts": message["ts"],
        "text": message["text"],
        "message": copy.deepcopy(message),
    }


def delete(core: Core, args: dict[str, Any]) -> dict[str, Any]:
    """``chat.delete``: delete a message."""
    channel_id = _known_channel(core, args)
    if channel_id is None:
        return {"ok": False, "error": "channel_not_found"}
    if not core.workspace.delete(channel_id, str(args.get("ts"))):
        return {"ok": False, "error": "message_not_found"}
    return {"ok": True, "channel": channel_id, "ts": args["ts"]}


def post_ephemeral(core: Core, args: dict[str, Any]) -> dict[str, Any]:
    """``chat.postEphemeral``: post a message only ``user`` sees."""
    ws = core.workspace
    if not isinstance(args.get("channel"), str) or not args["channel"]:
        return {"ok": False, "error": "channel_not_found"}
    channel_id = ws.resolve_channel(args["channel"])
    outside = ws.unreachable(channel_id)
    if outside:
        return {"ok": False, "error": outside}
    user = args.get("user")
    if user not in ws.users:
        return {"ok": False, "error": "user_not_in_channel"}
    text, blocks, refused = _content(core, f"chat.postEphemeral in {channel_id}", args)
    if refused:
        return refused
    message = ws.post_ephemeral(
        channel_id, user=user, text=text or "", blocks=blocks, thread_ts=args.get("thread_ts")
    )
    return {"ok": True, "message_ts": message["ts"]}


def get_permalink(core: Core, args: dict[str, Any]) -> dict[str, Any]:
    """``chat.getPermalink``: a link to a message."""
    channel_id = _known_channel(core, args)
    if channel_id is None:
        return {"ok": False, "error": "channel_not_found"}
    ts = str(args.get("message_ts"))
    message = core.workspace.find(channel_id, ts)
    if message is None:
        return {"ok": False, "error": "message_not_found"}
    link = f"{core.base_url}archives/{channel_id}/p{ts.replace('.', '')}"
    if message.get("thread_ts", ts) != ts:
        link += f"?thread_ts={message['thread_ts']}&cid={channel_id}"
    return {"ok": True, "channel": channel_id, "permalink": link}


CHAT_METHODS: dict[str, Handler] = {
    "chat.postMessage": post_message,
    "chat.update": update,
    "chat.delete": delete,
    "chat.postEphemeral": post_ephemeral,
    "chat.getPermalink": get_permalink,
}

"""``response_url`` messages: ``POST /response/{token}``, and slash command answers.

Slack lets an app answer an interaction by posting ``{text, blocks, response_type,
replace_original, delete_original, thread_ts}`` to the payload's ``response_url``. A
slash command's immediate HTTP answer is treated the same way.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from slack_sandbox.block_rules import Problem
from slack_sandbox.core import Core, ResponseTarget
from slack_sandbox.validation import check_message

RESPONSE_TYPES = ("ephemeral", "in_channel")


def apply_response(
    core: Core, target: ResponseTarget, body: Any, *, where: str
) -> tuple[int, dict[str, Any]]:
    """Apply a response message ``body`` for ``target``; return ``(HTTP status, answer)``.

    Invalid bodies are answered 400 with Slack's error and recorded as violations.
    """
    if not isinstance(body, dict):
        core.violate(where, ["the body must be a JSON object"])
        return 400, {"ok": False, "error": "invalid_payload"}
    ws = core.workspace
    original = _original(core, target)
    if body.get("delete_original"):
        if original is None:
            return 404, {"ok": False, "error": "message_not_found"}
        if target.is_ephemeral:
            ws.ephemerals.remove(original)
        else:
            ws.delete(target.channel_id, original["ts"])
        return 200, {"ok": True}
    text, blocks = body.get("text"), body.get("blocks")
    problems = check_message(text, blocks)
    response_type = body.get("response_type", "ephemeral")
    if response_type not in RESPONSE_TYPES:
        problems.append(Problem("/response_type", f"must be one of {RESPONSE_TYPES}"))
    if problems:
        core.violate(where, problems)
        return 400, {"ok": False, "error": "invalid_blocks"}
    if not text and not blocks:
        core.violate(where, ["no_text: give text or blocks"])
        return 400, {"ok": False, "error": "no_text"}
    if body.get("replace_original") and original is not None:
        ws.edit(original, text=text or "", blocks=blocks)
        return 200, {"ok": True}
    thread_ts = body.get("thread_ts")
    if response_type == "in_channel":
        ws.post(target.channel_id, text=text or "", blocks=blocks, thread_ts=thread_ts)
    else:
        ws.post_ephemeral(
            target.channel_id,
            user=target.user_id,
            text=text or "",
            blocks=blocks,
            thread_ts=thread_ts,
        )
    return 200, {"ok": True}


def _original(core: Core, target: ResponseTarget) -> dict[str, Any] | None:
    if target.message_ts is None:
        return None
    if target.is_ephemeral:
        return core.workspace.find_ephemeral(target.channel_id, target.message_ts)
    return core.workspace.find(target.channel_id, target.message_ts)


def slash_command_answer(core: Core, target: ResponseTarget, reply_body: str) -> None:
    """Show a slash command's immediate answer as Slack does (ephemeral by default).

    A JSON object is a response message; any other non-empty text is an ephemeral
    message with that text.
    """
    if not reply_body.strip():
        return
    try:
        body = json.loads(reply_body)
    except ValueError:
        body = {"text": reply_body}
    if not isinstance(body, dict):
        body = {"text": reply_body}
    apply_response(core, target, body, where="slash command answer")


def response_routes(core: Core) -> list[web.RouteDef]:
    """Return the route of ``POST /response/{token}``."""

    async def handle(request: web.Request) -> web.Response:
        target, error = core.redeem_response(request.match_info["token"])
        if target is None:
            return web.json_response({"ok": False, "error": error}, status=404)
        team = core.teams.get(target.team_id, core)  # the interaction's workspace
        try:
            body = json.loads(await request.text())
        except ValueError:
            core.violate("response_url", ["the body is not JSON"])
            return web.json_response({"ok": False, "error": "invalid_payload"}, status=400)
        status, answer = apply_response(team, target, body, where="response_url")
        return web.json_response(answer, status=status)

    return [web.post("/response/{token}", handle)]

"""The Web API endpoint ``/api/{method}``: arguments, auth, injected failures, latency and
stalls, records.

Arguments arrive as a JSON body, a form body or a query string (``slack_sdk`` uses all
three depending on the method); form fields such as ``blocks`` and ``view`` are JSON
strings and are decoded by the method handlers with :func:`json_arg`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from slack_sandbox.block_rules import Problem
from slack_sandbox.core import Core
from slack_sandbox.stalls import Stall

Handler = Callable[[Core, dict[str, Any]], dict[str, Any]]
"""A Web API method: ``(core, args) -> Slack's JSON answer``."""
APP_TOKEN_METHODS = frozenset({"apps.connections.open"})
"""Methods called with the app-level token (``xapp-…``), not the bot token."""
SCOPES_HEADER = "x-oauth-scopes"
"""Slack's answer header listing the calling token's scopes."""


class BadArgument(Exception):
    """An argument could not be decoded; the message is Slack's error code."""


def json_arg(args: dict[str, Any], key: str, *, error: str) -> Any:
    """Return ``args[key]`` decoded from JSON when it arrived as a string.

    Raises:
        BadArgument: The string is not JSON (``error`` is the Slack error code).
    """
    value = args.get(key)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError as e:
            raise BadArgument(error) from e
    return value


def flag(args: dict[str, Any], key: str) -> bool:
    """Return a boolean argument sent as JSON ``true`` or form ``"true"``/``"1"``."""
    value = args.get(key)
    return value is True or (isinstance(value, str) and value.lower() in ("true", "1"))


def refusal(
    core: Core, where: str, error: str, problems: list[Problem] | None = None
) -> dict[str, Any]:
    """Return Slack's ``ok: false`` answer and record the bot's violation."""
    core.violate(where, problems or [error])
    answer: dict[str, Any] = {"ok": False, "error": error}
    if problems:
        answer["response_metadata"] = {"messages": [p.slack_message() for p in problems]}
    return answer


async def read_args(request: web.Request) -> dict[str, Any] | None:
    """Return the call's arguments (query, then body); None if a JSON body is malformed."""
    args: dict[str, Any] = dict(request.query)
    if request.method != "POST" or not request.can_read_body:
        return args
    if request.content_type == "application/json":
        try:
            body = json.loads(await request.text() or "{}")
        except ValueError:
            return None
        if not isinstance(body, dict):
            return None
        return args | body
    form = await request.post()
    return args | {k: v for k, v in form.items() if isinstance(v, str)}


def api_routes(core: Core, methods: dict[str, Handler]) -> list[web.RouteDef]:
    """Return the routes of ``GET``/``POST /api/{method}`` answering with ``methods``."""

    async def handle(request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args = await read_args(request)
        if args is None:
            return _answer(core, method, {}, {"ok": False, "error": "invalid_json"})
        token = args.pop("token", None)
        auth = request.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            token = auth.removeprefix("Bearer ").strip()
        failure = core.take_failure(method)
        if failure is not None:
            return _injected(
                core, method, args, failure.status, failure.retry_after_s, failure.error
            )
        if method in APP_TOKEN_METHODS:
            if token is None or token != core.app_token:
                # Slack tells a known token of the wrong kind from an unknown one.
                wrong_kind = token is not None and token in core.tokens
                error = "not_allowed_token_type" if wrong_kind else "invalid_auth"
                return _answer(core, method, args, {"ok": False, "error": error})
            team = core
        else:
            found = core.tokens.get(token or "")
            if found is None:
                if token is not None and token == core.app_token:
                    error = "not_allowed_token_type"
                else:
                    error = "token_revoked" if token in core.revoked else "invalid_auth"
                return _answer(core, method, args, {"ok": False, "error": error})
            team = found  # a token works in its own workspace only: the call is answered there
        handler = methods.get(method)
        if handler is None:
            return _answer(team, method, args, {"ok": False, "error": "unknown_method"})
        await team.slowness.delay()
        stall = team.slowness.take_stall(method, args)
        if stall is not None and not stall.applied:
            await _held(team, stall)  # lost on the way: never applied
            return _injected(team, method, args, 500, 0)
        try:
            result = handler(team, args)
        except BadArgument as e:
            result = refusal(team, method, str(e))
        if stall is not None and stall.applied:
            await _held(team, stall)
            if stall.answer_status is not None:  # acted on, the answer lost on the way
                return _injected(team, method, args, stall.answer_status, 0)
        scopes = team.scopes.get(token or "")
        return _answer(team, method, args, result, {SCOPES_HEADER: scopes} if scopes else {})

    return [web.post("/api/{method}", handle), web.get("/api/{method}", handle)]


async def _held(core: Core, stall: Stall) -> None:
    """Hold a call on ``stall`` until it is released."""
    core.held.append(stall)
    try:
        await stall.hold()
    finally:
        core.held.remove(stall)


def _answer(
    core: Core,
    method: str,
    args: dict[str, Any],
    result: dict[str, Any],
    headers: dict[str, str] | None = None,
) -> web.Response:
    call: dict[str, Any] = {
        "method": method,
        "args": args,
        "ok": bool(result.get("ok")),
        "team_id": core.workspace.team_id,
    }
    if not result.get("ok"):
        call["error"] = result.get("error")
    call["answered_at"] = time.monotonic()  # real time, for pacing checks
    core.calls.append(call)
    return web.json_response(result, headers=headers)


def _injected(
    core: Core,
    method: str,
    args: dict[str, Any],
    status: int,
    retry_after_s: int,
    error: str | None = None,
) -> web.Response:
    error = error or ("ratelimited" if status == 429 else "internal_error")
    core.calls.append({"method": method, "args": args, "ok": False, "error": error})
    headers = {"Retry-After": str(retry_after_s)} if status == 429 else {}
    return web.json_response({"ok": False, "error": error}, status=status, headers=headers)

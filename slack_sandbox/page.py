"""The browser page: ``GET /``, its static files, its state feed and its actions.

The page polls ``GET /sandbox/state`` and acts through small JSON endpoints that call
the same :class:`~slack_sandbox.interactions.Interactions` the tests use. Bad input is
answered 4xx with ``{"ok": false, "error"}`` (422 with ``field_errors`` when Slack's
client would not submit a modal); an unreachable bot is a 502.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from slack_sandbox.core import Core
from slack_sandbox.errors import BotUnreachable, NotSubmitted, SandboxError
from slack_sandbox.interactions import Interactions
from slack_sandbox.state import BOT_ID, BOT_USER_ID

STATIC_DIR = Path(__file__).parent / "static"
Action = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def page_state(core: Core, request_url: str | None) -> dict[str, Any]:
    """Return everything the page shows, as JSON-ready data."""
    ws = core.workspace
    messages: dict[str, list[dict[str, Any]]] = {}
    for channel_id, posted in ws.messages.items():
        top: list[dict[str, Any]] = []
        by_ts: dict[str, dict[str, Any]] = {}
        for message in copy.deepcopy(posted):
            parent = by_ts.get(message.get("thread_ts", message["ts"]))
            if parent is not None and parent is not message:
                parent["replies"].append(message)
            else:
                message["replies"] = []
                by_ts[message["ts"]] = message
                top.append(message)
        messages[channel_id] = top
    return {
        "team_id": ws.team_id,
        "bot_user_id": BOT_USER_ID,
        "bot_id": BOT_ID,
        "request_url": request_url,
        "users": [{"id": u, "name": n} for u, n in ws.users.items()],
        "channels": [{"id": c, "name": n} for c, n in ws.channels.items()],
        "usergroups": [{"id": g.id, "handle": g.handle} for g in core.usergroups.groups.values()],
        "messages": messages,
        "ephemerals": copy.deepcopy(ws.ephemerals),
        "views": copy.deepcopy(core.modals.stacks),
        "violations": list(core.violations),
    }


def _fields(body: dict[str, Any], *names: str, optional: tuple[str, ...] = ()) -> dict[str, Any]:
    """Return the named string fields of ``body``.

    Raises:
        ValueError: A required field is missing or not a string.
    """
    out: dict[str, Any] = {}
    for name in names + optional:
        value = body.get(name)
        if value is None and name in optional:
            continue
        if not isinstance(value, str) or (not value and name not in optional):
            raise ValueError(f"'{name}' must be a non-empty string")
        out[name] = value
    return out


def page_routes(
    core: Core, interactions: Interactions, request_url: Callable[[], str | None]
) -> list[web.AbstractRouteDef]:
    """Return the routes of the page, its static files and its JSON endpoints."""

    async def index(request: web.Request) -> web.FileResponse:
        return web.FileResponse(STATIC_DIR / "index.html")

    async def state(request: web.Request) -> web.Response:
        return web.json_response(page_state(core, request_url()))

    async def command(body: dict[str, Any]) -> dict[str, Any]:
        f = _fields(body, "channel_id", "user_id", optional=("command", "text"))
        status, answer = await interactions.slash_command(
            command=f.get("command") or "/agent",
            text=f.get("text", ""),
            user_id=f["user_id"],
            channel_id=f["channel_id"],
        )
        return {"ok": True, "status": status, "body": answer}

    async def click(body: dict[str, Any]) -> dict[str, Any]:
        f = _fields(body, "channel_id", "ts", "action_id", "user_id", optional=("value",))
        status, answer = await interactions.click(**f)
        return {"ok": True, "status": status, "body": answer}

    async def submit(body: dict[str, Any]) -> dict[str, Any]:
        f = _fields(body, "view_id", "user_id")
        values = body.get("values") or {}
        if not isinstance(values, dict):
            raise ValueError("'values' must be an object of block_id -> value")
        status, answer = await interactions.submit_view(**f, values=values)
        return {"ok": True, "status": status, "body": answer}

    async def close(body: dict[str, Any]) -> dict[str, Any]:
        await interactions.close_view(**_fields(body, "view_id", "user_id"))
        return {"ok": True, "status": 200, "body": None}

    async def permalink(request: web.Request) -> web.Response:
        """``chat.getPermalink``'s link: show the page scrolled to that message."""
        channel_id, p = request.match_info["channel_id"], request.match_info["p"]
        raise web.HTTPFound(f"/#{channel_id}/{p}")

    async def favicon(_: web.Request) -> web.Response:
        return web.Response(status=204)  # no icon; an empty answer keeps the console clean

    return [
        web.get("/", index),
        web.get("/favicon.ico", favicon),
        web.get("/archives/{channel_id}/{p:p[0-9]+}", permalink),
        web.get("/sandbox/state", state),
        web.post("/sandbox/command", _json_endpoint(command)),
        web.post("/sandbox/click", _json_endpoint(click)),
        web.post("/sandbox/submit", _json_endpoint(submit)),
        web.post("/sandbox/close", _json_endpoint(close)),
        web.static("/static", STATIC_DIR),
    ]


def _json_endpoint(action: Action) -> Callable[[web.Request], Awaitable[web.Response]]:
    """Wrap ``action`` so bad input is a 4xx JSON answer, never a 500."""

    async def handle(request: web.Request) -> web.Response:
        try:
            body = json.loads(await request.text())
        except ValueError:
            return _error(400, "the body must be JSON")
        if not isinstance(body, dict):
            return _error(400, "the body must be a JSON object")
        try:
            return web.json_response(await action(body))
        except ValueError as e:
            return _error(400, str(e))
        except BotUnreachable as e:
            return _error(502, str(e))
        except NotSubmitted as e:
            answer = {"ok": False, "error": str(e), "field_errors": e.errors}
            return web.json_response(answer, status=422)
        except SandboxError as e:
            return _error(409, str(e))

    return handle


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"ok": False, "error": message}, status=status)

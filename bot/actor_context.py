"""Bolt middleware binding who acts (``user_id``, ``team_id``) to every log line of a
request from Slack (``agent_bridge.log_context``), whatever listener handles it.

Read from the body as Slack sends each kind: ``user.id`` and ``user.team_id`` (else
``team.id``) of ``block_actions`` and ``view_submission``; ``user_id`` and ``team_id``
of a slash command; ``event.user`` and the envelope's ``team_id`` of an Events API
``event_callback``. Nothing is trusted from it: the listeners authorize
(``bot.guard``); this only labels the log.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.response import BoltResponse

from agent_bridge import log_context


def actor_of_body(body: dict[str, Any]) -> tuple[str | None, str | None]:
    """``(user_id, team_id)`` of a Slack request body (parsed), each ``None`` if absent."""
    user = body.get("user")
    if isinstance(user, dict):
        team = body.get("team")
        team_id = user.get("team_id") or (team.get("id") if isinstance(team, dict) else None)
        return _text(user.get("id")), _text(team_id)
    event = body.get("event")
    if isinstance(event, dict):
        return _text(event.get("user")), _text(body.get("team_id"))
    return _text(body.get("user_id")), _text(body.get("team_id"))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


async def bind_actor(
    body: dict[str, Any], next: Callable[[], Awaitable[BoltResponse]]
) -> BoltResponse:
    """Bolt global middleware: bind the request's actor for the rest of its task
    (aiohttp runs each request in a task of its own; Bolt runs the listeners after the
    middleware, in that task or in tasks started from it, which inherit it)."""
    user_id, team_id = actor_of_body(body)
    log_context.bind_actor(user_id=user_id, team_id=team_id)
    return await next()

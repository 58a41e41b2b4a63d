"""The Slack app manifest: what an admin pastes into api.slack.com to create the app.

``render(url=...)`` gives it for an HTTP deployment (every request URL on ``url``, the
OAuth redirect URL too), ``render(socket_mode=True)`` for Socket Mode (``socket_mode_enabled``
and no request URL: Slack sends everything over the app's websocket). The repository's
``manifest.yml`` is ``render(url=PLACEHOLDER_URL)``; ``agent-bridge manifest`` prints
either form.

The format is Slack's "App manifest reference"
(https://api.slack.com/reference/manifests): ``display_information``, ``features``
(``app_home``, ``bot_user``, ``slash_commands``), ``oauth_config`` (``redirect_urls``,
``scopes.bot``) and ``settings`` (``event_subscriptions``, ``interactivity``,
``socket_mode_enabled``). ``tests/test_manifest.py`` checks that the bot scopes are
exactly those the code's Web API methods and events need.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import yaml

from bot.starts import COMMAND

PLACEHOLDER_URL = "https://<your-host>"
"""The base URL in the repository's ``manifest.yml``, replaced by the admin's host."""
EVENTS_PATH = "/slack/events"
"""Where Slack sends commands, events and interactions over HTTP (``bot.app`` serves it)."""
OAUTH_REDIRECT_PATH = "/slack/oauth_redirect"
"""Where Slack sends an installer back with the OAuth ``code`` (``oauth.v2.access``)."""

BOT_SCOPES: dict[str, str] = {
    "app_mentions:read": '"@agent-approvals <task>" starts a run like /agent',
    "channels:history": "find its own messages after a restart; read replies in run threads",
    "chat:write": "post the run's messages and cards, update and delete cards, private notes",
    "chat:write.public": "post cards into a public approvals channel without being invited",
    "commands": "the /agent slash command",
    "groups:history": "the same in private channels the bot was invited to",
    "im:history": "direct messages to the bot start runs; find and read their threads",
    "usergroups:read": "resolve the policy's approver and requester user groups",
    "users:read": "the requester's name on cards (users.info), shown without a mention",
}
"""Every bot scope the app asks for, and why (the admin's guide lists the same)."""

BOT_EVENTS: dict[str, str] = {
    "app_home_opened": "draw a reviewer's Home tab inbox when they open it",
    "app_mention": "a mention of the bot starts a run",
    "app_uninstalled": "forget the workspace's tokens and close its open cards",
    "message.channels": "a reply in a run's thread answers an ask_user call",
    "message.groups": "the same in private channels the bot was invited to",
    "message.im": "a direct message starts a run; a reply in its thread answers ask_user",
    "subteam_members_changed": "a user group's members changed: re-read its approvers at once",
    "tokens_revoked": "forget revoked tokens",
}
"""Every bot event the app subscribes to, and why."""


def manifest(*, url: str | None = None, socket_mode: bool = False) -> dict[str, Any]:
    """Return the manifest as data.

    Args:
        url: The public HTTPS base URL of the ``web`` process (``https://host``, no
            path); required unless ``socket_mode``.
        socket_mode: Socket Mode: no request or redirect URL, ``socket_mode_enabled``.

    Raises:
        ValueError: ``url`` with ``socket_mode``, neither, or ``url`` not ``https://``.
    """
    if socket_mode == (url is not None):
        raise ValueError("give either a URL (HTTP deployment) or socket_mode, not both")
    if url is not None and not is_base_url(url):
        raise ValueError(f"{url!r} is not https://HOST[:PORT] (Slack sends requests only to HTTPS)")
    base = url.rstrip("/") if url is not None else None
    at = {"url": base + EVENTS_PATH} if base else {}
    request_url = {"request_url": base + EVENTS_PATH} if base else {}
    command: dict[str, Any] = {
        "command": COMMAND,
        **at,
        "description": "Give the agent a task; risky tool calls come back here for approval",
        "usage_hint": "<task>",
        "should_escape": False,
    }
    oauth: dict[str, Any] = {"redirect_urls": [base + OAUTH_REDIRECT_PATH]} if base else {}
    return {
        "display_information": {
            "name": "Agent Approvals",
            "description": "Approve, edit or reject an AI agent's tool calls before they run.",
            "background_color": "#2c2d30",
        },
        "features": {
            "app_home": {
                "home_tab_enabled": True,
                "messages_tab_enabled": True,
                "messages_tab_read_only_enabled": False,
            },
            "bot_user": {"display_name": "agent-approvals", "always_online": True},
            "slash_commands": [command],
        },
        "oauth_config": {**oauth, "scopes": {"bot": sorted(BOT_SCOPES)}},
        "settings": {
            "event_subscriptions": {**request_url, "bot_events": sorted(BOT_EVENTS)},
            "interactivity": {"is_enabled": True, **request_url},
            "org_deploy_enabled": False,
            "socket_mode_enabled": socket_mode,
            "token_rotation_enabled": False,
        },
    }


def is_base_url(url: str) -> bool:
    """Whether ``url`` is an ``https://`` URL with a host and nothing after it but ``/``."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # a port that is not a number raises
    except ValueError:
        return False
    bare = parts.path in ("", "/") and not parts.query and not parts.fragment
    return parts.scheme == "https" and bool(parts.hostname) and bare and " " not in url


def render(*, url: str | None = None, socket_mode: bool = False) -> str:
    """Return the manifest as YAML, each scope and event with its reason as a comment.

    Args and errors as ``manifest``.
    """
    data = manifest(url=url, socket_mode=socket_mode)
    how = (
        "Socket Mode: no public URL; set SLACK_APP_TOKEN (an app-level token with"
        " connections:write) on the web process."
        if socket_mode
        else f"HTTP: Slack sends every request to {url}{EVENTS_PATH}."
    )
    lines = [
        "# Slack app manifest: https://api.slack.com/reference/manifests",
        '# Create the app at https://api.slack.com/apps -> "From an app manifest" and paste this.',
        f"# {how}",
        "# Printed by `agent-bridge manifest` (bot/manifest.py); do not edit by hand.",
    ]
    reasons = BOT_SCOPES | BOT_EVENTS
    for line in yaml.safe_dump(data, sort_keys=False, width=100).splitlines():
        item = line.strip().removeprefix("- ")
        is_item = line.lstrip().startswith("- ")
        lines.append(f"{line}  # {reasons[item]}" if is_item and item in reasons else line)
    return "\n".join(lines) + "\n"

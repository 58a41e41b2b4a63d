"""The Slack app manifest: complete for Slack's format, and asking for exactly the scopes
the code needs.

The Web API methods the product calls and the events it listens to are read from its
source (every ``AsyncWebClient`` method named in ``bot/`` and ``agent_bridge/``, every Bolt
``event``/``message``/``command`` listener); each method's and event's scopes come from
Slack's method and event reference pages (https://api.slack.com/methods,
https://api.slack.com/events), copied into the tables below. A new call or listener
without a row here fails the test until its scope is looked up and the manifest says it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from slack_sdk.web.async_client import AsyncWebClient

from bot.app import EVENTS_PATH
from bot.manifest import (
    BOT_EVENTS,
    BOT_SCOPES,
    OAUTH_REDIRECT_PATH,
    PLACEHOLDER_URL,
    manifest,
    render,
)
from bot.starts import COMMAND

REPO = Path(__file__).resolve().parent.parent
SOURCES = [REPO / "bot", REPO / "agent_bridge"]

HISTORY = frozenset({"channels:history", "groups:history", "im:history"})
"""``conversations.history``/``.replies`` need the history scope of each conversation
type read: the product works in public and private channels and in direct messages
(runs do not start in group DMs, so no ``mpim:history``)."""

METHOD_SCOPES: dict[str, frozenset[str]] = {
    "auth.test": frozenset(),
    "chat.delete": frozenset({"chat:write"}),
    "chat.getPermalink": frozenset(),
    # chat:write.public: posting into a public channel the bot was not invited to (the
    # policy's approvals channel; README, "Who decides", step 2).
    "chat.postMessage": frozenset({"chat:write", "chat:write.public"}),
    "chat.postEphemeral": frozenset({"chat:write"}),
    "chat.update": frozenset({"chat:write"}),
    "conversations.history": HISTORY,
    "conversations.replies": HISTORY,
    "oauth.v2.access": frozenset(),
    "usergroups.list": frozenset({"usergroups:read"}),
    "usergroups.users.list": frozenset({"usergroups:read"}),
    "users.info": frozenset({"users:read"}),
    "views.open": frozenset(),
    "views.publish": frozenset(),
    "views.push": frozenset(),
    "views.update": frozenset(),
}
"""Slack's "Required scopes" (bot token) of every method the product may call."""

EVENT_SCOPES: dict[str, frozenset[str]] = {
    "app_home_opened": frozenset(),
    "app_mention": frozenset({"app_mentions:read"}),
    "app_uninstalled": frozenset(),
    "message.channels": frozenset({"channels:history"}),
    "message.groups": frozenset({"groups:history"}),
    "message.im": frozenset({"im:history"}),
    "subteam_members_changed": frozenset({"usergroups:read"}),
    "tokens_revoked": frozenset(),
}
"""Slack's "Required scopes" of every event the product may subscribe to."""

PLANNED_METHODS = frozenset({"oauth.v2.access"})
"""Methods called that the source does not name: Bolt's OAuth flow exchanges the install's
code with ``oauth.v2.access`` (``bot.oauth_install``), not a call of ours."""
PLANNED_EVENTS = frozenset({"message.im", "message.channels", "message.groups"})
"""Events subscribed to that no listener names: ``bot.conversations`` listens to every
``message`` and tells DMs from thread replies itself (issue 12's item 6), in public and
private channels alike (a run started in a private channel has its thread there)."""

MESSAGE_TYPES = {"im": "message.im", "channel": "message.channels", "group": "message.groups"}
"""A ``message`` listener's ``channel_type`` -> its event subscription."""


def _parsed() -> tuple[ast.Module, ...]:
    return tuple(
        ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for root in SOURCES
        for path in sorted(root.rglob("*.py"))
    )


_TREES = _parsed()
"""Parsed once, when pytest imports this file (collection, before any test runs): on
CPython 3.11.7, ``ast.parse`` while another thread compiles (a sync tool an earlier
test's worker left running in an executor, typing's forward references) can fail with
``SystemError: AST constructor recursion depth mismatch`` (CPython gh-106905)."""


def source_trees() -> Iterator[ast.Module]:
    """The parsed modules of the product (``bot/``, ``agent_bridge/``)."""
    yield from _TREES


def web_api_methods() -> set[str]:
    """Every Web API method the product names: ``AsyncWebClient`` methods it refers to
    (``client.chat_postMessage`` is ``chat.postMessage``)."""
    client_methods = {
        name for name, value in vars(AsyncWebClient).items() if callable(value) and "_" in name
    }
    return {
        node.attr.replace("_", ".")
        for tree in source_trees()
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in client_methods
    }


def listeners() -> tuple[set[str], set[str]]:
    """``(events, commands)`` the product's Bolt listeners handle; a ``message`` listener
    is ``message`` (any type) or ``message.<type>`` with a ``channel_type``."""
    events: set[str] = set()
    commands: set[str] = set()
    for tree in source_trees():
        constants = module_constants(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            kind, first = node.func.attr, node.args[0] if node.args else None
            if isinstance(first, ast.Name) and first.id in constants:
                first = ast.Constant(constants[first.id])
            if kind == "command" and isinstance(first, ast.Constant):
                commands.add(str(first.value))
            elif kind == "event" and isinstance(first, ast.Constant):
                events.add(str(first.value))
            elif kind == "event" and isinstance(first, ast.Dict):
                spec = {
                    k.value: v.value
                    for k, v in zip(first.keys, first.values, strict=True)
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)
                }
                if spec.get("type") == "message" and spec.get("channel_type") in MESSAGE_TYPES:
                    events.add(MESSAGE_TYPES[str(spec["channel_type"])])
                elif "type" in spec:
                    events.add(str(spec["type"]))
            elif kind == "message" and ast.unparse(node.func.value) == "app":  # Bolt's app.message
                events.add("message")
    return events, commands


def module_constants(tree: ast.Module) -> dict[str, str]:
    """A module's top-level ``NAME = "text"`` assignments (``COMMAND = "/agent"``)."""
    return {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def repository_manifest() -> dict[str, Any]:
    loaded = yaml.safe_load((REPO / "manifest.yml").read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def urls(value: Any) -> Iterator[str]:
    """Every URL-valued field in a manifest, at any depth."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("url", "request_url"):
                yield item
            elif key == "redirect_urls":
                yield from item
            else:
                yield from urls(item)
    elif isinstance(value, list):
        for item in value:
            yield from urls(item)


def test_the_source_scan_finds_the_calls_and_listeners_it_should() -> None:
    """The scan itself works: methods and listeners known to be in the code are found
    (so an empty scan cannot pass the scope test)."""
    methods = web_api_methods()
    events, commands = listeners()
    assert {"chat.postMessage", "chat.update", "views.open", "auth.test"} <= methods
    assert {"usergroups.users.list", "conversations.replies", "users.info"} <= methods
    assert {"app_mention", "subteam_members_changed"} <= events
    assert commands == {COMMAND}


def test_every_method_and_event_the_code_uses_has_its_scopes_looked_up() -> None:
    methods = web_api_methods()
    events, _ = listeners()
    assert methods - METHOD_SCOPES.keys() == set(), "add these methods' scopes from Slack's docs"
    assert events - EVENT_SCOPES.keys() - {"message"} == set(), "add these events' scopes"


def test_the_bot_scopes_are_exactly_those_the_code_needs() -> None:
    """Declared scopes == scopes of (methods called + events handled + planned) + commands."""
    events, commands = listeners()
    methods = web_api_methods() | PLANNED_METHODS
    subscribed = (events - {"message"}) | PLANNED_EVENTS
    needed = set().union(*(METHOD_SCOPES[m] for m in methods))
    needed |= set().union(*(EVENT_SCOPES[e] for e in subscribed))
    if commands:
        needed.add("commands")
    declared = repository_manifest()["oauth_config"]["scopes"]["bot"]
    assert len(declared) == len(set(declared))
    assert set(declared) == needed, (
        f"declared but unused: {set(declared) - needed}; used but undeclared: "
        f"{needed - set(declared)}"
    )


def test_the_events_subscribed_are_exactly_those_listened_to_or_planned() -> None:
    events, _ = listeners()
    subscribed = set(repository_manifest()["settings"]["event_subscriptions"]["bot_events"])
    assert subscribed == (events - {"message"}) | PLANNED_EVENTS
    if "message" in events:  # a listener for any message hears every conversation a run's
        # thread can be in: a DM, a public channel, a private one (/agent works in each)
        assert set(MESSAGE_TYPES.values()) <= subscribed


def test_the_slash_commands_are_the_code_s() -> None:
    _, commands = listeners()
    declared = repository_manifest()["features"]["slash_commands"]
    assert {c["command"] for c in declared} == commands


def test_the_repository_manifest_is_the_rendered_one() -> None:
    """``manifest.yml`` is what ``agent-bridge manifest --url https://<your-host>`` prints,
    so the file and the command never drift apart."""
    assert (REPO / "manifest.yml").read_text(encoding="utf-8") == render(url=PLACEHOLDER_URL)
    assert set(BOT_SCOPES) == set(repository_manifest()["oauth_config"]["scopes"]["bot"])
    assert set(BOT_EVENTS) == set(
        repository_manifest()["settings"]["event_subscriptions"]["bot_events"]
    )


def test_the_http_manifest_has_every_part_slack_s_format_names() -> None:
    data = manifest(url="https://bridge.example.com")
    info = data["display_information"]
    assert info["name"] and len(info["name"]) <= 35 and len(info["description"]) <= 140
    home = data["features"]["app_home"]
    assert home == {
        "home_tab_enabled": True,
        "messages_tab_enabled": True,
        "messages_tab_read_only_enabled": False,
    }
    assert data["features"]["bot_user"]["display_name"] == "agent-approvals"
    events_url = "https://bridge.example.com" + EVENTS_PATH
    assert data["features"]["slash_commands"][0]["url"] == events_url
    assert data["settings"]["event_subscriptions"]["request_url"] == events_url
    assert data["settings"]["interactivity"] == {"is_enabled": True, "request_url": events_url}
    assert data["oauth_config"]["redirect_urls"] == [
        "https://bridge.example.com" + OAUTH_REDIRECT_PATH
    ]
    assert data["settings"]["socket_mode_enabled"] is False


def test_the_socket_mode_manifest_has_no_url() -> None:
    data = manifest(socket_mode=True)
    assert data["settings"]["socket_mode_enabled"] is True
    assert list(urls(data)) == []
    assert data["settings"]["interactivity"]["is_enabled"] is True
    assert data["oauth_config"]["scopes"] == manifest(url=PLACEHOLDER_URL)["oauth_config"]["scopes"]


@pytest.mark.parametrize(
    "url",
    ["http://bridge.example.com", "https://", "https://h.example.com/slack", "https://h:x", "h"],
)
def test_a_url_slack_would_refuse_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match="https://HOST"):
        manifest(url=url)


def agent_bridge_manifest(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "manifest", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_agent_bridge_manifest_prints_it_for_http_and_for_socket_mode() -> None:
    http = agent_bridge_manifest("--url", "https://bridge.example.com")
    assert http.returncode == 0, http.stderr
    assert yaml.safe_load(http.stdout) == manifest(url="https://bridge.example.com")
    socket = agent_bridge_manifest("--socket-mode")
    assert socket.returncode == 0, socket.stderr
    assert yaml.safe_load(socket.stdout) == manifest(socket_mode=True)
    refused = agent_bridge_manifest("--url", "http://bridge.example.com")
    assert refused.returncode == 2 and "https://HOST" in refused.stderr and not refused.stdout

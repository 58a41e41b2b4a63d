"""Interaction payloads exactly as Slack sends them to an app's request URL.

Pure builders: no I/O, no clock. Slash commands are flat form fields; interactions are
one ``payload`` form field holding JSON (see Slack's "Interactivity" reference). Events
API deliveries are in :mod:`slack_sandbox.event_payloads`, modal state values in
:mod:`slack_sandbox.view_state`; both are re-exported here.

Where people come from: ``user.team_id`` is always the actor's home team. A click's
``team`` is the workspace the message lives in (the sandbox's), as Slack sends it in a
Slack Connect channel; a modal's submission and a slash command carry the actor's own
team, and the view's ``app_installed_team_id`` names the workspace the app is installed
in. ``enterprise`` and ``team.enterprise_id`` follow the payload's team.
"""

from __future__ import annotations

import copy
from typing import Any

from slack_sandbox.event_payloads import VERIFICATION_TOKEN, app_mention_payload
from slack_sandbox.modals import public_view
from slack_sandbox.state import APP_ID, TEAM_DOMAIN
from slack_sandbox.view_state import client_side_errors, state_values

__all__ = [
    "TEAM_DOMAIN",
    "VERIFICATION_TOKEN",
    "app_mention_payload",
    "block_actions_payload",
    "client_side_errors",
    "slash_command_fields",
    "state_values",
    "view_closed_payload",
    "view_submission_payload",
]


def slash_command_fields(
    *,
    team_id: str,
    channel_id: str,
    channel_name: str,
    user_id: str,
    user_name: str,
    command: str,
    text: str,
    response_url: str,
    trigger_id: str,
    team_domain: str = TEAM_DOMAIN,
    enterprise_id: str | None = None,
    enterprise_name: str | None = None,
) -> dict[str, str]:
    """Return the form fields of a slash command run by a person of team ``team_id``.

    ``enterprise_id`` and ``enterprise_name`` are sent only when the team is in an org.
    """
    org = {} if enterprise_id is None else {"enterprise_id": enterprise_id}
    if enterprise_id is not None:
        org["enterprise_name"] = enterprise_name or enterprise_id.lower()
    return {
        "token": VERIFICATION_TOKEN,
        "team_id": team_id,
        "team_domain": team_domain,
        **org,
        "channel_id": channel_id,
        "channel_name": channel_name,
        "user_id": user_id,
        "user_name": user_name,
        "command": command,
        "text": text,
        "api_app_id": APP_ID,
        "is_enterprise_install": "false",
        "response_url": response_url,
        "trigger_id": trigger_id,
    }


def _user(user_id: str, user_name: str, team_id: str) -> dict[str, str]:
    return {"id": user_id, "username": user_name, "name": user_name, "team_id": team_id}


def _team(
    team_id: str, domain: str, enterprise_id: str | None, enterprise_name: str | None
) -> dict[str, Any]:
    """Return ``{"team": ..., "enterprise": ...}`` of a payload: Grid adds the org to both."""
    if enterprise_id is None:
        return {"team": {"id": team_id, "domain": domain}, "enterprise": None}
    name = enterprise_name or enterprise_id.lower()
    return {
        "team": {
            "id": team_id,
            "domain": domain,
            "enterprise_id": enterprise_id,
            "enterprise_name": name,
        },
        "enterprise": {"id": enterprise_id, "name": name},
    }


def block_actions_payload(
    *,
    team_id: str,
    user_id: str,
    user_name: str,
    channel_id: str,
    channel_name: str,
    message: dict[str, Any],
    is_ephemeral: bool,
    block: dict[str, Any],
    button: dict[str, Any],
    trigger_id: str,
    response_url: str,
    action_ts: str,
    user_team_id: str | None = None,
    enterprise_id: str | None = None,
    enterprise_name: str | None = None,
) -> dict[str, Any]:
    """Return the ``block_actions`` payload of a click on ``button`` in ``message``.

    ``team_id`` (and its org) is the workspace of the message; ``user_team_id`` the
    clicker's home team (``team_id`` when None).
    """
    team = _team(team_id, TEAM_DOMAIN, enterprise_id, enterprise_name)
    payload: dict[str, Any] = {
        "type": "block_actions",
        "user": _user(user_id, user_name, user_team_id or team_id),
        "api_app_id": APP_ID,
        "token": VERIFICATION_TOKEN,
        "container": {
            "type": "message",
            "message_ts": message["ts"],
            "channel_id": channel_id,
            "is_ephemeral": is_ephemeral,
        },
        "trigger_id": trigger_id,
        **team,
        "is_enterprise_install": False,
        "channel": {"id": channel_id, "name": channel_name},
        "state": {"values": {}},
        "response_url": response_url,
        "actions": [
            {
                "action_id": button["action_id"],
                "block_id": block["block_id"],
                "text": copy.deepcopy(button.get("text")),
                "value": button.get("value"),
                "type": "button",
                "action_ts": action_ts,
            }
        ],
    }
    if button.get("style"):
        payload["actions"][0]["style"] = button["style"]
    if "value" not in button:
        del payload["actions"][0]["value"]
    if not is_ephemeral:  # Slack omits the message of an ephemeral
        message = copy.deepcopy(message)
        message.pop("channel", None)
        payload["message"] = message
        if "thread_ts" in message:
            payload["container"]["thread_ts"] = message["thread_ts"]
    return payload


def view_submission_payload(
    *,
    team_id: str,
    user_id: str,
    user_name: str,
    view: dict[str, Any],
    values: dict[str, Any],
    trigger_id: str,
    team_domain: str = TEAM_DOMAIN,
    enterprise_id: str | None = None,
    enterprise_name: str | None = None,
) -> dict[str, Any]:
    """Return the ``view_submission`` payload of ``view`` with state ``values``.

    ``team_id`` (and its org) is the submitter's home team.
    """
    sent = public_view(view)
    sent["state"] = {"values": values}
    team = _team(team_id, team_domain, enterprise_id, enterprise_name)
    return {
        "type": "view_submission",
        "team": team["team"],
        "user": _user(user_id, user_name, team_id),
        "api_app_id": APP_ID,
        "token": VERIFICATION_TOKEN,
        "trigger_id": trigger_id,
        "view": sent,
        "response_urls": [],
        "is_enterprise_install": False,
        "enterprise": team["enterprise"],
    }


def view_closed_payload(
    *,
    team_id: str,
    user_id: str,
    user_name: str,
    view: dict[str, Any],
    is_cleared: bool,
    team_domain: str = TEAM_DOMAIN,
    enterprise_id: str | None = None,
    enterprise_name: str | None = None,
) -> dict[str, Any]:
    """Return the ``view_closed`` payload sent when a person of ``team_id`` dismisses a modal."""
    team = _team(team_id, team_domain, enterprise_id, enterprise_name)
    return {
        "type": "view_closed",
        "team": team["team"],
        "user": _user(user_id, user_name, team_id),
        "api_app_id": APP_ID,
        "token": VERIFICATION_TOKEN,
        "view": public_view(view),
        "is_cleared": is_cleared,
        "is_enterprise_install": False,
        "enterprise": team["enterprise"],
    }


def home_block_actions_payload(
    *,
    team_id: str,
    user_id: str,
    user_name: str,
    view: dict[str, Any],
    block: dict[str, Any],
    button: dict[str, Any],
    trigger_id: str,
    action_ts: str,
    user_team_id: str | None = None,
    enterprise_id: str | None = None,
    enterprise_name: str | None = None,
) -> dict[str, Any]:
    """Return the ``block_actions`` payload of a click on ``button`` in ``user_id``'s
    App Home ``view``: the ``container`` is the view, and there is no channel, message
    or ``response_url`` (https://docs.slack.dev/reference/interaction-payloads/block_actions-payload).
    """
    team = _team(team_id, TEAM_DOMAIN, enterprise_id, enterprise_name)
    action: dict[str, Any] = {
        "action_id": button["action_id"],
        "block_id": block["block_id"],
        "text": copy.deepcopy(button.get("text")),
        "type": "button",
        "action_ts": action_ts,
    }
    if "value" in button:
        action["value"] = button["value"]
    if button.get("style"):
        action["style"] = button["style"]
    return {
        "type": "block_actions",
        "user": _user(user_id, user_name, user_team_id or team_id),
        "api_app_id": APP_ID,
        "token": VERIFICATION_TOKEN,
        "container": {"type": "view", "view_id": view["id"]},
        "trigger_id": trigger_id,
        **team,
        "is_enterprise_install": False,
        "view": copy.deepcopy(view),
        "actions": [action],
        "state": {"values": {}},
    }

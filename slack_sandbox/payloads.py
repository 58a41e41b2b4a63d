"""Interaction payloads exactly as Slack sends them to an app's request URL.

Pure builders: no I/O, no clock. Slash commands are flat form fields; interactions are
one ``payload`` form field holding JSON (see Slack's "Interactivity" reference); Events
API deliveries are JSON bodies.
"""

from __future__ import annotations

import copy
from typing import Any

from slack_sandbox.errors import SandboxError
from slack_sandbox.modals import public_view
from slack_sandbox.state import APP_ID, BOT_USER_ID
from slack_sandbox.validation import input_blocks

VERIFICATION_TOKEN = "sandbox-verification-token"
"""The deprecated ``token`` field every payload still carries."""
TEAM_DOMAIN = "sandbox"


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
) -> dict[str, str]:
    """Return the form fields of a slash command invocation."""
    return {
        "token": VERIFICATION_TOKEN,
        "team_id": team_id,
        "team_domain": TEAM_DOMAIN,
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
) -> dict[str, Any]:
    """Return the ``block_actions`` payload of a click on ``button`` in ``message``."""
    payload: dict[str, Any] = {
        "type": "block_actions",
        "user": _user(user_id, user_name, team_id),
        "api_app_id": APP_ID,
        "token": VERIFICATION_TOKEN,
        "container": {
            "type": "message",
            "message_ts": message["ts"],
            "channel_id": channel_id,
            "is_ephemeral": is_ephemeral,
        },
        "trigger_id": trigger_id,
        "team": {"id": team_id, "domain": TEAM_DOMAIN},
        "enterprise": None,
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
) -> dict[str, Any]:
    """Return the ``view_submission`` payload of ``view`` with state ``values``."""
    sent = public_view(view)
    sent["state"] = {"values": values}
    return {
        "type": "view_submission",
        "team": {"id": team_id, "domain": TEAM_DOMAIN},
        "user": _user(user_id, user_name, team_id),
        "api_app_id": APP_ID,
        "token": VERIFICATION_TOKEN,
        "trigger_id": trigger_id,
        "view": sent,
        "response_urls": [],
        "is_enterprise_install": False,
        "enterprise": None,
    }


def view_closed_payload(
    *, team_id: str, user_id: str, user_name: str, view: dict[str, Any], is_cleared: bool
) -> dict[str, Any]:
    """Return the ``view_closed`` payload sent when a user dismisses a modal."""
    return {
        "type": "view_closed",
        "team": {"id": team_id, "domain": TEAM_DOMAIN},
        "user": _user(user_id, user_name, team_id),
        "api_app_id": APP_ID,
        "token": VERIFICATION_TOKEN,
        "view": public_view(view),
        "is_cleared": is_cleared,
        "is_enterprise_install": False,
        "enterprise": None,
    }


def app_mention_payload(
    *,
    team_id: str,
    event_id: str,
    event_time: int,
    user_id: str,
    channel_id: str,
    text: str,
    ts: str,
) -> dict[str, Any]:
    """Return the Events API ``event_callback`` of an ``app_mention`` of the bot.

    Slack posts it as JSON (not form-encoded); a retry carries the same ``event_id``.
    The sandbox does not deliver events itself: tests post this with ``post_signed``.
    """
    return {
        "token": VERIFICATION_TOKEN,
        "team_id": team_id,
        "api_app_id": APP_ID,
        "event": {
            "type": "app_mention",
            "user": user_id,
            "text": text,
            "ts": ts,
            "channel": channel_id,
            "event_ts": ts,
        },
        "type": "event_callback",
        "event_id": event_id,
        "event_time": event_time,
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": team_id,
                "user_id": BOT_USER_ID,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": False,
    }


def state_values(view: dict[str, Any], given: dict[str, Any] | None) -> dict[str, Any]:
    """Return ``view.state.values`` for a submission, filling inputs not in ``given``.

    An input not in ``given`` keeps what the modal shows: the values of the last
    submission if the view stayed open (``response_action: errors``), else its initial
    value.

    Args:
        view: The stored view.
        given: ``block_id -> raw value``: a ``str`` for plain_text_input/number_input,
            the option ``value`` for static_select/radio_buttons, a list of option
            values for checkboxes; ``None`` or ``""`` for an empty input.

    Raises:
        SandboxError: A ``block_id`` is not an input block of the view, or a value is
            not one of its options.
    """
    inputs = input_blocks(view)
    given = dict(given or {})
    unknown = sorted(set(given) - set(inputs))
    if unknown:
        raise SandboxError(
            f"view {view['id']} has no input blocks {unknown}; it has {sorted(inputs)}"
        )
    shown = view.get("state", {}).get("values", {})
    values: dict[str, Any] = {}
    for block_id, block in inputs.items():
        element = block["element"]
        action_id = element["action_id"]
        if block_id in given:
            state = _state_value(element, given[block_id], block_id)
        elif action_id in shown.get(block_id, {}):
            state = copy.deepcopy(shown[block_id][action_id])
        else:
            state = _state_value(element, _initial(element), block_id)
        values[block_id] = {action_id: state}
    return values


def _initial(element: dict[str, Any]) -> Any:
    if element["type"] in ("plain_text_input", "number_input"):
        return element.get("initial_value")
    if element["type"] == "checkboxes":
        return [o["value"] for o in element.get("initial_options") or []]
    option = element.get("initial_option")
    return option["value"] if option else None


def _state_value(element: dict[str, Any], raw: Any, block_id: str) -> dict[str, Any]:
    kind = element["type"]
    if kind in ("plain_text_input", "number_input"):
        if raw is not None and not isinstance(raw, str | int | float):
            raise SandboxError(f"{block_id}: a {kind} value must be a string")
        return {"type": kind, "value": None if raw in (None, "") else str(raw)}
    options = {o["value"]: o for o in element.get("options") or []}
    if kind == "checkboxes":
        chosen = [raw] if isinstance(raw, str) else list(raw or [])
        missing = [v for v in chosen if v not in options]
        if missing:
            raise SandboxError(f"{block_id}: {missing} are not options ({sorted(options)})")
        return {"type": kind, "selected_options": [copy.deepcopy(options[v]) for v in chosen]}
    if raw in (None, ""):
        return {"type": kind, "selected_option": None}
    if not isinstance(raw, str) or raw not in options:
        raise SandboxError(f"{block_id}: {raw!r} is not an option ({sorted(options)})")
    return {"type": kind, "selected_option": copy.deepcopy(options[raw])}


def client_side_errors(view: dict[str, Any], values: dict[str, Any]) -> dict[str, str]:
    """Return the errors Slack's client shows without submitting, by ``block_id``.

    Slack checks required inputs, ``min_length``/``max_length`` and number inputs in the
    client; a view failing them is never sent to the app.
    """
    errors: dict[str, str] = {}
    for block_id, block in input_blocks(view).items():
        element = block["element"]
        state = values[block_id][element["action_id"]]
        value = state.get("value")
        empty = not (value or state.get("selected_option") or state.get("selected_options"))
        if empty:
            if not block.get("optional", False):
                errors[block_id] = "Please complete this required field."
            continue
        if element["type"] == "plain_text_input":
            if len(value) < element.get("min_length", 0):
                errors[block_id] = f"Use at least {element['min_length']} characters."
            elif len(value) > element.get("max_length", 3_000):
                errors[block_id] = f"Use at most {element.get('max_length', 3_000)} characters."
        elif element["type"] == "number_input":
            errors |= _number_error(block_id, element, value)
    return errors


def _number_error(block_id: str, element: dict[str, Any], value: str) -> dict[str, str]:
    try:
        number = float(value) if element.get("is_decimal_allowed") else int(value)
    except ValueError:
        kind = "a number" if element.get("is_decimal_allowed") else "a whole number"
        return {block_id: f"Enter {kind}."}
    low, high = element.get("min_value"), element.get("max_value")
    if low is not None and number < float(low):
        return {block_id: f"Enter a number of at least {low}."}
    if high is not None and number > float(high):
        return {block_id: f"Enter a number of at most {high}."}
    return {}

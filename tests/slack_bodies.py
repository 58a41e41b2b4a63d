"""Raw Slack request bodies, for tests that post them by hand: stale, forged, tampered
or malformed requests, and Events API deliveries (which the sandbox does not send).

Every payload here is built by the sandbox's pure builders (``slack_sandbox.payloads``),
so it has the shape Slack sends; a test that needs one wrong builds it here and then
changes the built payload, rather than writing its own.
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any

from agent_bridge.models import ApprovalRequest
from bot import ids
from slack_sandbox import Sandbox
from slack_sandbox.payloads import (
    app_mention_payload,
    block_actions_payload,
    slash_command_fields,
    state_values,
    view_submission_payload,
)
from slack_sandbox.state import BOT_USER_ID, DEFAULT_CHANNELS, DEFAULT_USERS

TEAM_ID = "T0SANDBOX"
"""The sandbox's default team."""
TRIGGER_ID = "1700000000.1.hand-made"
"""Not issued by the sandbox: a modal opened with it would be refused."""
RESPONSE_URL = "https://hooks.slack.invalid/hand-made"
APPROVE = ids.decision_action_id("approve")
JSON = "application/json"
"""The content type of Events API deliveries (interactions are form-encoded)."""


def user_name(user_id: str) -> str:
    """The sandbox's name for ``user_id`` (as ``Sandbox`` names users it does not know)."""
    return DEFAULT_USERS.get(user_id, user_id.lower())


def click_payload(
    card: dict[str, Any], *, channel_id: str, action_id: str, value: str, user_id: str
) -> dict[str, Any]:
    """The ``block_actions`` payload of ``user_id`` clicking ``action_id`` (``value``)
    on ``card``, even if the card no longer shows that button: a client still showing
    an old card sends it, and so does a forger."""
    blocks = [b for b in card.get("blocks") or [] if b.get("type") == "actions"]
    block = blocks[0] if blocks else {"type": "actions", "block_id": "decision"}
    shown = [
        e
        for b in blocks
        for e in b.get("elements") or []
        if e.get("action_id") == action_id and e.get("value") == value
    ]
    button = shown[0] if shown else {"type": "button", "action_id": action_id, "value": value}
    return block_actions_payload(
        team_id=TEAM_ID,
        user_id=user_id,
        user_name=user_name(user_id),
        channel_id=channel_id,
        channel_name=DEFAULT_CHANNELS.get(channel_id, channel_id),
        message=card,
        is_ephemeral=False,
        block=block,
        button=button,
        trigger_id=TRIGGER_ID,
        response_url=RESPONSE_URL,
        action_ts=f"{time.time():.6f}",
    )


def card_click(
    sandbox: Sandbox, request: ApprovalRequest, action_id: str, *, user_id: str
) -> dict[str, Any]:
    """``click_payload`` on ``request``'s card as the sandbox shows it now (the button's
    value as the card has it: the request and the call's version)."""
    assert request.channel_id and request.message_ts
    message = sandbox.message(request.channel_id, request.message_ts)
    values = [
        element.get("value")
        for block in message.get("blocks") or []
        for element in [block.get("accessory"), *(block.get("elements") or [])]
        if isinstance(element, dict) and element.get("action_id") == action_id
    ]
    return click_payload(
        message,
        channel_id=request.channel_id,
        action_id=action_id,
        value=str(values[0]) if values else request.request_id,
        user_id=user_id,
    )


def submission_payload(
    view: dict[str, Any], *, user_id: str, values: dict[str, Any]
) -> dict[str, Any]:
    """The ``view_submission`` payload of ``view`` (as ``Sandbox.open_views`` shows it)
    with ``values`` by ``block_id`` (raw, as for ``Sandbox.submit_view``)."""
    return view_submission_payload(
        team_id=TEAM_ID,
        user_id=user_id,
        user_name=user_name(user_id),
        view=view,
        values=state_values(view, values),
        trigger_id=TRIGGER_ID,
    )


def command_fields(*, command: str, text: str, user_id: str, channel_id: str) -> dict[str, str]:
    """The form fields of ``command text`` run by ``user_id`` in ``channel_id``."""
    return slash_command_fields(
        team_id=TEAM_ID,
        channel_id=channel_id,
        channel_name=DEFAULT_CHANNELS.get(channel_id, channel_id),
        user_id=user_id,
        user_name=user_name(user_id),
        command=command,
        text=text,
        response_url=RESPONSE_URL,
        trigger_id=TRIGGER_ID,
    )


def mention_payload(
    *, event_id: str, task: str, user_id: str, channel_id: str, ts: str = "1700000000.000100"
) -> dict[str, Any]:
    """The ``event_callback`` of ``user_id`` writing ``@agent task`` in ``channel_id``."""
    return app_mention_payload(
        team_id=TEAM_ID,
        event_id=event_id,
        event_time=int(float(ts)),
        user_id=user_id,
        channel_id=channel_id,
        text=f"<@{BOT_USER_ID}> {task}",
        ts=ts,
    )


def changed(payload: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A copy of ``payload`` with top-level ``fields`` replaced: how a test breaks one."""
    return copy.deepcopy(payload) | fields


def only(payload: dict[str, Any], *fields: str) -> dict[str, Any]:
    """A copy of ``payload`` with only its top-level ``fields``: a truncated one."""
    return {k: copy.deepcopy(v) for k, v in payload.items() if k in fields}


def json_body(payload: dict[str, Any]) -> bytes:
    """An Events API ``payload`` as Slack posts it: a JSON body (send it as ``JSON``)."""
    return json.dumps(payload).encode()


def sample_click() -> dict[str, Any]:
    """A well-formed click on a one-button card, for tests that break it on purpose."""
    card = {
        "ts": "1700000000.000200",
        "text": "Approval needed",
        "blocks": [
            {
                "type": "actions",
                "block_id": "decision",
                "elements": [
                    {
                        "type": "button",
                        "action_id": APPROVE,
                        "value": "req-1",
                        "text": {"type": "plain_text", "text": "Approve"},
                    }
                ],
            }
        ],
    }
    return click_payload(
        card, channel_id="C0GENERAL", action_id=APPROVE, value="req-1", user_id="U0DBA"
    )


def sample_submission() -> dict[str, Any]:
    """A well-formed submission of a modal without inputs, for tests that break it."""
    view = {
        "id": "V0SBX00001",
        "type": "modal",
        "callback_id": ids.REJECT_CALLBACK,
        "private_metadata": "req-1",
        "title": {"type": "plain_text", "text": "Reject"},
        "blocks": [],
    }
    return submission_payload(view, user_id="U0DBA", values={})

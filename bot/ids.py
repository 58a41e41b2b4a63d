"""Every Slack ``action_id``, ``callback_id`` and ``block_id`` the bot uses, in one place.

Listeners match on these and renderers emit them; nothing else spells them. A decision
button's ``value`` carries only ``<request_id>.<version>`` (the call's version the card
shows, so a click on an outdated card is refused), "View full arguments" only the
``request_id``, a modal's ``private_metadata`` only its opened view's key (Slack caps a
button value at 2,000 characters, so never the args).
"""

from __future__ import annotations

from agent_bridge.models import DecisionType

ACTION_PREFIX = "approval:"
"""Prefix of the decision buttons' ``action_id``: ``approval:approve`` and so on."""

VIEW_ARGS_ACTION = "view_args"
"""Button that opens a read-only modal with the full arguments of a shortened card."""

EDIT_CALLBACK = "approval_edit"
REJECT_CALLBACK = "approval_reject"
RESPOND_CALLBACK = "approval_respond"

REASON_BLOCK = "reason"
REASON_ACTION = "reason_input"
ANSWER_BLOCK = "answer"
ANSWER_ACTION = "answer_input"
ARG_BLOCK_PREFIX = "arg:"
"""Edit-modal input blocks are ``arg:<argument name>``; field errors are keyed by it."""
ARG_ACTION = "value"
ARGS_JSON_BLOCK = "args_json"
"""Block of the single JSON input used when a form cannot be typed."""


VALUE_SEPARATOR = "."
"""Between ``request_id`` and version in a decision button's value (neither holds one)."""
CALLBACK_DECISIONS = {EDIT_CALLBACK: "edit", REJECT_CALLBACK: "reject", RESPOND_CALLBACK: "respond"}
"""Which decision each modal's submission makes."""


def decision_value(request_id: str, version: str) -> str:
    """Return a decision button's ``value``."""
    return f"{request_id}{VALUE_SEPARATOR}{version}"


def parse_decision_value(value: str) -> tuple[str, str]:
    """Return ``(request_id, version)`` of a decision button's ``value`` (version ``""``
    when the card predates versions: the click is then refused as outdated)."""
    request_id, _, version = value.partition(VALUE_SEPARATOR)
    return request_id, version


def decision_action_id(decision: DecisionType) -> str:
    """Return the ``action_id`` of the button for ``decision`` (``approval:<type>``)."""
    return f"{ACTION_PREFIX}{decision}"


def arg_block_id(name: str) -> str:
    """Return the edit-modal ``block_id`` for the argument ``name``."""
    return f"{ARG_BLOCK_PREFIX}{name}"


HOME_CALLBACK = "approval_home"
"""``callback_id`` of the App Home view (the reviewer's inbox)."""
HOME_METADATA_PREFIX = "home:"
"""A Home view's ``private_metadata`` is ``home:<user_id>``: whose inbox it is, so a
click in it is authorized for that user only (``bot.authorization``)."""


def home_metadata(user_id: str) -> str:
    """Return the ``private_metadata`` of ``user_id``'s Home view."""
    return f"{HOME_METADATA_PREFIX}{user_id}"


def home_owner(metadata: str) -> str | None:
    """Return the user a Home view's ``private_metadata`` names, or ``None``."""
    if not metadata.startswith(HOME_METADATA_PREFIX):
        return None
    return metadata.removeprefix(HOME_METADATA_PREFIX) or None

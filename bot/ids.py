"""Every Slack ``action_id``, ``callback_id`` and ``block_id`` the bot uses, in one place.

Listeners match on these and renderers emit them; nothing else spells them. Button
``value`` and modal ``private_metadata`` carry only an approval request's
``request_id`` (Slack caps a button value at 2,000 characters, so never the args).
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


def decision_action_id(decision: DecisionType) -> str:
    """Return the ``action_id`` of the button for ``decision`` (``approval:<type>``)."""
    return f"{ACTION_PREFIX}{decision}"


def arg_block_id(name: str) -> str:
    """Return the edit-modal ``block_id`` for the argument ``name``."""
    return f"{ARG_BLOCK_PREFIX}{name}"

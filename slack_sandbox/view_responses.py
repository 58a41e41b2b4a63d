"""Applying the bot's answer to a ``view_submission``, as Slack does.

An empty 200 closes the submitted view; ``{"response_action": "errors", "errors":
{block_id: message}}`` keeps it open and shows the messages under those inputs;
``update`` replaces it, ``push`` pushes a new view, ``clear`` closes the whole stack.
Slack refuses an answer it cannot apply (the modal shows "We had some trouble
connecting"), so such answers leave the view as it was and are recorded as violations.
"""

from __future__ import annotations

from typing import Any

from slack_sandbox.core import Core
from slack_sandbox.validation import check_view

RESPONSE_ACTIONS = ("errors", "update", "push", "clear")


def apply_view_response(
    core: Core, user_id: str, view: dict[str, Any], body: Any, *, where: str
) -> None:
    """Apply ``body`` (the bot's parsed answer, None if empty) to ``user_id``'s ``view``."""
    modals = core.modals
    if body is None or body == {}:
        modals.close(user_id, view["id"])
        return
    if not isinstance(body, dict):
        core.violate(where, ["the answer must be empty or a JSON object"])
        return
    action = body.get("response_action")
    if action not in RESPONSE_ACTIONS:
        core.violate(where, [f"unknown response_action {action!r}; use one of {RESPONSE_ACTIONS}"])
        return
    if action == "clear":
        modals.clear(user_id)
    elif action == "errors":
        problems = _errors_problems(view, body.get("errors"))
        if problems:
            core.violate(where, problems)
            return
        view["errors"] = dict(body["errors"])
    else:
        new = body.get("view")
        problems = [str(p) for p in check_view(new)]
        if problems or not isinstance(new, dict):
            core.violate(f"{where}, response_action {action}", problems)
            return
        if action == "update":
            modals.update(view, new)
        else:
            pushed, error = modals.push(user_id, new)
            if pushed is None:
                core.violate(where, [f"{error}: 3 views are open already"])


def _errors_problems(view: dict[str, Any], errors: Any) -> list[str]:
    """Check ``response_action: errors``: a non-empty map from input block IDs to text."""
    if not isinstance(errors, dict) or not errors:
        return ["response_action errors needs a non-empty 'errors' object"]
    inputs = {b.get("block_id") for b in view.get("blocks") or [] if b.get("type") == "input"}
    problems = []
    for block_id, message in errors.items():
        if block_id not in inputs:
            problems.append(f"errors names {block_id!r}, which is not an input block of the view")
        if not isinstance(message, str) or not message:
            problems.append(f"the error of {block_id!r} must be a non-empty string")
    return problems

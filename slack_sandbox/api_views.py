"""The ``views.*`` Web API methods: open, push and update modals."""

from __future__ import annotations

from typing import Any

from slack_sandbox.core import Core
from slack_sandbox.modals import TRIGGER_TTL_S, public_view
from slack_sandbox.validation import check_view
from slack_sandbox.web_api import Handler, json_arg, refusal


def _view(core: Core, where: str, args: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
    """Return ``(view, None)`` if the ``view`` argument is valid, else ``(None, refusal)``."""
    view = json_arg(args, "view", error="invalid_arguments")
    if view is None:
        return None, refusal(core, where, "invalid_arguments")
    problems = check_view(view)
    if problems:
        return None, refusal(core, where, "invalid_arguments", problems)
    return view, None


def _trigger_user(
    core: Core, where: str, args: dict[str, Any]
) -> tuple[str | None, dict[str, Any] | None]:
    """Redeem ``trigger_id``; return ``(user_id, None)`` or ``(None, refusal)``."""
    user_id, error = core.modals.redeem(args.get("trigger_id"))
    if error is None:
        return user_id, None
    why = {
        "invalid_trigger_id": "the trigger_id was not issued by Slack",
        "expired_trigger_id": f"the trigger_id is more than {TRIGGER_TTL_S:g} s old",
        "exchanged_trigger_id": "the trigger_id was already used",
    }[error]
    return None, _refuse(core, where, error, why)


def _refuse(core: Core, where: str, error: str, why: str) -> dict[str, Any]:
    """Return Slack's refusal ``error`` and record the violation, explained by ``why``."""
    core.violate(where, [f"{error}: {why}"])
    return {"ok": False, "error": error}


def views_open(core: Core, args: dict[str, Any]) -> dict[str, Any]:
    """``views.open``: open a modal with a fresh, unused ``trigger_id``."""
    view, refused = _view(core, "views.open", args)
    if refused:
        return refused
    user_id, refused = _trigger_user(core, "views.open", args)
    if refused or user_id is None:
        return refused or {"ok": False, "error": "invalid_trigger_id"}
    return {"ok": True, "view": public_view(core.modals.open(user_id, view))}


def views_push(core: Core, args: dict[str, Any]) -> dict[str, Any]:
    """``views.push``: push a modal on the stack of the trigger's user."""
    view, refused = _view(core, "views.push", args)
    if refused:
        return refused
    user_id, refused = _trigger_user(core, "views.push", args)
    if refused or user_id is None:
        return refused or {"ok": False, "error": "invalid_trigger_id"}
    stored, error = core.modals.push(user_id, view)
    if stored is None:
        return _refuse(core, "views.push", error or "push_limit_reached", "3 views are open")
    return {"ok": True, "view": public_view(stored)}


def views_update(core: Core, args: dict[str, Any]) -> dict[str, Any]:
    """``views.update``: replace an open view, by ``view_id`` or ``external_id``."""
    view_id, external_id = args.get("view_id"), args.get("external_id")
    if not view_id and not external_id:
        return _refuse(core, "views.update", "invalid_arguments", "give view_id or external_id")
    found = core.modals.find(view_id=view_id, external_id=external_id)
    if found is None:
        return {"ok": False, "error": "not_found"}
    _, old = found
    view, refused = _view(core, f"views.update of {old['id']}", args)
    if refused:
        return refused
    if args.get("hash") and args["hash"] != old["hash"]:
        return {"ok": False, "error": "hash_conflict"}
    return {"ok": True, "view": public_view(core.modals.update(old, view))}


VIEWS_METHODS: dict[str, Handler] = {
    "views.open": views_open,
    "views.push": views_push,
    "views.update": views_update,
}

"""The ``views.publish`` Web API method: an app sets one user's App Home tab.

An app publishes one Home view per user (``views.publish`` with ``user_id``); no
trigger is needed, and publishing again replaces the view in place (same ``id``). A Home
view has ``type: "home"``, up to 100 blocks, and no title, submit or close
(https://docs.slack.dev/reference/methods/views.publish,
https://docs.slack.dev/surfaces/app-home). A click in it is a ``block_actions`` whose
``container`` is the view (``type: "view"``, ``view_id``), with no channel or message.
"""

from __future__ import annotations

from typing import Any

from slack_sandbox.block_rules import Problem
from slack_sandbox.core import Core
from slack_sandbox.validation import VIEW_MAX_BLOCKS, check_blocks
from slack_sandbox.web_api import Handler, json_arg, refusal

HOME_KEYS = frozenset({"type", "blocks", "private_metadata", "callback_id", "external_id"})
"""Keys an app may set on a Home view."""


def check_home_view(view: Any) -> list[Problem]:
    """Return every problem of a Home ``view`` an app publishes."""
    if not isinstance(view, dict):
        return [Problem("/view", "view must be an object")]
    problems = [Problem(f"/view/{k}", f"unknown field {k!r}") for k in view if k not in HOME_KEYS]
    if view.get("type") != "home":
        problems.append(Problem("/view/type", "type must be 'home'"))
    metadata = view.get("private_metadata", "")
    if not isinstance(metadata, str) or len(metadata) > 3000:
        problems.append(Problem("/view/private_metadata", "at most 3000 characters"))
    blocks = view.get("blocks")
    if not isinstance(blocks, list) or not blocks:
        problems.append(Problem("/view/blocks", "a view needs between 1 and 100 blocks"))
    else:
        problems += [
            Problem(f"/view{p.pointer}", p.message)
            for p in check_blocks(blocks, max_blocks=VIEW_MAX_BLOCKS)
        ]
    return problems


def views_publish(core: Core, args: dict[str, Any]) -> dict[str, Any]:
    """``views.publish``: set ``user_id``'s Home tab; ``hash`` guards against a race."""
    user_id = args.get("user_id")
    if not isinstance(user_id, str) or user_id not in core.workspace.people.persons:
        return {"ok": False, "error": "invalid_arguments"}
    view = json_arg(args, "view", error="invalid_arguments")
    problems = check_home_view(view)
    if problems:
        return refusal(core, f"views.publish for {user_id}", "invalid_arguments", problems)
    old = core.homes.views.get(user_id)
    if args.get("hash") and (old is None or args["hash"] != old["hash"]):
        return {"ok": False, "error": "hash_conflict"}
    return {"ok": True, "view": core.homes.publish(core.workspace, user_id, view)}


HOME_METHODS: dict[str, Handler] = {"views.publish": views_publish}

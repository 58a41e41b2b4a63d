"""The ``usergroups.*`` Web API methods the bot reads: the groups and their members.

With a workspace token (the sandbox's only kind) Slack ignores ``team_id``; a
disabled group is found only with ``include_disabled``.
"""

from __future__ import annotations

from typing import Any

from slack_sandbox.core import Core
from slack_sandbox.web_api import Handler, flag


def users_list(core: Core, args: dict[str, Any]) -> dict[str, Any]:
    """``usergroups.users.list``: the user IDs of one group."""
    group = core.usergroups.groups.get(str(args.get("usergroup") or ""))
    if group is None or not (group.enabled or flag(args, "include_disabled")):
        return {"ok": False, "error": "no_such_subteam"}
    return {"ok": True, "users": list(group.users)}


def groups_list(core: Core, args: dict[str, Any]) -> dict[str, Any]:
    """``usergroups.list``: every group of the team, optionally with users and counts."""
    shown = [
        group.as_slack(
            include_users=flag(args, "include_users"), include_count=flag(args, "include_count")
        )
        for group in core.usergroups.groups.values()
        if group.enabled or flag(args, "include_disabled")
    ]
    return {"ok": True, "usergroups": shown}


USERGROUP_METHODS: dict[str, Handler] = {
    "usergroups.users.list": users_list,
    "usergroups.list": groups_list,
}

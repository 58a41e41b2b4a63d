"""User groups (``S…`` IDs, ``@handle``) and the change of their members.

Slack tells an app subscribed to ``subteam_members_changed`` only the delta of an
existing group's members, never the creation of a group.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from slack_sandbox.errors import SandboxError
from slack_sandbox.state import Clock

CREATED_BY = "USLACKBOT"


@dataclass
class Usergroup:
    """One user group of a team."""

    id: str
    handle: str
    team_id: str
    users: list[str]
    date_create: int
    date_update: int
    enabled: bool = True
    prefs: dict[str, list[str]] = field(default_factory=lambda: {"channels": [], "groups": []})

    def as_slack(self, *, include_users: bool, include_count: bool) -> dict[str, Any]:
        """Return the group as ``usergroups.list`` shows it."""
        shown: dict[str, Any] = {
            "id": self.id,
            "team_id": self.team_id,
            "is_usergroup": True,
            "is_subteam": True,
            "name": self.handle,
            "description": "",
            "handle": self.handle,
            "is_external": False,
            "date_create": self.date_create,
            "date_update": self.date_update,
            "date_delete": 0 if self.enabled else self.date_update,
            "auto_type": None,
            "created_by": CREATED_BY,
            "updated_by": CREATED_BY,
            "deleted_by": None,
            "prefs": {k: list(v) for k, v in self.prefs.items()},
        }
        if include_users:
            shown["users"] = list(self.users)
        if include_count:
            shown["user_count"] = len(self.users)
        return shown


@dataclass(frozen=True)
class MembersChange:
    """How an existing group's members changed (``subteam_members_changed``)."""

    group: Usergroup
    date_previous_update: int
    added: list[str]
    removed: list[str]


class Usergroups:
    """The user groups of one team.

    Args:
        team_id: The team the groups belong to.
        clock: Unix time (s) for ``date_create`` and ``date_update``.
    """

    def __init__(self, *, team_id: str, clock: Clock) -> None:
        self.team_id = team_id
        self.clock = clock
        self.groups: dict[str, Usergroup] = {}

    def set(self, group_id: str, handle: str, user_ids: list[str]) -> MembersChange | None:
        """Create or replace group ``group_id``; return the change of an existing one's members.

        Returns None when the group is new or its members are the same.

        Raises:
            SandboxError: ``group_id`` does not look like a user group ID (``S…``).
        """
        if not (group_id[:1] == "S" and group_id[1:].isalnum() and group_id.upper() == group_id):
            raise SandboxError(f"a user group ID looks like S0DBA, not {group_id!r}")
        users = list(dict.fromkeys(user_ids))
        now = int(self.clock())
        group = self.groups.get(group_id)
        if group is None:
            self.groups[group_id] = Usergroup(
                id=group_id,
                handle=handle.lstrip("@"),
                team_id=self.team_id,
                users=users,
                date_create=now,
                date_update=now,
            )
            return None
        added = [u for u in users if u not in group.users]
        removed = [u for u in group.users if u not in users]
        group.handle = handle.lstrip("@")
        previous, group.users = group.date_update, users
        if not added and not removed:
            return None
        group.date_update = now
        return MembersChange(
            group=group, date_previous_update=previous, added=added, removed=removed
        )

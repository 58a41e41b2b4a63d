"""Who is in a list of Slack users and user groups: the people a policy names.

A policy names users (``U…``/``W…``) and user groups (``S…``). Groups are resolved with
``usergroups.users.list`` through the gateway and cached per workspace for
``ttl_s`` (short: a removed DBA stops being one within a minute). Slack's
``subteam_members_changed`` event forgets a group at once (``forget``); each web
process keeps its own cache, so another process sees the change within ``ttl_s``.

It fails closed: if any group of a list cannot be read (Slack down, the group unknown,
the scope missing, or no answer before the request's own answer is due: a click's or a
submission's deadline, ``agent_bridge.deadline``), ``members`` says so and nobody is
authorized by that list.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from agent_bridge.deadline import time_left
from bot.errors import SlackCallError
from bot.slack_gateway import Slack

logger = logging.getLogger(__name__)

GROUP_TTL_S = 60.0
"""How long a user group's members are trusted without asking Slack again, seconds."""
TIMED_OUT = "timed_out"
"""Why a group is unresolved when Slack did not list it before the request's answer was
due (``agent_bridge.deadline``): nobody is authorized by it this time; the next click
asks again."""
ANSWER_MARGIN_S = 0.5
"""How long before a request's deadline a group read is cut, seconds: the refusal (an
audit event) is still recorded, and the reviewer told why, in time."""
UNKNOWN_GROUP_CODES = frozenset({"no_such_subteam"})
"""``usergroups.users.list`` errors that mean the group does not exist (a policy mistake,
not an outage)."""
ADMIN_CODES = frozenset(
    {
        "missing_scope",
        "not_allowed_token_type",
        "invalid_auth",
        "not_authed",
        "token_revoked",
        "token_expired",
        "account_inactive",
        "no_permission",
        "ekm_access_denied",
        "paid_teams_only",
        "not_installed",
    }
)
"""``usergroups.users.list`` errors (https://api.slack.com/methods/usergroups.users.list)
only an admin can clear: the app's scopes or token, the workspace's plan, the app not
installed. Any other failure may pass, and the clicker is asked to try again."""


def is_group(principal: str) -> bool:
    """Whether a policy ID is a user group (``S…``) rather than a user."""
    return principal.startswith("S")


@dataclass(frozen=True)
class Members:
    """The people a list names, once resolved.

    Attributes:
        users: Every user ID, the groups' members included.
        unresolved: Groups that could not be read; non-empty means nobody may be
            authorized by this list.
        unknown: Those of ``unresolved`` that Slack says do not exist.
        refused: See below.
    """

    users: frozenset[str]
    unresolved: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    refused: tuple[tuple[str, str], ...] = ()
    """``(group, Slack's error code)`` for those of ``unresolved`` Slack refused to list
    for a reason only an admin can clear (``ADMIN_CODES``: ``missing_scope``,
    ``invalid_auth``, ``paid_teams_only``...), groups it does not know aside: nobody is
    told to try again."""

    @property
    def resolved(self) -> bool:
        """Whether every group of the list was read."""
        return not self.unresolved


@dataclass(frozen=True)
class Unread:
    """Why Slack did not list a group."""

    code: str
    """Slack's error code, ``unreachable`` (no answer) or ``TIMED_OUT``."""
    lasting: bool
    """Whether asking again cannot help until an admin acts (``ADMIN_CODES``)."""


class Directory:
    """Resolves users and user groups, with a short cache.

    Args:
        slack: The Slack gateway (``usergroups.users.list``).
        ttl_s: How long a group's members are cached, seconds.
        clock: Monotonic seconds (tests pass their own to move past the TTL).
    """

    def __init__(
        self,
        *,
        slack: Slack,
        ttl_s: float = GROUP_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.slack = slack
        self.ttl_s = ttl_s
        self.clock = clock
        self._groups: dict[tuple[str | None, str], tuple[float, frozenset[str]]] = {}
        self._teams: dict[tuple[str | None, str], tuple[float, str | None]] = {}

    async def members(self, team_id: str | None, principals: Iterable[str]) -> Members:
        """Resolve ``principals`` (user and group IDs) in workspace ``team_id``.

        Returns:
            Their users; ``unresolved`` names the groups Slack would not list (never
            raised: a failure is an answer here, and the caller refuses).
        """
        users: set[str] = set()
        unresolved: list[str] = []
        unknown: list[str] = []
        refused: list[tuple[str, str]] = []
        for principal in principals:
            if not is_group(principal):
                users.add(principal)
                continue
            group = await self._group(team_id, principal)
            if isinstance(group, frozenset):
                users |= group
                continue
            unresolved.append(principal)
            if group.code in UNKNOWN_GROUP_CODES:
                unknown.append(principal)
            elif group.lasting:
                refused.append((principal, group.code))
        return Members(
            users=frozenset(users),
            unresolved=tuple(unresolved),
            unknown=tuple(unknown),
            refused=tuple(refused),
        )

    async def name_of(self, team_id: str | None, user_id: str) -> str | None:
        """The name Slack shows for ``user_id``, or ``None`` if Slack would not say
        (logged; a name is for people to read, never for deciding anything)."""
        try:
            return await self.slack.user_name(team_id=team_id, user_id=user_id)
        except SlackCallError as exc:
            logger.warning("no name for %s: %s", user_id, exc)
            return None

    async def team_of(self, team_id: str | None, user_id: str) -> str | None:
        """The workspace ``user_id`` belongs to, as seen from ``team_id`` (a Slack Connect
        guest's is their own), cached for ``ttl_s``; ``None`` if Slack would not say
        (logged: the caller shows that person nothing)."""
        cached = self._teams.get((team_id, user_id))
        now = self.clock()
        if cached is not None and now - cached[0] < self.ttl_s:
            return cached[1]
        try:
            found = await self.slack.user_team(team_id=team_id, user_id=user_id)
        except SlackCallError as exc:
            logger.warning("workspace of %s not read: %s", user_id, exc)
            return None
        self._teams[(team_id, user_id)] = (now, found)
        return found

    def forget(self, team_id: str | None, usergroup_id: str) -> None:
        """Drop a group from the cache (Slack reported a membership change)."""
        self._groups.pop((team_id, usergroup_id), None)

    async def _group(self, team_id: str | None, usergroup_id: str) -> frozenset[str] | Unread:
        """The group's members, or why Slack did not list them."""
        cached = self._groups.get((team_id, usergroup_id))
        now = self.clock()
        if cached is not None and now - cached[0] < self.ttl_s:
            return cached[1]
        left = time_left()  # a request's answer is due (agent_bridge.deadline)
        cut_s = None if left is None else max(0.0, left - ANSWER_MARGIN_S)
        try:
            async with asyncio.timeout(cut_s):
                found = frozenset(
                    await self.slack.usergroup_members(team_id=team_id, usergroup_id=usergroup_id)
                )
        except SlackCallError as exc:
            logger.warning("user group %s of team %s not read: %s", usergroup_id, team_id, exc)
            self.forget(team_id, usergroup_id)  # never decide on members Slack disowned
            return Unread(exc.code or "unreachable", lasting=exc.code in ADMIN_CODES)
        except TimeoutError:
            logger.warning(
                "user group %s of team %s not read before the answer was due", usergroup_id, team_id
            )
            return Unread(TIMED_OUT, lasting=False)
        self._groups[(team_id, usergroup_id)] = (now, found)
        return found

"""People and their home workspaces: the sandbox's own team, Slack Connect teams, orgs.

A person belongs to one team (``user.team_id`` in payloads); a team may belong to an
Enterprise Grid org (``enterprise_id``). People of other teams are guests in the
sandbox's channels (Slack Connect, or another workspace of the same org).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from slack_sandbox.errors import SandboxError

BOT_ICONS_URL = "https://a.slack-edge.com/sandbox/bot_{size}.png"


@dataclass(frozen=True)
class Team:
    """A workspace: its ID, its domain and, on Enterprise Grid, its org."""

    id: str
    domain: str
    enterprise_id: str | None = None
    enterprise_name: str | None = None


@dataclass(frozen=True)
class Person:
    """A user (or an app's bot user) of some team."""

    id: str
    name: str
    team_id: str
    is_bot: bool = False

    @property
    def real_name(self) -> str:
        """The name shown in profiles: ``dba_lead`` -> ``Dba Lead``."""
        return self.name.replace("_", " ").title()

    @property
    def bot_id(self) -> str | None:
        """The ``B…`` ID of a bot user's bot (``None`` for a person)."""
        return f"B{self.id[1:]}" if self.is_bot else None

    @property
    def app_id(self) -> str | None:
        """The ``A…`` ID of the app a bot user belongs to (``None`` for a person)."""
        return f"A{self.id[1:]}" if self.is_bot else None


class People:
    """Every known person and team.

    Args:
        home: The sandbox's own team.
        users: ``user_id -> name`` of people of ``home``.
    """

    def __init__(self, *, home: Team, users: dict[str, str]) -> None:
        self.home = home
        self.teams: dict[str, Team] = {home.id: home}
        self.persons: dict[str, Person] = {
            user_id: Person(id=user_id, name=name, team_id=home.id)
            for user_id, name in users.items()
        }

    def add(
        self,
        user_id: str,
        name: str,
        *,
        team_id: str | None = None,
        enterprise_id: str | None = None,
        is_bot: bool = False,
    ) -> Person:
        """Add or replace a person; a new ``team_id`` becomes a team of ``enterprise_id``.

        Raises:
            SandboxError: ``enterprise_id`` contradicts the org ``team_id`` is known in.
        """
        team = self.teams.get(team_id or self.home.id)
        if team is None:
            assert team_id is not None
            team = Team(team_id, team_id.lower(), enterprise_id, self._org_name(enterprise_id))
            self.teams[team_id] = team
        elif enterprise_id is not None and enterprise_id != team.enterprise_id:
            raise SandboxError(
                f"team {team.id} is in org {team.enterprise_id}, not {enterprise_id}"
            )
        person = Person(id=user_id, name=name, team_id=team.id, is_bot=is_bot)
        self.persons[user_id] = person
        return person

    def _org_name(self, enterprise_id: str | None) -> str | None:
        """Return the name of org ``enterprise_id``: as a known team has it, else its ID."""
        if enterprise_id is None:
            return None
        for team in self.teams.values():
            if team.enterprise_id == enterprise_id and team.enterprise_name:
                return team.enterprise_name
        return enterprise_id.lower()

    def get(self, user_id: str) -> Person:
        """Return ``user_id``, adding an unknown ID to the home team (named in lower case)."""
        person = self.persons.get(user_id)
        if person is None:
            person = self.add(user_id, user_id.lower())
        return person

    def team_of(self, user_id: str) -> Team:
        """Return the home team of ``user_id`` (added to the sandbox's team if unknown)."""
        return self.teams[self.get(user_id).team_id]

    def names(self) -> dict[str, str]:
        """Return ``user_id -> name`` of everyone."""
        return {p.id: p.name for p in self.persons.values()}


def bot_profile(person: Person, *, updated: int) -> dict[str, Any]:
    """Return the ``bot_profile`` Slack puts on a message by ``person``'s bot."""
    return {
        "id": person.bot_id,
        "deleted": False,
        "name": person.name,
        "updated": updated,
        "app_id": person.app_id,
        "icons": {f"image_{s}": BOT_ICONS_URL.format(size=s) for s in (36, 48, 72)},
        "team_id": person.team_id,
    }


def user_object(person: Person, team: Team) -> dict[str, Any]:
    """Return ``person`` as ``users.info`` shows it."""
    profile: dict[str, Any] = {
        "display_name": person.name,
        "real_name": person.real_name,
        "team": team.id,
    }
    if person.is_bot:
        profile |= {"bot_id": person.bot_id, "api_app_id": person.app_id, "always_active": True}
    user: dict[str, Any] = {
        "id": person.id,
        "team_id": team.id,
        "name": person.name,
        "real_name": person.real_name,
        "deleted": False,
        "is_bot": person.is_bot,
        "is_app_user": False,
        "tz": "Etc/UTC",
        "profile": profile,
    }
    if team.enterprise_id is not None:
        user["enterprise_user"] = {
            "id": person.id,
            "enterprise_id": team.enterprise_id,
            "enterprise_name": team.enterprise_name,
            "is_admin": False,
            "is_owner": False,
            "teams": [team.id],
        }
    return user

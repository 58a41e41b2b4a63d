"""What every part of the sandbox shares: workspace, modals, user groups, the records.

One :class:`Core` per workspace. A sandbox's first workspace makes the records (calls,
violations, failures, response URLs, latency, stalls) and the token table; another
workspace of the same sandbox (``Sandbox.add_workspace``) shares them, so one Web API
answers every workspace, each token only in its own. HTTP handlers and the
:class:`~slack_sandbox.Sandbox` facade read and write it; it does no I/O.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from slack_sandbox.block_rules import Problem
from slack_sandbox.home_state import Homes
from slack_sandbox.modals import Modals
from slack_sandbox.stalls import Slowness, Stall
from slack_sandbox.state import Workspace
from slack_sandbox.usergroups import Usergroups

RESPONSE_URL_MAX_USES = 5
RESPONSE_URL_TTL_S = 30 * 60


@dataclass
class Failure:
    """An injected failure for the next calls of one Web API method."""

    status: int
    retry_after_s: int
    remaining: int
    error: str | None = None
    """Slack's ``error`` to answer with (``ok: false``) instead of the status's own."""


@dataclass
class ResponseTarget:
    """Where a ``response_url`` posts: the interaction's channel, user and message."""

    url: str
    channel_id: str
    user_id: str
    message_ts: str | None
    """The message the interaction came from (None for slash commands)."""
    is_ephemeral: bool
    issued_at: float
    team_id: str = ""
    """The workspace of the interaction (its messages are the ones answered)."""
    uses: int = 0


class Core:
    """The sandbox's state and its records of calls and violations.

    Args:
        workspace: Users, channels, messages and the clock.
        bot_token: A bot token the Web API accepts for this workspace (the app's
            installation); ``None``: none until one is issued (``oauth.v2.access``).
        app_token: The app-level token (``xapp-…``) of Socket Mode; None: the app uses
            HTTP request URLs. One for the app, so a joining workspace shares the first's.
        joins: The first workspace of the same sandbox, whose records and token table
            this one shares; ``None``: this is the first.
    """

    def __init__(
        self,
        *,
        workspace: Workspace,
        bot_token: str | None,
        app_token: str | None = None,
        joins: Core | None = None,
    ) -> None:
        self.workspace = workspace
        self.modals = Modals(workspace)
        self.usergroups = Usergroups(team_id=workspace.team_id, clock=workspace.clock)
        self.bot_token = bot_token
        self.app_token: str | None = joins.app_token if joins else app_token
        self.base_url: str = joins.base_url if joins else ""
        self.calls: list[dict[str, Any]] = joins.calls if joins else []
        self.violations: list[str] = joins.violations if joins else []
        self.failures: dict[str, Failure] = joins.failures if joins else {}
        self.responses: dict[str, ResponseTarget] = joins.responses if joins else {}
        self.slowness: Slowness = joins.slowness if joins else Slowness()
        self.homes = Homes()
        """Each user's published App Home view (``views.publish``), in this workspace."""
        self.held: list[Stall] = joins.held if joins else []
        """Stalls holding a call now (released when the sandbox stops)."""
        self.tokens: dict[str, Core] = joins.tokens if joins else {}
        """Every live bot token -> the workspace it works in (and only there)."""
        self.revoked: set[str] = joins.revoked if joins else set()
        """Tokens revoked by an uninstall (Slack answers ``token_revoked``)."""
        self.scopes: dict[str, str] = joins.scopes if joins else {}
        """Bot token -> the scopes it was granted, comma-separated, as Slack's
        ``x-oauth-scopes`` header says them on each answer; a token not here: unknown."""
        self.teams: dict[str, Core] = joins.teams if joins else {}
        """``team_id`` -> the workspace's core."""
        self.teams[workspace.team_id] = self
        if bot_token is not None:
            self.tokens[bot_token] = self

    def revoke_tokens(self) -> list[str]:
        """Revoke every bot token of this workspace; return them."""
        mine = [token for token, core in self.tokens.items() if core is self]
        for token in mine:
            del self.tokens[token]
            self.revoked.add(token)
        return mine

    def violate(self, where: str, problems: Iterable[Problem | str]) -> None:
        """Record each of ``problems`` as a violation committed in ``where``."""
        for problem in problems:
            self.violations.append(f"{where}: {problem}")

    def take_failure(self, method: str) -> Failure | None:
        """Return the failure injected for ``method``'s next call, consuming one."""
        failure = self.failures.get(method)
        if failure is None:
            return None
        failure.remaining -= 1
        if failure.remaining <= 0:
            del self.failures[method]
        return failure

    def issue_response_url(
        self, *, channel_id: str, user_id: str, message_ts: str | None, is_ephemeral: bool
    ) -> ResponseTarget:
        """Issue a ``response_url`` for an interaction in ``channel_id`` by ``user_id``."""
        token = secrets.token_urlsafe(12)
        target = ResponseTarget(
            url=f"{self.base_url}response/{token}",
            channel_id=channel_id,
            user_id=user_id,
            message_ts=message_ts,
            is_ephemeral=is_ephemeral,
            issued_at=self.workspace.clock(),
            team_id=self.workspace.team_id,
        )
        self.responses[token] = target
        return target

    def redeem_response(self, token: str) -> tuple[ResponseTarget | None, str | None]:
        """Use a ``response_url`` once; return ``(target, None)`` or ``(None, error)``."""
        target = self.responses.get(token)
        if target is None:
            return None, "invalid_url"
        if self.workspace.clock() - target.issued_at > RESPONSE_URL_TTL_S:
            return None, "expired_url"
        if target.uses >= RESPONSE_URL_MAX_USES:
            return None, "used_url"
        target.uses += 1
        return target, None

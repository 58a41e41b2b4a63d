"""The OAuth flow's ``state`` values: slack_sdk's ``AsyncOAuthStateStore`` on the project's
database port (``slack_oauth_states``, migrated by ``release``).

``/slack/install`` issues a state (Bolt also sets it in a cookie of the installer's
browser); ``/slack/oauth_redirect`` consumes it once. A state is valid for
``STATE_TTL_S`` and only once: consuming is one ``DELETE ... RETURNING`` of an unexpired
row, so two redirects carrying the same state cannot both install (RFC 6749 section 10.12,
the CSRF protection Slack's "Installing with OAuth" asks for). Kept in the database, not in
one process's memory, so any ``web`` process can finish an install another began.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable

from slack_sdk.oauth.state_store.async_state_store import AsyncOAuthStateStore

from agent_bridge.db import Database

logger = logging.getLogger(__name__)

STATE_TTL_S = 600.0
"""How long an issued state may be consumed, seconds (Bolt's default expiration)."""

INSERT_STATE = "INSERT INTO slack_oauth_states (state, expires_at) VALUES (:state, :expires_at)"
CONSUME_STATE = """DELETE FROM slack_oauth_states WHERE state = :state AND expires_at > :now
    RETURNING state"""
DELETE_EXPIRED_STATES = "DELETE FROM slack_oauth_states WHERE expires_at <= :now"


class OAuthStateStore(AsyncOAuthStateStore):
    """One-time OAuth states in the database.

    Args:
        db: The approval store's database.
        ttl_s: How long a state lives, seconds.
        clock: Unix time in seconds.
    """

    def __init__(
        self,
        db: Database,
        *,
        ttl_s: float = STATE_TTL_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.db = db
        self.ttl_s = ttl_s
        self.clock = clock

    @property
    def logger(self) -> logging.Logger:
        """The logger slack_sdk's interface asks for."""
        return logger

    async def async_issue(self, *args: object, **kwargs: object) -> str:
        """Return a new state (32 random bytes, URL-safe), valid ``ttl_s``; expired
        states are deleted on the way, so the table holds only live ones."""
        now = self.clock()
        await self.db.execute(DELETE_EXPIRED_STATES, {"now": now})
        state = secrets.token_urlsafe(32)
        await self.db.execute(INSERT_STATE, {"state": state, "expires_at": now + self.ttl_s})
        return state

    async def async_consume(self, state: str) -> bool:
        """Whether ``state`` was issued, is unexpired and not consumed before (it is
        consumed now)."""
        row = await self.db.fetch_one(CONSUME_STATE, {"state": state, "now": self.clock()})
        return row is not None

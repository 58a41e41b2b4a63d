"""Reads for a reviewer's inbox and a Slack thread's answers: what waits for whom.

Read-only queries over the store's tables (``approval_requests``, ``runs``,
``audit_events``), each over an index: a workspace's newest pending requests
(``approval_requests_inbox``, at most ``INBOX_MAX``) and a Slack thread's
(``runs_slack_thread``: one run's) read no other paused run
(``tests/test_sweep_plans.py``); a user's decisions and the recent reviewers are read
from ``audit_events`` within a time window (``audit_events_at``). The App Home tab
(``bot.home``) lists a user's pending requests and recent decisions with them; a reply
in a run's Slack thread (``bot.conversations``) finds the request it answers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agent_bridge.db import Database
from agent_bridge.models import ApprovalRequest
from agent_bridge.store import request_from_row

INBOX_MAX = 40
"""Most pending requests read for one inbox (newest first): a Home view holds 100
blocks, about two per request."""
RECENT_MAX = 10
"""Most recent decisions of a user shown in their inbox."""
RECENT_WINDOW_S = 14 * 24 * 3600.0
"""How far back a user's decisions are read, seconds (14 days)."""
REVIEWERS_WINDOW_S = 7 * 24 * 3600.0
"""Who decided within this window, seconds (7 days), has their Home refreshed when a
request anyone may decide is created."""
REVIEWERS_MAX = 200

PENDING_IN_TEAM = """SELECT * FROM approval_requests
    WHERE state = 'pending' AND message_ts IS NOT NULL
    AND COALESCE(team_id, '') = COALESCE(:team_id, '')
    ORDER BY created_at DESC, idx LIMIT :limit"""
DECIDED_BY_USER = """SELECT * FROM approval_requests WHERE request_id IN (
        SELECT request_id FROM audit_events
        WHERE at > :since AND user_id = :user_id AND kind IN ('decided', 'approved', 'edited'))
    AND COALESCE(team_id, '') = COALESCE(:team_id, '')
    ORDER BY COALESCE(decided_at, changed_at, created_at) DESC LIMIT :limit"""
"""A user's recent decisions in one workspace (a person may be in several)."""
RECENT_REVIEWERS = """SELECT DISTINCT user_id FROM audit_events
    WHERE at > :since AND kind IN ('decided', 'approved', 'edited', 'refused')
    AND user_id IS NOT NULL AND (team_id = :team_id OR team_id IS NULL)
    LIMIT :limit"""
PENDING_IN_SLACK_THREAD = """SELECT a.* FROM approval_requests a
    JOIN runs r ON r.run_id = a.run_id
    WHERE a.state = 'pending' AND a.message_ts IS NOT NULL
        AND r.channel_id = :channel_id AND r.thread_ts = :thread_ts
    ORDER BY a.created_at, a.idx"""


@dataclass(frozen=True)
class Inbox:
    """Reads of who waits on what.

    Args:
        db: The store's database.
        clock: Unix time in seconds.
    """

    db: Database
    clock: Callable[[], float]

    async def pending(
        self, team_id: str | None, *, limit: int = INBOX_MAX
    ) -> list[ApprovalRequest]:
        """Posted requests still pending in ``team_id``, newest first (who may decide
        each is for the caller to check).

        Raises:
            StoreUnavailableError: The database failed.
        """
        rows = await self.db.fetch_all(PENDING_IN_TEAM, {"team_id": team_id, "limit": limit})
        return [request_from_row(r) for r in rows]

    async def decided_by(
        self, user_id: str, team_id: str | None, *, limit: int = RECENT_MAX
    ) -> list[ApprovalRequest]:
        """Requests of workspace ``team_id`` that ``user_id`` decided, approved or edited
        in the last ``RECENT_WINDOW_S``, newest first.

        Raises:
            StoreUnavailableError: The database failed.
        """
        since = self.clock() - RECENT_WINDOW_S
        rows = await self.db.fetch_all(
            DECIDED_BY_USER,
            {"since": since, "user_id": user_id, "team_id": team_id, "limit": limit},
        )
        return [request_from_row(r) for r in rows]

    async def recent_reviewers(self, team_id: str | None) -> list[str]:
        """Users of ``team_id`` who acted on a request in the last ``REVIEWERS_WINDOW_S``.

        Raises:
            StoreUnavailableError: The database failed.
        """
        since = self.clock() - REVIEWERS_WINDOW_S
        rows = await self.db.fetch_all(
            RECENT_REVIEWERS, {"since": since, "team_id": team_id, "limit": REVIEWERS_MAX}
        )
        return [str(r["user_id"]) for r in rows]

    async def pending_in_slack_thread(
        self, channel_id: str, thread_ts: str
    ) -> list[ApprovalRequest]:
        """Pending requests of the run whose Slack thread is ``thread_ts`` in
        ``channel_id`` whose cards are posted (a question nobody was shown has no
        answer yet), oldest first (empty when it is no run's thread).

        Raises:
            StoreUnavailableError: The database failed.
        """
        rows = await self.db.fetch_all(
            PENDING_IN_SLACK_THREAD, {"channel_id": channel_id, "thread_ts": thread_ts}
        )
        return [request_from_row(r) for r in rows]

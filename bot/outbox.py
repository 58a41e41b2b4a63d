"""Posting each of a run's messages exactly once, across crashes, by intention and key.

Every message the product owes Slack (the run's header, a card, a tool result, a
note, the final answer, a reminder, a failure) has a key within its run. Before it
is posted, the intention is recorded in the database (``ApprovalStore.intend_notice``);
after, its ``ts`` (a drive's tool results, notes and answer: with the run's release,
in the same statement on PostgreSQL). The message carries Slack message metadata naming
``<run_id>/<key>``, so a worker that finds an intention without a ``ts`` (its
predecessor died while the post was in flight, or before its release recorded it) first
looks for the message in Slack
(``SlackGateway.find_message``: ``conversations.replies`` in a Slack thread,
``conversations.history`` in a channel) and adopts it; only if it is not there does it
post it. Posts of one run are made by the worker holding its lease, one at a time, so
they land in the order they are made (docs/architecture.md, "Messages exactly once").
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from agent_bridge.models import Run
from agent_bridge.store import ApprovalStore
from bot.slack_gateway import Slack

logger = logging.getLogger(__name__)

CLOCK_SKEW_S = 300.0
"""How far before an intention ``find_message`` reads a channel's history: Slack's clock
and ours may differ, and reading a little more costs nothing."""


def metadata_key(run_id: str, key: str) -> str:
    """The key a message's metadata names: unique across runs."""
    return f"{run_id}/{key}"


@dataclass(frozen=True)
class Posted:
    """Where ``Outbox.post_once`` left a message."""

    ts: str
    """The message's ``ts``."""
    now: bool
    """Whether this call posted it (``False``: it was posted before, its ``ts`` recorded
    or found in Slack, drawn from what was known then)."""


class Outbox:
    """Posts a run's messages once each (see the module docstring).

    Args:
        store: Where intentions and their ``ts`` are recorded.
        slack: The Slack gateway.
    """

    def __init__(self, *, store: ApprovalStore, slack: Slack) -> None:
        self.store = store
        self.slack = slack

    async def post_once(
        self,
        run: Run,
        key: str,
        *,
        channel_id: str,
        text: str,
        blocks: list[dict[str, Any]],
        thread_ts: str | None = None,
        ts_at_release: bool = False,
    ) -> Posted:
        """Post the run's message ``key`` unless it is in Slack already.

        Args:
            run: The run the message belongs to (its workspace, its ID).
            key: The message's key within the run.
            channel_id: Where it goes.
            text: Its fallback text.
            blocks: Its blocks.
            thread_ts: Its Slack thread, if it is a reply.
            ts_at_release: Record its ``ts`` with the run's release, not at once
                (``ApprovalStore.set_notice_ts``): for a drive's messages, posted under
                the run's lease by the worker that releases it.

        Returns:
            The message's ``ts``, and whether this call posted it (else it was recorded,
            or found in Slack and adopted).

        Raises:
            SlackCallError: Slack failed (the intention stays; a retry looks first).
        """
        notice = await self.store.intend_notice(run.run_id, key)
        if notice.message_ts is not None:
            return Posted(notice.message_ts, now=False)
        tagged = metadata_key(run.run_id, key)
        if not notice.fresh:
            found = await self.slack.find_message(
                team_id=run.team_id,
                channel_id=channel_id,
                key=tagged,
                thread_ts=thread_ts,
                oldest=notice.created_at - CLOCK_SKEW_S,
            )
            if found is not None:
                logger.info("run=%s message %s found in Slack, adopted", run.run_id, key)
                await self.store.set_notice_ts(run.run_id, key, found)
                return Posted(found, now=False)
        ts = await self.slack.post_message(
            team_id=run.team_id,
            channel_id=channel_id,
            text=text,
            blocks=blocks,
            thread_ts=thread_ts,
            key=tagged,
        )
        await self.store.set_notice_ts(run.run_id, key, ts, at_release=ts_at_release)
        return Posted(ts, now=True)

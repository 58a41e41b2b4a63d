"""Pacing the worker's background Slack calls (reminders, expiries, escalations, card
redraws) to Slack's rate limits, so a backlog falling due at once is drained steadily
instead of being refused with HTTP 429.

The limits are Slack's (https://api.slack.com/docs/rate-limits): ``chat.postMessage``
"generally allows posting one message per second per channel"; ``chat.update`` is a
Tier 3 method, "50+ per minute" per method per app per workspace. Background work keeps
below both, leaving headroom for the cards that reviewers' clicks redraw. With Redis, every
worker of a deployment draws from one schedule (``agent_bridge.redis_pacing``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

POST_INTERVAL_S = 1.0
"""Shortest gap between two background posts in one channel, seconds (Slack: 1 per
second per channel)."""
UPDATE_INTERVAL_S = 1.5
"""Shortest gap between two background ``chat.update`` calls in the workspace, seconds:
40 a minute, below Tier 3's 50, so clicks' redraws still fit."""
KEYS_KEPT = 256
"""How many channels' next slots are remembered before past ones are forgotten."""


class Pacer:
    """Hands out slots for background Slack calls, one key at a time.

    Each key (a channel's posts, the workspace's updates) has a next free slot; a call
    waits until its slot and moves the slot one interval on. Memory stays bounded: slots
    already past are forgotten once ``KEYS_KEPT`` keys are remembered.

    Args:
        post_interval_s: Gap between posts in one channel, seconds.
        update_interval_s: Gap between ``chat.update`` calls, seconds.
        clock: Monotonic seconds (tests pass their own).
        sleep: Waits that many seconds (tests pass their own).
    """

    def __init__(
        self,
        *,
        post_interval_s: float = POST_INTERVAL_S,
        update_interval_s: float = UPDATE_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.post_interval_s = post_interval_s
        self.update_interval_s = update_interval_s
        self._clock = clock
        self._sleep = sleep
        self._next: dict[str, float] = {}

    async def post(self, channel_id: str | None) -> None:
        """Wait for the next slot to post a message in ``channel_id``."""
        await self._slot(f"post:{channel_id}", self.post_interval_s)

    async def update(self) -> None:
        """Wait for the next slot to redraw a message (``chat.update``)."""
        await self._slot("update", self.update_interval_s)

    async def close(self) -> None:
        """Release what the pacer holds (nothing here; ``RedisPacer`` its connection)."""

    async def _slot(self, key: str, interval_s: float) -> None:
        now = self._clock()
        if len(self._next) >= KEYS_KEPT:
            self._next = {k: at for k, at in self._next.items() if at > now}
        at = max(now, self._next.get(key, now))
        self._next[key] = at + interval_s
        if at > now:
            await self._sleep(at - now)

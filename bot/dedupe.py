"""Ignoring duplicate Slack deliveries of the same event.

Slack re-sends an Events API delivery it thinks failed (``X-Slack-Retry-Num``,
``X-Slack-Retry-Reason``), with the same ``event_id``
(https://api.slack.com/apis/events-api#retries). A Bolt global middleware claims each
``event_id`` once, in Redis (``SET NX EX``: de-duplication is one of Redis's two jobs,
with wake-up signals) or, without Redis, in memory; a repeat is answered 200 and
reaches no listener. If Redis is down the event is processed: a rare duplicate beats a
lost request.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

import redis.asyncio as redis
from redis.exceptions import RedisError
from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

logger = logging.getLogger(__name__)

EVENT_TTL_S = 3600
"""How long an event ID is remembered, seconds (Slack retries within minutes)."""
KEY_PREFIX = "agent_bridge:event:"
REDIS_TIMEOUT_S = 0.5
"""Slack waits 3 s for the ack; a hung Redis may take only this much of it."""


class Deduper(Protocol):
    """Remembers keys for a while."""

    async def first_time(self, key: str) -> bool:
        """Return ``True`` the first time ``key`` is seen within ``EVENT_TTL_S``."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


class MemoryDeduper:
    """``Deduper`` for one process (the demo, or web without Redis)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._seen: dict[str, float] = {}
        self._clock = clock

    async def first_time(self, key: str) -> bool:
        """See ``Deduper.first_time``."""
        now = self._clock()
        self._seen = {k: t for k, t in self._seen.items() if now - t < EVENT_TTL_S}
        if key in self._seen:
            return False
        self._seen[key] = now
        return True

    async def close(self) -> None:
        """Nothing to release."""


class RedisDeduper:
    """``Deduper`` shared by every web process, in Redis.

    Args:
        url: ``redis://host:port/db``.
    """

    def __init__(self, url: str) -> None:
        self.client = redis.Redis.from_url(
            url, socket_connect_timeout=REDIS_TIMEOUT_S, socket_timeout=REDIS_TIMEOUT_S
        )

    async def close(self) -> None:
        """Close the connection pool."""
        await self.client.aclose()

    async def first_time(self, key: str) -> bool:
        """See ``Deduper.first_time``; ``True`` (process it) when Redis is unreachable."""
        try:
            return bool(await self.client.set(KEY_PREFIX + key, b"1", nx=True, ex=EVENT_TTL_S))
        except (RedisError, OSError) as exc:
            logger.warning("event %s not de-duplicated, Redis unavailable: %s", key, exc)
            return True


class DedupeMiddleware(AsyncMiddleware):
    """A Bolt global middleware that drops repeated ``event_callback`` deliveries.

    It reads the parsed body only (no keyword injection, which would parse every part of
    every payload first, and fail on malformed ones before any listener could answer).

    Args:
        deduper: Where event IDs are remembered.
    """

    def __init__(self, deduper: Deduper) -> None:
        self.deduper = deduper

    async def async_process(
        self,
        *,
        req: AsyncBoltRequest,
        resp: BoltResponse,
        next: Callable[[], Awaitable[BoltResponse]],
    ) -> BoltResponse | None:
        """Answer a repeated event 200 without passing it on; pass anything else on."""
        body = req.body
        event_id = body.get("event_id") if body.get("type") == "event_callback" else None
        if isinstance(event_id, str) and not await self.deduper.first_time(event_id):
            logger.info("duplicate delivery of event %s ignored", event_id)
            return BoltResponse(status=200, body="")
        return await next()

"""Redis driver of background Slack pacing: one budget for every worker of a deployment.

Slack's limits are per app and workspace (https://api.slack.com/docs/rate-limits), not
per process: two workers pacing themselves alone would post twice as fast as one. Here a
slot is handed out by a Lua script on Redis's own clock (``TIME``), atomically, so every
worker of the deployment draws from the same schedule. If Redis cannot be reached, the
worker paces itself alone (``Pacer``) and says so: pacing must never stop time keeping.
"""

from __future__ import annotations

import logging

import redis.asyncio as redis
from redis.exceptions import RedisError

from agent_bridge.pacing import Pacer

logger = logging.getLogger(__name__)

KEY_PREFIX = "agent_bridge:pacing:"
TIMEOUT_S = 2.0
NEXT_SLOT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local slot = math.max(now, tonumber(redis.call('GET', KEYS[1]) or '0'))
local after = slot + tonumber(ARGV[1])
redis.call('SET', KEYS[1], string.format('%.6f', after), 'PX',
    math.ceil((after - now) * 1000) + 1000)
return string.format('%.6f', slot - now)
"""
"""Reserve the key's next slot; return how long to wait for it, seconds (as text: Lua
numbers become integers on their way out of a script)."""


class RedisPacer(Pacer):
    """A ``Pacer`` whose slots are shared through Redis by every worker of a deployment.

    Args:
        url: ``redis://host:port/db``.
        deployment: The deployment's name in keys (its signal channel), so deployments
            sharing a Redis server keep their own schedules.
        **kwargs: As ``Pacer`` (intervals, clock and sleep for tests).
    """

    def __init__(self, url: str, *, deployment: str, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.deployment = deployment
        self._redis = redis.Redis.from_url(
            url, socket_connect_timeout=TIMEOUT_S, socket_timeout=TIMEOUT_S
        )
        self._next_slot = self._redis.register_script(NEXT_SLOT)
        self._alone = False

    async def _slot(self, key: str, interval_s: float) -> None:
        try:
            wait_s = float(
                await self._next_slot(
                    keys=[f"{KEY_PREFIX}{self.deployment}:{key}"], args=[interval_s]
                )
            )
        except (RedisError, OSError) as exc:
            if not self._alone:
                logger.warning(
                    "shared Slack pacing unavailable (%s); pacing this worker alone", exc
                )
            self._alone = True
            await super()._slot(key, interval_s)
            return
        self._alone = False
        if wait_s > 0:
            await self._sleep(wait_s)

    async def close(self) -> None:
        """Close the Redis connection."""
        await self._redis.aclose()

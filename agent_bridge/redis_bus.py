"""Redis driver of the bus port: one pub/sub channel of JSON ``Signal``s.

Pub/sub keeps nothing, which is what a doorbell needs: a worker that is down or
reconnecting misses signals and its periodic sweep of the database finds the work. A
broken connection is logged and retried with backoff; it never stops a worker or a
click from being recorded.
"""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import urlsplit

import psycopg
import redis.asyncio as redis
from psycopg.conninfo import conninfo_to_dict
from pydantic import ValidationError
from redis.exceptions import RedisError

from agent_bridge.bus import Signal
from agent_bridge.db import dialect_of

logger = logging.getLogger(__name__)

CHANNEL_PREFIX = "agent_bridge:signals:"
WHERE_PARAMETERS = ("hostaddr", "service")
"""libpq's other parameters naming the server (an IP address beside ``host``; a
``pg_service.conf`` entry), in a channel name after the host and port."""
CONNECT_TIMEOUT_S = 2.0
RECONNECT_BACKOFF_MAX_S = 5.0


def signal_channel(database_url: str) -> str:
    """Return the deployment's pub/sub channel, named after its database: deployments
    sharing a Redis server but not a database never wake each other's workers (a
    signal names a run of its own database only).

    Only the database's host, port and name are used, never its user or password:
    ``postgresql://u:secret@db.internal:5432/approvals`` gives
    ``agent_bridge:signals:db.internal:5432/approvals``; ``sqlite:///path`` its path. A
    PostgreSQL URL is read as libpq reads it (``conninfo_to_dict``), so a host given as a
    query parameter counts too (``postgresql:///approvals?host=/cloudsql/acme-prod:db``,
    libpq's form for a Unix socket or Cloud SQL; two such deployments differ only there),
    and so do ``hostaddr`` and ``service`` (``WHERE_PARAMETERS``).
    """
    if dialect_of(database_url) == "postgres":  # never urlsplit: libpq takes more than it
        try:
            conninfo = conninfo_to_dict(database_url)
        except psycopg.ProgrammingError:
            conninfo = {}  # unreadable: the worker's own connection says why
        host = str(conninfo.get("host") or "")
        where = host if host.startswith("/") else host.lower()
        if conninfo.get("port"):
            where += f":{conninfo['port']}"
        for key in WHERE_PARAMETERS:  # also say where the server is; never a secret
            if conninfo.get(key):
                where += f"?{key}={conninfo[key]}"
        return f"{CHANNEL_PREFIX}{where}/{conninfo.get('dbname') or ''}"
    return f"{CHANNEL_PREFIX}{urlsplit(database_url).path or '/'}"


class RedisBus:
    """The bus over Redis pub/sub.

    Args:
        url: ``redis://host:port/db``.
        channel: Pub/sub channel name: the deployment's (``SIGNAL_CHANNEL``, else
            ``signal_channel`` of its database); tests use one per test.
    """

    def __init__(self, url: str, *, channel: str) -> None:
        self.channel = channel
        self._redis = redis.Redis.from_url(
            url, socket_connect_timeout=CONNECT_TIMEOUT_S, socket_timeout=CONNECT_TIMEOUT_S
        )
        self._pubsub: redis.client.PubSub | None = None
        self._backoff_s = 0.0

    async def publish(self, signal: Signal) -> None:
        """See ``Bus.publish``; a Redis failure is logged, the sweep covers for it."""
        try:
            await self._redis.publish(self.channel, signal.model_dump_json())
        except RedisError as exc:
            logger.warning("signal %s run=%s not published: %s", signal.kind, signal.run_id, exc)

    async def subscribe(self) -> None:
        """Start listening now, so signals published from here on are kept for ``wait``."""
        if self._pubsub is None:
            pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
            await pubsub.subscribe(self.channel)
            self._pubsub = pubsub

    async def wait(self, timeout_s: float) -> list[Signal]:
        """See ``Bus.wait``; reconnects by itself after a failure."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        try:
            await self.subscribe()
            assert self._pubsub is not None
            signals: list[Signal] = []
            # get_message returns None early for subscribe confirmations, so loop.
            while not signals and (remaining := deadline - loop.time()) > 0:
                message = await self._pubsub.get_message(timeout=remaining)
                while message is not None:
                    signals.extend(_parse(message.get("data")))
                    message = await self._pubsub.get_message(timeout=0)
            self._backoff_s = 0.0
            return signals
        except (RedisError, OSError) as exc:
            await self._drop_subscription()
            self._backoff_s = min(max(self._backoff_s * 2, 0.1), RECONNECT_BACKOFF_MAX_S)
            logger.warning("Redis bus unavailable (%s); retrying in %.1f s", exc, self._backoff_s)
            await asyncio.sleep(min(self._backoff_s, timeout_s))
            return []

    async def close(self) -> None:
        """Close the subscription and the connection pool."""
        await self._drop_subscription()
        await self._redis.aclose()

    async def _drop_subscription(self) -> None:
        if self._pubsub is not None:
            pubsub, self._pubsub = self._pubsub, None
            try:
                # untyped in older redis-py releases, typed in 8.2: either passes mypy
                await pubsub.aclose()  # type: ignore[no-untyped-call, unused-ignore]
            except (RedisError, OSError):
                logger.debug("closing a broken Redis subscription failed", exc_info=True)


def _parse(data: object) -> list[Signal]:
    """Return the signal in a pub/sub message body, or none if it is not one."""
    try:
        return [Signal.model_validate_json(data)] if isinstance(data, bytes | str) else []
    except ValidationError:
        logger.warning("ignoring a malformed signal on the bus: %r", data)
        return []

"""Bounding the web process's client connections, so no client can starve the others.

A client holding many half-sent connections would otherwise use up the process's file
descriptors: ``accept()`` then fails with "Too many open files" in a tight loop (asyncio
logs each failure with a traceback), new requests, ``/healthz`` included, time out,
and the database pool cannot open a connection. Three things stop that:

- aiohttp's ``keepalive_timeout`` runs from a connection's start and is not extended
  by a trickle of bytes, so one that has not sent its headers within
  ``bot.http_limits.HEADER_READ_TIMEOUT_S`` is closed (the body has its own timeout in
  ``bot.app``);
- ``ConnectionLimit`` keeps at most ``max_connections`` open: at the limit a new
  connection replaces the oldest one with no request in progress (idle or still sending
  its headers), so a health check or Slack always gets in; only when every connection is
  serving a request is the new one refused;
- what it drops is logged once per ``WARN_EVERY_S`` with a count, never per connection,
  and asyncio's own accept error likewise (``quiet_accept_errors``).
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections.abc import Awaitable, Callable
from typing import Any, cast

from aiohttp import web

from agent_bridge import metrics
from bot.http_limits import FD_RESERVE

logger = logging.getLogger(__name__)

WARN_EVERY_S = 60.0
"""At most one warning about dropped connections (and one of asyncio's accept errors)
per this many seconds."""
ACCEPT_ERROR = "socket.accept() out of system resource"
"""The message asyncio logs, with a traceback, on each failed ``accept()``."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def descriptor_bound(max_connections: int) -> int:
    """``max_connections``, lowered to leave ``FD_RESERVE`` of the process's open-file
    limit (``RLIMIT_NOFILE``, soft) for everything else."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return max_connections
    return max(1, min(max_connections, soft - FD_RESERVE))


class ConnectionLimit:
    """Keeps a server's open connections at ``max_connections`` at most.

    Args:
        max_connections: The bound (see ``descriptor_bound``).
        clock: Monotonic seconds, for spacing the warnings.
    """

    def __init__(
        self, *, max_connections: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.max_connections = max_connections
        self.clock = clock
        self._open: dict[_Guarded, None] = {}  # insertion order: the oldest first
        self._serving: set[object] = set()  # aiohttp protocols with a request in progress
        self._dropped_since_warning = 0
        self._warned_at: float | None = None

    @property
    def open_connections(self) -> int:
        """How many client connections are open now."""
        return len(self._open)

    def protocol_factory(self, factory: Callable[[], Any]) -> Callable[[], asyncio.Protocol]:
        """Wrap aiohttp's protocol ``factory`` (the runner's ``server``) so that each
        connection is counted and may be dropped."""
        return lambda: _Guarded(factory(), self)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """aiohttp middleware marking a connection as serving a request while it does
        (such a connection is never the one replaced)."""
        protocol = request.protocol
        self._serving.add(protocol)
        try:
            return await handler(request)
        finally:
            self._serving.discard(protocol)

    def _admit(self, conn: _Guarded) -> bool:
        """Make room for ``conn``; return whether it may stay."""
        if len(self._open) >= self.max_connections:
            idle = next((c for c in self._open if c.inner not in self._serving), None)
            if idle is None:
                self._dropped("refused")
                return False
            self._dropped("replaced")
            self._open.pop(idle)  # gone now: its connection_lost comes later
            idle.drop()
        self._open[conn] = None
        metrics.HTTP_CONNECTIONS.set(len(self._open))
        return True

    def _closed(self, conn: _Guarded) -> None:
        self._open.pop(conn, None)
        self._serving.discard(conn.inner)
        metrics.HTTP_CONNECTIONS.set(len(self._open))

    def _dropped(self, reason: str) -> None:
        metrics.HTTP_CONNECTIONS_DROPPED.labels(reason=reason).inc()
        self._dropped_since_warning += 1
        now = self.clock()
        if self._warned_at is None or now - self._warned_at >= WARN_EVERY_S:
            logger.warning(
                "connection limit (%d) reached: %d connection(s) dropped since the last "
                "warning (the oldest idle or half-sent ones; refused only when every "
                "connection is serving a request)",
                self.max_connections,
                self._dropped_since_warning,
            )
            self._warned_at = now
            self._dropped_since_warning = 0


class _Guarded(asyncio.Protocol):
    """One client connection: aiohttp's protocol ``inner``, counted by ``limit``."""

    def __init__(self, inner: Any, limit: ConnectionLimit) -> None:
        self.inner = inner
        self.limit = limit
        self.transport: asyncio.Transport | None = None
        self.admitted = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport. A cast, not a check: uvloop's are not asyncio.Transport
        # subclasses (the web process runs on asyncio's own loop, agent_bridge.event_loop,
        # but a loop of the embedder's choice must work too).
        self.transport = stream = cast(asyncio.Transport, transport)
        self.admitted = self.limit._admit(self)
        if not self.admitted:
            stream.abort()  # frees the descriptor now; aiohttp never saw it
            return
        self.inner.connection_made(transport)

    def drop(self) -> None:
        """Close the connection at once (its descriptor is freed now)."""
        if self.transport is not None:
            self.transport.abort()

    def data_received(self, data: bytes) -> None:
        if self.admitted:
            self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received() if self.admitted else None

    def pause_writing(self) -> None:
        if self.admitted:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.admitted:
            self.inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self.limit._closed(self)
        if self.admitted:
            self.inner.connection_lost(exc)


class GuardedSite(web.SockSite):
    """aiohttp's ``SockSite`` whose connections go through ``limit``.

    ``start`` is ``SockSite.start`` with the protocol factory wrapped (it uses the
    attributes ``BaseSite`` and ``SockSite`` set: ``_runner``, ``_sock``,
    ``_ssl_context``, ``_backlog``, ``_server``).
    """

    def __init__(self, runner: web.BaseRunner, sock: Any, *, limit: ConnectionLimit) -> None:
        super().__init__(runner, sock)
        self.limit = limit

    async def start(self) -> None:
        """Register with the runner and serve the socket through the limit."""
        await web.BaseSite.start(self)
        server = self._runner.server
        assert server is not None
        self._server = await asyncio.get_running_loop().create_server(
            self.limit.protocol_factory(server),
            sock=self._sock,
            ssl=self._ssl_context,
            backlog=self._backlog,
        )


class _EveryInterval(logging.Filter):
    """Lets one record with ``ACCEPT_ERROR`` through per ``WARN_EVERY_S``."""

    def __init__(self) -> None:
        super().__init__()
        self._passed_at: float | None = None
        self.suppressed = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith(ACCEPT_ERROR):
            return True
        now = time.monotonic()
        if self._passed_at is not None and now - self._passed_at < WARN_EVERY_S:
            self.suppressed += 1
            return False
        self._passed_at = now
        return True


def quiet_accept_errors() -> None:
    """Let asyncio log a failed ``accept()`` at most once per ``WARN_EVERY_S`` (it
    retries every second, and before a retry logs a traceback per waiting client)."""
    asyncio_logger = logging.getLogger("asyncio")
    if not any(isinstance(f, _EveryInterval) for f in asyncio_logger.filters):
        asyncio_logger.addFilter(_EveryInterval())

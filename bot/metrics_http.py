"""``GET /metrics``: prometheus-client's text exposition of ``agent_bridge.metrics``.

The web process serves it on its own port, with the database's figures (runs by state,
approvals pending) read at scrape time (``agent_bridge.state_counts``); a worker serves
its own process's figures on ``METRICS_PORT`` (``start_metrics_server``). See
``agent_bridge.metrics`` for why each process serves its own.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from agent_bridge import metrics
from agent_bridge.db import Database
from agent_bridge.errors import StoreUnavailableError
from agent_bridge.state_counts import read_state_counts
from bot.shared_call import SharedCall

logger = logging.getLogger(__name__)

METRICS_PATH = "/metrics"


DATABASE_READ_INTERVAL_S = 5.0
"""The database's figures on ``/metrics`` are read at most this often, seconds: the
endpoint answers anyone who reaches the port, and the runs' count reads every row of the
runs table (which only grows), so a client scraping in a loop would keep a scan running
on the clicks' connection pool; a scrape sooner gets the figures last read."""


def metrics_handler(
    db: Database | None,
    *,
    read_interval_s: float = DATABASE_READ_INTERVAL_S,
    clock: Callable[[], float] = time.monotonic,
) -> Callable[[web.Request], Awaitable[web.Response]]:
    """Return the ``/metrics`` handler; with ``db``, the database's figures are read
    first (on failure they keep their last values and
    ``agent_bridge_metrics_database_ok`` is 0), one read at a time and at most one per
    ``read_interval_s`` seconds (``clock``, monotonic): scrapes arriving meanwhile share
    it (``SharedCall``)."""
    read = (
        SharedCall(lambda: _read_database(db), fresh_s=read_interval_s, clock=clock)
        if db is not None
        else None
    )

    async def handle(_: web.Request) -> web.Response:
        if read is not None:
            await read()
        return web.Response(
            body=generate_latest(REGISTRY), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    return handle


async def _read_database(db: Database) -> None:
    try:
        counts = await read_state_counts(db)
    except StoreUnavailableError as exc:
        logger.warning("metrics: the database's figures not read: %s", type(exc).__name__)
        metrics.DATABASE_READ_OK.set(0)
        return
    for state, count in counts.runs.items():
        metrics.RUNS.labels(state=state).set(count)
    metrics.APPROVALS_PENDING.set(counts.approvals_pending)
    metrics.DATABASE_READ_OK.set(1)


@dataclass
class MetricsServer:
    """A running ``/metrics`` endpoint of its own (a worker's)."""

    runner: web.AppRunner
    port: int

    async def stop(self) -> None:
        """Stop serving."""
        await self.runner.cleanup()


async def start_metrics_server(*, host: str, port: int) -> MetricsServer:
    """Serve this process's metrics at ``http://host:port/metrics`` (``port`` 0: any
    free one; ``MetricsServer.port`` says which)."""
    app = web.Application()
    app.router.add_get(METRICS_PATH, metrics_handler(None))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    sock = socket.create_server((host, port))
    await web.SockSite(runner, sock).start()
    return MetricsServer(runner=runner, port=int(sock.getsockname()[1]))

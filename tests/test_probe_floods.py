"""``/metrics`` and ``/readyz`` answer anyone who reaches the web process's port, and each
answer reads the database: a flood of them holds one of the web pool's connections, not
one each, so the clicks still record with the rest (``bot.shared_call``)."""

from __future__ import annotations

import asyncio

import aiohttp
import psycopg
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from agent_bridge.backend import Backend
from agent_bridge.migrations import SELECT_VERSION
from agent_bridge.models import Run
from agent_bridge.state_counts import COUNT_RUNS_BY_STATE
from agent_bridge.store import ApprovalStore
from bot.metrics_http import DATABASE_READ_INTERVAL_S, METRICS_PATH, metrics_handler
from bot.readiness import READY_PATH
from tests.harness import Harness

FLOOD = 40


@pytest.mark.parametrize(
    ("path", "table", "statement"),
    [
        (METRICS_PATH, "runs", COUNT_RUNS_BY_STATE),
        (READY_PATH, "bridge_schema_version", SELECT_VERSION),
    ],
    ids=["metrics", "readyz"],
)
async def test_a_flood_reads_the_database_once_at_a_time(
    harness: Harness, path: str, table: str, statement: str
) -> None:
    """``FLOOD`` requests at once while the table their read needs is locked (the read
    waits, as a slow scan of a big table would): one statement waits on the lock, not
    one per request; once the lock goes, every request is answered."""
    assert harness.server is not None
    url = harness.server.url + path
    database = harness.web_settings.database_url
    async with await psycopg.AsyncConnection.connect(database) as locker:
        await locker.execute("BEGIN")
        await locker.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        async with aiohttp.ClientSession() as session:

            async def one() -> int:
                async with session.get(url) as reply:
                    await reply.read()
                    return reply.status

            requests = [asyncio.ensure_future(one()) for _ in range(FLOOD)]

            async def all_connected() -> bool:  # every request is in the web process
                connections = REGISTRY.get_sample_value("agent_bridge_http_connections")
                return (connections or 0) >= FLOOD

            async def waiting_on_the_lock() -> int | None:
                async with await psycopg.AsyncConnection.connect(database) as conn:
                    cursor = await conn.execute(
                        "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = "
                        "current_database() AND wait_event_type = 'Lock' AND query = %s",
                        (statement,),
                    )
                    row = await cursor.fetchone()
                return int(row[0]) if row and row[0] else None

            await harness.wait_for(all_connected)
            assert await harness.wait_for(waiting_on_the_lock) == 1
            await locker.execute("ROLLBACK")
            statuses = await asyncio.gather(*requests)
    assert set(statuses) <= {200, 503} and len(statuses) == FLOOD


async def test_a_client_scraping_in_a_loop_reads_the_database_once_per_interval(
    pg_backend: Backend,
) -> None:
    """One after another, not at once: ``SharedCall`` alone would read the whole runs
    table for each; within ``DATABASE_READ_INTERVAL_S`` the figures last read answer."""
    now = [0.0]
    app = web.Application()
    app.router.add_get(METRICS_PATH, metrics_handler(pg_backend.db, clock=lambda: now[0]))
    store = ApprovalStore(pg_backend.db)

    async def runs(client: TestClient[web.Request, web.Application]) -> float:
        async with client.get(METRICS_PATH) as reply:
            text = await reply.text()
        return sum(
            sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name == "agent_bridge_runs"
        )

    async with TestClient(TestServer(app)) as client:
        first = await runs(client)
        await store.create_run(
            Run(run_id="r1", thread_id="t1", task="t", channel_id="C1", user_id="U1")
        )
        assert [await runs(client) for _ in range(20)] == [first] * 20
        now[0] += DATABASE_READ_INTERVAL_S
        assert await runs(client) == first + 1

"""``/metrics`` and ``/readyz`` answer anyone who reaches the web process's port, and each
answer reads the database: a flood of them holds one of the web pool's connections, not
one each, so the clicks still record with the rest (``bot.shared_call``)."""

from __future__ import annotations

import asyncio

import aiohttp
import psycopg
import pytest
from prometheus_client import REGISTRY

from agent_bridge.migrations import SELECT_VERSION
from agent_bridge.state_counts import COUNT_RUNS_BY_STATE
from bot.metrics_http import METRICS_PATH
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

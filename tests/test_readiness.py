"""``/healthz`` and ``/readyz`` of the running web process, with each dependency down.

The web app is the harness's (real PostgreSQL, Redis and the sandbox Slack) or a second
``start_web`` on the same parts with one dependency pointed somewhere dead: a Redis port
nothing listens on, a closed database pool, a database without migrations, Slack
answering 500.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from agent_bridge.backend import open_backend
from agent_bridge.store import ApprovalStore
from bot.processes import WebServer, start_web
from tests import services
from tests.harness import Harness

DEAD_REDIS = "redis://127.0.0.1:1/0"


async def get(url: str) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as session, session.get(url) as reply:
        return reply.status, await reply.json()


@pytest.fixture
async def web_on(harness: Harness) -> AsyncIterator[Any]:
    """Start a second web app on the harness's parts, with some replaced."""
    servers: list[WebServer] = []

    async def start(*, store: ApprovalStore | None = None, redis_url: str | None = None) -> str:
        settings = harness.web_settings
        if redis_url is not None:
            settings = settings.model_copy(update={"redis_url": redis_url})
        server = await start_web(
            settings=settings,
            store=store or harness.web_store,
            bus=harness.web_bus,
            client=harness.client,
            deduper=harness.deduper,
            host="127.0.0.1",
            port=0,
        )
        servers.append(server)
        return server.url

    yield start
    for server in servers:
        await server.stop()


async def test_ready_when_every_dependency_answers(harness: Harness) -> None:
    assert harness.server is not None
    status, body = await get(harness.server.url + "/readyz")
    assert (status, body["ready"]) == (200, True)
    assert body["checks"] == {"database": "ok", "migrations": "ok", "redis": "ok", "slack": "ok"}
    assert await get(harness.server.url + "/healthz") == (200, {"ok": True})


async def test_redis_down_is_a_503_naming_redis(web_on: Any) -> None:
    url = await web_on(redis_url=DEAD_REDIS)
    status, body = await get(url + "/readyz")
    assert status == 503
    assert body["failed"] == ["redis"]
    assert body["checks"]["redis"].startswith("unreachable")
    assert "127.0.0.1" not in str(body)  # no host, port or URL in the answer
    assert (await get(url + "/healthz"))[0] == 200  # the process is up


async def test_database_down_is_a_503_naming_database(harness: Harness, web_on: Any) -> None:
    backend = await open_backend(harness.web_settings.database_url)
    await backend.close()  # every statement on it now fails as an outage
    url = await web_on(store=ApprovalStore(backend.db))
    status, body = await get(url + "/readyz")
    assert status == 503
    assert set(body["failed"]) == {"database", "migrations"}
    assert body["checks"]["database"].startswith("unreachable")
    assert (await get(url + "/healthz"))[0] == 200


async def test_migrations_behind_is_a_503_naming_migrations(web_on: Any) -> None:
    name = services.unique_name("agent_bridge_unmigrated")
    backend = await open_backend(services.recreate_database(name))
    try:
        url = await web_on(store=ApprovalStore(backend.db))
        status, body = await get(url + "/readyz")
        assert status == 503
        assert body["failed"] == ["migrations"]
        assert "agent-bridge release" in body["checks"]["migrations"]
    finally:
        await backend.close()
        services.drop_database(name)


async def test_slack_down_is_a_503_naming_slack_until_it_answers(harness: Harness) -> None:
    """``/readyz`` answers anyone: a failed ``auth.test`` is reused for
    ``SLACK_FAILURE_TTL_S``, so a loop of probes asks Slack once per that, not per probe."""
    assert harness.server is not None
    url = harness.server.url + "/readyz"
    harness.sandbox.fail_next("auth.test", status=500)
    asked = len([c for c in harness.sandbox.calls if c["method"] == "auth.test"])
    status, body = await get(url)
    assert (status, body["failed"]) == (503, ["slack"])
    assert body["checks"]["slack"] == "unavailable: HTTP 500"
    # Probes in a row meanwhile reuse that answer: one auth.test, not one each.
    for _ in range(5):
        assert (await get(url))[1]["checks"]["slack"] == "unavailable: HTTP 500"

    async def ready_again() -> bool:  # Slack answers again: asked once the answer is old
        return (await get(url))[0] == 200

    await harness.wait_for(ready_again)
    assert len([c for c in harness.sandbox.calls if c["method"] == "auth.test"]) - asked == 2


@pytest.mark.parametrize(
    ("code", "check"), [("fatal_error", "unavailable: fatal_error"), ("invalid_auth", "refused")]
)
async def test_slacks_passing_error_reads_as_unavailable_and_a_refusal_as_refused(
    harness: Harness, code: str, check: str
) -> None:
    """Slack answers both ``ok: false`` with HTTP 200: its own passing trouble is an
    outage to wait out, a refused token is the admin's to fix."""
    assert harness.server is not None
    harness.sandbox.fail_next("auth.test", status=200, error=code)
    status, body = await get(harness.server.url + "/readyz")
    assert (status, body["failed"]) == (503, ["slack"])
    assert body["checks"]["slack"].startswith(check)

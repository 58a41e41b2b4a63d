"""Fixtures: real PostgreSQL and Redis per test, the Slack sandbox, and the running app."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import hypothesis
import pytest
import redis

from agent_bridge.backend import Backend, open_backend
from agent_bridge.redis_bus import RedisBus
from agent_bridge.settings import WebConfig, WorkerConfig
from agent_bridge.store import ApprovalStore
from tests import services
from tests.agent_server import AgentServer, served_config, start_agent_server, stop_agent_server
from tests.harness import OPEN_POLICY, TEST_BOT_TOKEN, TEST_SIGNING_SECRET, Harness

# Property tests draw the same examples on every run (hypothesis' ``derandomize``): a
# new counterexample is found by a developer widening a search, never by chance in CI.
hypothesis.settings.register_profile("repeatable", derandomize=True)
hypothesis.settings.load_profile("repeatable")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Stop the run at once, saying how to start them, if PostgreSQL or Redis does not
    answer. Checked by the process that runs the others (pytest-xdist's controller) or
    by the only one: an exit inside a worker would end as an INTERNALERROR."""
    if hasattr(session.config, "workerinput"):
        return
    problem = services.check_services()
    if problem:
        pytest.exit(problem, returncode=3)


@pytest.fixture(scope="session")
def template_db() -> Iterator[str]:
    """A migrated template database (store and checkpointer), made once per session."""
    url = services.recreate_database(services.TEMPLATE_DB)

    async def migrate() -> None:
        backend = await open_backend(url)
        try:
            await backend.release()
        finally:
            await backend.close()

    # In a thread of its own: an async test's event loop may already be running here.
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, migrate()).result()
    yield services.TEMPLATE_DB
    services.drop_database(services.TEMPLATE_DB)


@pytest.fixture
def pg_url(template_db: str) -> Iterator[str]:
    """URL of a fresh migrated PostgreSQL database for this test only."""
    name = services.unique_name("agent_bridge_test")
    yield services.recreate_database(name, template=template_db)
    services.drop_database(name)


@pytest.fixture
async def pg_backend(pg_url: str) -> AsyncIterator[Backend]:
    """The store's database and LangGraph's ``AsyncPostgresSaver`` on this test's database."""
    backend = await open_backend(pg_url)
    yield backend
    await backend.close()


@pytest.fixture
def redis_bus_url(template_db: str) -> str:
    """The tests' Redis database, flushed."""
    redis.Redis.from_url(services.redis_url()).flushdb()
    return services.redis_url()


@pytest.fixture
async def bus(redis_bus_url: str) -> AsyncIterator[RedisBus]:
    """A Redis bus on a channel of this test's own."""
    bus = RedisBus(redis_bus_url, channel=services.unique_name("signals"))
    await bus.subscribe()
    yield bus
    await bus.close()


@pytest.fixture
def settings(tmp_path: Path, pg_url: str) -> WorkerConfig:
    """The workers' settings: real PostgreSQL and Redis, demo agent and policy."""
    return WorkerConfig(
        slack_bot_token=TEST_BOT_TOKEN,
        database_url=pg_url,
        redis_url=services.redis_url(),
        workspace_dir=tmp_path / "workspace",
        policy=OPEN_POLICY,
        poll_interval_s=0.5,
        lease_s=30.0,
    )


@pytest.fixture
def agent_settings(settings: WorkerConfig) -> WorkerConfig:
    """The worker settings the harness runs with; a test module overrides it to bring its
    agent."""
    return settings


@pytest.fixture
def web_settings(pg_url: str) -> WebConfig:
    """The web app's settings: the same database and Redis; a test module overrides it
    (e.g. ``CHANNEL_AGENTS``)."""
    return WebConfig(
        slack_signing_secret=TEST_SIGNING_SECRET,
        slack_bot_token=TEST_BOT_TOKEN,
        database_url=pg_url,
        redis_url=services.redis_url(),
    )


@pytest.fixture
def channel(redis_bus_url: str) -> str:
    """A Redis pub/sub channel of this test's own (the Redis database is flushed)."""
    return services.unique_name("signals")


@pytest.fixture
def harness_options() -> dict[str, Any]:
    """Extra ``Harness`` arguments; a test module overrides it (e.g. two workers)."""
    return {}


@pytest.fixture
async def harness(
    agent_settings: WorkerConfig,
    web_settings: WebConfig,
    pg_backend: Backend,
    channel: str,
    harness_options: dict[str, Any],
) -> AsyncIterator[Harness]:
    """Sandbox + web app + worker, running; every Slack call checked for violations."""
    harness = Harness(
        settings=agent_settings,
        web_settings=web_settings,
        backend=pg_backend,
        store=ApprovalStore(pg_backend.db),
        channel=channel,
        **harness_options,
    )
    await harness.start()
    try:
        yield harness
    finally:
        await harness.stop()
    assert harness.sandbox.violations == []


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[ApprovalStore]:
    """A migrated SQLite approval store in this test's folder (fast unit tests)."""
    backend = await open_backend(f"sqlite:///{tmp_path / 'store.db'}")
    await backend.release()
    yield ApprovalStore(backend.db)
    await backend.close()


@pytest.fixture(scope="session")
def agent_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentServer]:
    """A real LangGraph Agent Server (``langgraph dev`` of the repository's
    ``langgraph.json`` and the tests' graphs, ``tests/agent_server.py``) on a free port,
    started by the first test that needs it and answering before it runs; stopped after
    the session."""
    folder = tmp_path_factory.mktemp("agent-server")
    server = start_agent_server(folder, served_config(folder))
    try:
        yield server
    finally:
        stop_agent_server(server)

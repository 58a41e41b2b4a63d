"""The stage a benchmark runs on: a fresh database, settings, and the product started.

Everything as the end-to-end tests have it (``tests.harness``): the sandbox Slack, the
web app on a real socket, workers in this process or real worker processes, the real
PostgreSQL and Redis (``DATABASE_URL`` / ``REDIS_URL``, as for the tests).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_bridge.backend import Backend, open_backend
from agent_bridge.settings import WebConfig, WorkerConfig
from agent_bridge.store import ApprovalStore
from bench.agent import AGENT, POLICY
from tests import services
from tests.harness import TEST_BOT_TOKEN, TEST_SIGNING_SECRET, Harness


@dataclass
class Stage:
    """An open database and the settings of the product's processes on it."""

    settings: WorkerConfig
    web_settings: WebConfig
    backend: Backend
    store: ApprovalStore
    workspace: Path

    def harness(self, *, workers: int, users: dict[str, str] | None = None) -> Harness:
        """The product on this stage: the sandbox (with ``users``), the web app, and
        ``workers`` in-process workers (0: none; ``bench.workers`` starts processes)."""
        return Harness(
            settings=self.settings,
            web_settings=self.web_settings,
            backend=self.backend,
            store=self.store,
            channel=services.unique_name("bench"),
            workers=workers,
            users=users,
        )


@contextlib.asynccontextmanager
async def running(harness: Harness) -> AsyncIterator[Harness]:
    """``harness`` started, and stopped on exit."""
    await harness.start()
    try:
        yield harness
    finally:
        await harness.stop()


def agent_settings(database_url: str, workspace: Path, **more: Any) -> WorkerConfig:
    """A worker's settings for the benchmark agent (``bench.agent``) on ``database_url``,
    writing under ``workspace``; ``more`` settings besides (``redis_url``...)."""
    return WorkerConfig(
        slack_bot_token=TEST_BOT_TOKEN,
        database_url=database_url,
        workspace_dir=workspace,
        agent=AGENT,
        policy=POLICY,
        **more,
    )


@contextlib.asynccontextmanager
async def stage() -> AsyncIterator[Stage]:
    """A fresh, migrated database and workspace (both removed on exit) and the benchmark
    agent's settings.

    Raises:
        SystemExit: If PostgreSQL or Redis does not answer (with how to start them).
    """
    problem = services.check_services()
    if problem:
        raise SystemExit(problem)
    name = services.unique_name("agent_bridge_bench")
    url = services.recreate_database(name)
    workspace = Path(tempfile.mkdtemp(prefix="bench-"))
    settings = agent_settings(url, workspace, redis_url=services.redis_url())
    web_settings = WebConfig(
        slack_signing_secret=TEST_SIGNING_SECRET,
        slack_bot_token=TEST_BOT_TOKEN,
        database_url=url,
        redis_url=services.redis_url(),
    )
    backend = await open_backend(url)
    try:
        await backend.release()
        yield Stage(
            settings=settings,
            web_settings=web_settings,
            backend=backend,
            store=ApprovalStore(backend.db),
            workspace=workspace,
        )
    finally:
        await backend.close()
        services.drop_database(name)
        shutil.rmtree(workspace, ignore_errors=True)

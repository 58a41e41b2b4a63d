"""The composition root: wiring settings into the ``web``, ``worker`` and ``release`` processes.

This is the one place where ``agent_bridge`` parts and ``bot`` parts meet. Each
``start_*``/``build_*`` takes its parts as arguments so tests and the demo can pass
their own (a sandbox client, a test database) without touching imports.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web
from langchain_core.language_models import BaseChatModel
from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_sdk.web.async_client import AsyncWebClient

from agent_bridge.agent import build_agent, load_model, load_tools
from agent_bridge.arguments import tool_args_schema
from agent_bridge.backend import Backend, open_backend
from agent_bridge.bus import Bus, InProcessBus
from agent_bridge.expiry import ExpiryKeeper
from agent_bridge.migrations import check_version
from agent_bridge.pacing import Pacer
from agent_bridge.policy_file import load_policy
from agent_bridge.redis_bus import RedisBus, signal_channel
from agent_bridge.redis_pacing import RedisPacer
from agent_bridge.row_estimate import RowEstimator
from agent_bridge.run_driver import RunDriver
from agent_bridge.run_failure import RunFailures
from agent_bridge.settings import (
    ProcessConfig,
    ReleaseSettings,
    WebConfig,
    WebSettings,
    WorkerConfig,
    WorkerSettings,
)
from agent_bridge.store import ApprovalStore
from agent_bridge.worker import Worker
from bot.app import create_app, create_web_app
from bot.card_owner import CardOwner
from bot.dedupe import Deduper, MemoryDeduper, RedisDeduper
from bot.directory import Directory
from bot.installations import InstallationStore
from bot.oauth_install import OAuthInstall
from bot.oauth_states import OAuthStateStore
from bot.slack_client import installation_of_token, make_client, open_session
from bot.slack_gateway import Slack, SlackGateway, single_workspace
from bot.slack_notifier import SlackNotifier
from bot.workspaces import TeamClients

logger = logging.getLogger(__name__)

WEB_DB_TIMEOUT_S = 2.0
"""The web process waits at most this long for a database connection, seconds, so a
database outage is reported on the modal within Slack's 3 s deadline."""


@dataclass
class WebServer:
    """A running web process: its aiohttp runner and its base URL."""

    runner: web.AppRunner
    url: str

    async def stop(self) -> None:
        """Stop serving."""
        await self.runner.cleanup()


async def start_web(
    *,
    settings: WebConfig,
    store: ApprovalStore,
    bus: Bus,
    client: AsyncWebClient,
    deduper: Deduper,
    host: str | None = None,
    port: int | None = None,
    directory: Callable[[Slack], Directory] | None = None,
) -> WebServer:
    """Serve the Bolt app on ``host:port`` (``port`` 0: any free port); ``directory``
    builds its user-group resolver (tests move its clock). With one bot token its
    installation is resolved (``auth.test``) before serving, so no request waits for it;
    with OAuth (``SLACK_CLIENT_ID``) each request's is read from the database.

    Returns:
        The running server; ``url`` is e.g. ``http://127.0.0.1:3000``.

    Raises:
        ConfigurationError: Slack refused the bot token or could not be reached.
    """
    oauth = oauth_settings(settings, store) if settings.oauth else None
    bolt_app = create_app(
        signing_secret=settings.slack_signing_secret,
        installation=None if oauth else await installation_of_token(client),
        oauth=oauth,
        store=store,
        bus=bus,
        client=client,
        deduper=deduper,
        channel_agents=settings.channel_agents,
        **({"directory": directory} if directory else {}),
    )
    runner = web.AppRunner(
        create_web_app(bolt_app, signing_secret=settings.slack_signing_secret), access_log=None
    )
    await runner.setup()
    sock = socket.create_server((host or settings.host, settings.port if port is None else port))
    await web.SockSite(runner, sock).start()
    bound_host, bound_port = sock.getsockname()[:2]
    shown = "127.0.0.1" if bound_host in ("0.0.0.0", "::") else bound_host
    return WebServer(runner=runner, url=f"http://{shown}:{bound_port}")


def build_worker(
    *,
    settings: WorkerConfig,
    store: ApprovalStore,
    bus: Bus,
    backend: Backend,
    client: AsyncWebClient,
    model: BaseChatModel | None = None,
) -> Worker:
    """Return a worker running the configured agent (``AGENT``, ``MODEL``, ``POLICY``);
    ``model``, when given, is used instead of ``MODEL``'s (a test's own chat model).

    Raises:
        ConfigurationError: If the agent, model or policy cannot be loaded.
    """
    policy = load_policy(settings.policy)
    tools = load_tools(settings)
    graph = build_agent(
        tools=tools,
        model=model or load_model(settings.model),
        policy=policy,
        checkpointer=backend.checkpointer,
    )
    slack = (
        SlackGateway(
            TeamClients(
                InstallationStore(store.db), base_url=client.base_url, session=client.session
            ).client_for
        )
        if settings.oauth
        else single_workspace(client)
    )
    cards = CardOwner(store=store, slack=slack)
    notifier = SlackNotifier(slack=slack, cards=cards)
    driver = RunDriver(
        store=store,
        graph=graph,
        notifier=notifier,
        policy=policy,
        args_schemas={t.name: tool_args_schema(t) for t in tools},
        approvals_channel=settings.approvals_channel,
        estimator=RowEstimator(workspace_dir=settings.workspace_dir),
    )
    pacer = open_pacer(settings)  # one budget for the background Slack calls of all workers
    return Worker(
        store=store,
        bus=bus,
        driver=driver,
        failures=RunFailures(store=store, notifier=notifier),
        expiry=ExpiryKeeper(store=store, notifier=notifier, pacer=pacer),
        pacer=pacer,
        agent_name=settings.agent_name,
        poll_interval_s=settings.poll_interval_s,
        lease_s=settings.lease_s,
        max_concurrent_runs=settings.max_concurrent_runs,
        start_rules=policy.start_rules(),
    )


def oauth_settings(settings: WebConfig, store: ApprovalStore) -> AsyncOAuthSettings:
    """Bolt's OAuth settings of ``settings`` (OAuth mode), with installations and states
    kept in ``store``'s database."""
    install = OAuthInstall(
        client_id=settings.slack_client_id or "",
        client_secret=settings.slack_client_secret or "",
        api_url=settings.slack_api_url,
        redirect_uri=settings.slack_redirect_uri,
    )
    return install.settings(
        installations=InstallationStore(store.db, clock=store.clock),
        states=OAuthStateStore(store.db, clock=store.clock),
    )


def open_deduper(settings: ProcessConfig) -> Deduper:
    """Return the Redis event de-duplicator when ``REDIS_URL`` is set, else an in-memory one."""
    return RedisDeduper(settings.redis_url) if settings.redis_url else MemoryDeduper()


def open_bus(settings: ProcessConfig) -> Bus:
    """Return the Redis bus when ``REDIS_URL`` is set, on the deployment's channel
    (``SIGNAL_CHANNEL``, else named after ``DATABASE_URL``), else the in-process one."""
    if not settings.redis_url:
        return InProcessBus()
    return RedisBus(settings.redis_url, channel=deployment_of(settings))


def open_pacer(settings: ProcessConfig) -> Pacer:
    """Return the pacer of background Slack calls: shared by the deployment's workers
    through Redis when ``REDIS_URL`` is set (``RedisPacer``), else this process's own."""
    if not settings.redis_url:
        return Pacer()
    return RedisPacer(settings.redis_url, deployment=deployment_of(settings))


def deployment_of(settings: ProcessConfig) -> str:
    """The deployment's name in Redis: ``SIGNAL_CHANNEL``, else named after
    ``DATABASE_URL`` (``agent_bridge.redis_bus.signal_channel``)."""
    return settings.signal_channel or signal_channel(settings.database_url)


def stop_on_signals() -> asyncio.Event:
    """Return an event set by SIGINT or SIGTERM (a Procfile process's stop)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


async def run_web(settings: WebSettings) -> None:
    """The ``web`` process: serve until SIGINT/SIGTERM."""
    backend = await open_backend(settings.database_url, timeout_s=WEB_DB_TIMEOUT_S)
    bus = open_bus(settings)
    deduper = open_deduper(settings)
    session = open_session()
    try:
        await check_version(backend.db)
        server = await start_web(
            settings=settings,
            store=ApprovalStore(backend.db),
            bus=bus,
            client=make_client(
                token=settings.slack_bot_token, base_url=settings.slack_api_url, session=session
            ),
            deduper=deduper,
        )
        logger.info("web listening on %s", server.url)
        await stop_on_signals().wait()
        await server.stop()
    finally:
        await session.close()
        await deduper.close()
        await bus.close()
        await backend.close()


async def run_worker(settings: WorkerSettings) -> None:
    """The ``worker`` process: advance runs until SIGINT/SIGTERM."""
    backend = await open_backend(settings.database_url)
    bus = open_bus(settings)
    session = open_session()
    try:
        await check_version(backend.db)
        store = ApprovalStore(backend.db)
        client = make_client(
            token=settings.slack_bot_token, base_url=settings.slack_api_url, session=session
        )
        worker = build_worker(
            settings=settings, store=store, bus=bus, backend=backend, client=client
        )
        logger.info("worker %s started", worker.owner)
        await worker.run(stop_on_signals())
    finally:
        await session.close()
        await bus.close()
        await backend.close()


async def run_release(settings: ReleaseSettings) -> int:
    """The ``release`` step: apply migrations; return the store's schema version."""
    backend = await open_backend(settings.database_url)
    try:
        return await backend.release()
    finally:
        await backend.close()

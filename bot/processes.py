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

from agent_bridge import heap
from agent_bridge.agent import assemble_agent
from agent_bridge.backend import Backend, open_backend
from agent_bridge.bus import Bus, InProcessBus
from agent_bridge.errors import AgentServerUnavailableError
from agent_bridge.expiry import ExpiryKeeper
from agent_bridge.migrations import check_version
from agent_bridge.pacing import Pacer
from agent_bridge.policy_file import load_policy
from agent_bridge.pruning import CheckpointPruner
from agent_bridge.redis_bus import RedisBus, signal_channel
from agent_bridge.redis_pacing import RedisPacer
from agent_bridge.remote_agent import RemoteAgent
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
from bot.acked_work import AckedWork
from bot.app import create_app, create_web_app
from bot.card_owner import CardOwner
from bot.connections import ConnectionLimit, GuardedSite, descriptor_bound, quiet_accept_errors
from bot.dedupe import Deduper, MemoryDeduper, RedisDeduper
from bot.directory import Directory
from bot.guard import Guard
from bot.home import HomePublisher
from bot.http_limits import DEFAULT_LIMITS, HttpLimits
from bot.installations import InstallationStore
from bot.manifest import BOT_SCOPES
from bot.metrics_http import METRICS_PATH, MetricsServer, metrics_handler, start_metrics_server
from bot.oauth_install import OAuthInstall
from bot.oauth_states import OAuthStateStore
from bot.readiness import READY_PATH, Readiness
from bot.slack_client import installation_of_token, make_client, open_session
from bot.slack_gateway import Slack, SlackGateway, single_workspace
from bot.slack_notifier import SlackNotifier
from bot.socket_mode import PING_INTERVAL_S, SocketModeConnection, connect_socket_mode
from bot.workspaces import TeamClients

logger = logging.getLogger(__name__)

WEB_DB_TIMEOUT_S = 2.0
"""The web process waits at most this long for a database connection, seconds, so a
database outage is reported on the modal within Slack's 3 s deadline."""


IN_FLIGHT_STOP_S = 5.0
"""How long a stopping web process lets requests it has not answered yet finish,
seconds (Slack waits 3 s for an answer; aiohttp's ``shutdown_timeout``)."""
ACKED_WORK_STOP_S = 20.0
"""How long a stopping web process lets the work of acked requests finish, seconds:
with ``IN_FLIGHT_STOP_S``, inside the 30 s a platform gives between SIGTERM and SIGKILL
(Heroku, Kubernetes' default ``terminationGracePeriodSeconds``)."""


@dataclass
class WebServer:
    """A running web process: its aiohttp runner, its base URL, its client connections'
    bound, its readiness checks, the work of the requests it has acked
    (``bot.acked_work``) and, in Socket Mode, its connection to Slack."""

    runner: web.AppRunner
    url: str
    connections: ConnectionLimit
    readiness: Readiness
    acked: AckedWork
    socket_mode: SocketModeConnection | None = None

    async def stop(self) -> list[str]:
        """Stop taking Slack's deliveries and requests: Socket Mode's connection once the
        envelopes it received are acked (``IN_FLIGHT_STOP_S``; what arrives meanwhile is
        not handled), then the listening socket, letting the requests being answered
        finish (``IN_FLIGHT_STOP_S``); then let the work of every acked one finish
        (``ACKED_WORK_STOP_S``), so an acked click's decision is recorded before the
        process exits. In Socket Mode the listening socket serves only ``/healthz``,
        ``/readyz`` and ``/metrics``, so the two waits do not add up.

        Returns:
            The acked requests whose work had not ended in time (logged as errors).
        """
        if self.socket_mode is not None:
            await self.socket_mode.stop(IN_FLIGHT_STOP_S)
        await self.runner.cleanup()
        unfinished = await self.acked.drain(ACKED_WORK_STOP_S)
        await self.readiness.close()
        return unfinished


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
    ping_interval_s: float = PING_INTERVAL_S,
    limits: HttpLimits = DEFAULT_LIMITS,
) -> WebServer:
    """Serve the Bolt app on ``host:port`` (``port`` 0: any free port), with
    ``/healthz``, ``/readyz`` and ``/metrics``; ``directory`` builds its user-group
    resolver (tests move its clock); ``limits`` bound what a client may hold
    (``bot.http_limits``, ``bot.connections``). With one bot token its installation is
    resolved (``auth.test``) before serving, so no request waits for it; with OAuth
    (``SLACK_CLIENT_ID``) each request's is read from the database and ``GET
    /slack/install`` and ``GET /slack/oauth_redirect`` are served. With
    ``settings.slack_app_token`` the app takes Slack's deliveries over Socket Mode
    (``bot.socket_mode``, pinging every ``ping_interval_s``) and ``host:port`` serves
    only the health, readiness and metrics endpoints (and OAuth's install routes).

    Returns:
        The running server; ``url`` is e.g. ``http://127.0.0.1:3000``.

    Raises:
        ConfigurationError: Slack refused the bot or app-level token or could not be
            reached.
    """
    oauth = oauth_settings(settings, store) if settings.oauth else None
    bolt_app = create_app(
        signing_secret=settings.slack_signing_secret,
        installation=None if oauth else await installation_of_token(client, needs=BOT_SCOPES),
        oauth=oauth,
        store=store,
        bus=bus,
        client=client,
        deduper=deduper,
        channel_agents=settings.channel_agents,
        **({"directory": directory} if directory else {}),
    )
    acked = AckedWork.watch(bolt_app)
    socket_mode = None
    if settings.slack_app_token is not None:
        socket_mode = await connect_socket_mode(
            bolt_app, app_token=settings.slack_app_token, ping_interval_s=ping_interval_s
        )
    web_app = create_web_app(
        bolt_app,
        signing_secret=settings.slack_signing_secret,
        serve_events=socket_mode is None,
        body_read_timeout_s=limits.body_read_timeout_s,
    )
    connections = ConnectionLimit(max_connections=descriptor_bound(limits.max_connections))
    web_app.middlewares.append(connections.middleware)
    readiness = Readiness(db=store.db, redis_url=settings.redis_url, client=client)
    web_app.router.add_get(READY_PATH, readiness.handle)
    web_app.router.add_get(METRICS_PATH, metrics_handler(store.db))
    quiet_accept_errors()
    runner = web.AppRunner(
        web_app,
        access_log=None,
        keepalive_timeout=limits.header_read_timeout_s,
        shutdown_timeout=IN_FLIGHT_STOP_S,
    )
    await runner.setup()
    sock = socket.create_server((host or settings.host, settings.port if port is None else port))
    await GuardedSite(runner, sock, limit=connections).start()
    bound_host, bound_port = sock.getsockname()[:2]
    shown = "127.0.0.1" if bound_host in ("0.0.0.0", "::") else bound_host
    return WebServer(
        runner=runner,
        url=f"http://{shown}:{bound_port}",
        connections=connections,
        readiness=readiness,
        acked=acked,
        socket_mode=socket_mode,
    )


def build_worker(
    *,
    settings: WorkerConfig,
    store: ApprovalStore,
    bus: Bus,
    backend: Backend,
    client: AsyncWebClient,
    model: BaseChatModel | None = None,
) -> Worker:
    """Return a worker running the configured agent (``AGENT``, ``MODEL``, ``POLICY``,
    ``SYSTEM_PROMPT``); ``model``, when given, is used instead of ``MODEL``'s (a test's
    own chat model) for a list of tools. With ``AGENT_URL`` the agent is the assistant
    ``ASSISTANT_ID`` on that LangGraph Agent Server (``agent_bridge.remote_agent``); its
    threads are also looked at by the sweep (``Worker(paused_threads=...)``).

    Raises:
        ConfigurationError: If the agent, model or policy cannot be loaded, or do not go
            together (``agent_bridge.agent.assemble_agent``).
    """
    agent = assemble_agent(
        settings=settings,
        policy=load_policy(settings.policy),
        checkpointer=backend.checkpointer,
        model=model,
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
    home = HomePublisher(
        store=store, slack=slack, guard=Guard(store=store, directory=Directory(slack=slack))
    )
    cards = CardOwner(store=store, slack=slack, on_change=home.request_changed)
    notifier = SlackNotifier(slack=slack, cards=cards)
    driver = RunDriver(
        store=store,
        graph=agent.graph,
        notifier=notifier,
        policy=agent.policy,
        args_schemas=agent.args_schemas,
        approvals_channel=settings.approvals_channel,
        estimator=RowEstimator(workspace_dir=settings.workspace_dir),
        progress=notifier.progress,
        deployed=isinstance(agent.graph, RemoteAgent),
        when_rules=agent.when_rules,
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
        start_rules=agent.policy.start_rules(),
        stop_grace_s=settings.stop_grace_s,
        paused_threads=agent.graph if isinstance(agent.graph, RemoteAgent) else None,
    )


async def check_agent_server(worker: Worker) -> None:
    """With ``AGENT_URL``, ask the server once whether it serves ``ASSISTANT_ID`` to
    this worker (``RemoteAgent.check``), before any run is driven. A server that does
    not answer yet is only warned of: it may start after the worker, and runs wait,
    queued, until it answers (each sweep retries them).

    Raises:
        ConfigurationError: ``ASSISTANT_ID``, ``AGENT_URL``'s path or
            ``LANGGRAPH_API_KEY`` is wrong (the message names which).
    """
    graph = worker.driver.graph
    if not isinstance(graph, RemoteAgent):
        return
    try:
        await graph.check()
    except AgentServerUnavailableError as exc:
        logger.warning(
            "AGENT_URL does not answer at start (%s); runs wait until it does. If this "
            "lasts, check AGENT_URL (http or https, host, port) and the server",
            exc,
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
        installations=InstallationStore(store.db, clock=store.clock, required_scopes=BOT_SCOPES),
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
        stop = stop_on_signals()  # before serving: a SIGTERM from here on drains
        frozen = heap.freeze_startup_objects()  # before serving: no click waits on it
        server = await start_web(
            settings=settings,
            store=ApprovalStore(backend.db),
            bus=bus,
            client=make_client(
                token=settings.slack_bot_token, base_url=settings.slack_api_url, session=session
            ),
            deduper=deduper,
        )
        via = "Socket Mode" if server.socket_mode else f"POST {server.url}/slack/events"
        logger.info(
            "web listening on %s; Slack's deliveries via %s (%d startup objects frozen)",
            server.url,
            via,
            frozen,
        )
        await stop.wait()
        logger.info("web stopping: no new requests; finishing those already acked")
        await server.stop()
        logger.info("web stopped")
    finally:
        await session.close()
        await deduper.close()
        await bus.close()
        await backend.close()


async def run_worker(settings: WorkerSettings) -> None:
    """The ``worker`` process: advance runs, and prune finished runs' old checkpoints
    (``CHECKPOINT_RETENTION_DAYS``), until SIGINT/SIGTERM.

    Raises:
        ConfigurationError: Slack refused ``SLACK_BOT_TOKEN`` at start (``auth.test``, as
            the web process asks it), or the database's schema is behind.
    """
    backend = await open_backend(
        settings.database_url, prepared_statements=settings.database_prepared_statements
    )
    bus = open_bus(settings)
    session = open_session()
    served: MetricsServer | None = None
    try:
        await check_version(backend.db)
        store = ApprovalStore(backend.db)
        client = make_client(
            token=settings.slack_bot_token, base_url=settings.slack_api_url, session=session
        )
        worker = build_worker(
            settings=settings, store=store, bus=bus, backend=backend, client=client
        )
        pruner = CheckpointPruner(
            db=backend.db,
            checkpointer=backend.checkpointer,
            # a deployed agent's checkpoints are its Agent Server's, kept by its own TTL
            retention_days=0 if settings.agent_url else settings.checkpoint_retention_days,
            agent=settings.agent_name,
        )
        await check_agent_server(worker)
        if not settings.oauth:  # a refused token would fail every run later, out of sight
            await installation_of_token(client, needs=BOT_SCOPES)
        logger.info("worker %s started", worker.owner)
        if settings.metrics_port is not None:
            served = await start_metrics_server(host="0.0.0.0", port=settings.metrics_port)
            logger.info("worker metrics on port %d%s", served.port, METRICS_PATH)
        stop = stop_on_signals()
        logger.info("worker ready: %d startup objects frozen", heap.freeze_startup_objects())
        await asyncio.gather(worker.run(stop), pruner.run(stop))
    finally:
        if served is not None:
            await served.stop()
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

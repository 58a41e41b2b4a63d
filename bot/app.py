"""The web process: a Bolt ``AsyncApp`` over HTTP.

``POST /slack/events`` receives slash commands, ``block_actions`` and
``view_submission`` (Bolt verifies every request's signature and answers 401 to a
forged or stale one); ``GET /healthz`` answers 200 for load balancers.

With one bot token (the default) Bolt authorizes every request with the installation
resolved at process start (``bot.slack_client.installation_of_token``), never with an
``auth.test`` on the first request's path (Bolt's single-workspace default), so the first
click after a start is acked as fast as any other. With OAuth (``bot.oauth_install``)
each request is authorized with its workspace's stored installation, ``GET
/slack/install`` and ``GET /slack/oauth_redirect`` run Bolt's install flow, and every Web
API call uses the token of the workspace it is for (``bot.workspaces``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import parse_qs

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.oauth.async_oauth_flow import AsyncOAuthFlow
from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from agent_bridge.bus import Bus
from agent_bridge.inbox import Inbox
from agent_bridge.logs import REFUSALS_LOGGER
from agent_bridge.opened_views import OpenedViews
from agent_bridge.store import ApprovalStore
from bot.actions import ActionListeners
from bot.actor_context import bind_actor
from bot.card_owner import CardOwner
from bot.conversations import ConversationListeners
from bot.dedupe import DedupeMiddleware, Deduper
from bot.directory import Directory
from bot.groups import GroupListeners
from bot.guard import Guard
from bot.home import HomePublisher
from bot.http_limits import BODY_READ_TIMEOUT_S, MAX_BODY_BYTES
from bot.manifest import EVENTS_PATH as EVENTS_PATH
from bot.oauth_install import StoreAuthorize, bolt_options, oauth_gateway
from bot.recorder import DecisionRecorder
from bot.slack_gateway import Slack, single_workspace
from bot.starts import StartListeners
from bot.submissions import SubmissionListeners
from bot.uninstalls import UninstallListeners, register_single_workspace

logger = logging.getLogger(__name__)
refusals = logging.getLogger(REFUSALS_LOGGER)
"""Requests refused for their signature: a wrong ``SLACK_SIGNING_SECRET`` refuses every
one, and the log must say so; a scanner's would repeat (``logs.REPEATING_LOGGERS``)."""

HEALTH_PATH = "/healthz"


def authorize_as(
    installation: AuthorizeResult,
) -> Callable[..., Awaitable[AuthorizeResult]]:
    """Bolt's ``authorize`` function answering every request with ``installation``
    (one bot token, one workspace), without a call to Slack. A request from another
    workspace gets it too, and is refused by ``bot.guard`` (its team differs)."""

    async def authorize(user_id: str | None = None) -> AuthorizeResult:
        return AuthorizeResult(
            enterprise_id=installation.enterprise_id,
            team_id=installation.team_id,
            bot_id=installation.bot_id,
            bot_user_id=installation.bot_user_id,
            bot_token=installation.bot_token,
            bot_scopes=installation.bot_scopes,
            user_id=user_id,
        )

    return authorize


def create_app(
    *,
    signing_secret: str,
    installation: AuthorizeResult | None = None,
    oauth: AsyncOAuthSettings | None = None,
    store: ApprovalStore,
    bus: Bus,
    client: AsyncWebClient,
    deduper: Deduper,
    channel_agents: Mapping[str, str] | None = None,
    directory: Callable[[Slack], Directory] = lambda slack: Directory(slack=slack),
) -> AsyncApp:
    """Return the Bolt app with every listener registered.

    Args:
        signing_secret: The Slack app's signing secret (requests are verified with it).
        installation: The bot token's installation (``installation_of_token``): one
            workspace, one token.
        oauth: Instead of ``installation``, Bolt's OAuth settings
            (``OAuthInstall.settings``): many workspaces, each its stored token.
        store: The approval store.
        bus: Where signals to workers go.
        client: Web API client (its token authorises the app); Bolt gets it, and every
            call of ours goes through a ``bot.slack_gateway`` over it.
        deduper: Remembers event IDs, so Slack's retried deliveries are ignored.
        channel_agents: Channel ID -> agent name for runs started there.
        directory: Builds the user-group resolver over the gateway (tests shorten its
            TTL or move its clock).
    """
    # Bolt's own client gets no token: with ``authorize`` it takes the token from each
    # request's result (and warns that a client token is ignored). It shares the session.
    bolt_client = AsyncWebClient(
        base_url=client.base_url,
        timeout=client.timeout,
        session=client.session,
        retry_handlers=client.retry_handlers,
    )
    authorize: StoreAuthorize | None = None  # OAuth mode's, which uninstalls tell
    if oauth is not None and installation is None:
        authorize = StoreAuthorize(oauth.installation_store)
        options = bolt_options(oauth, authorize)
    elif installation is not None and oauth is None:
        options = {"authorize": authorize_as(installation)}
    else:
        raise ValueError("create_app takes an installation or OAuth settings, one of them")
    app = AsyncApp(
        client=bolt_client,
        **options,
        signing_secret=signing_secret,
        process_before_response=False,
    )
    app.use(bind_actor)
    app.use(DedupeMiddleware(deduper))
    slack = oauth_gateway(oauth, client) if oauth else single_workspace(client)
    if oauth is not None and authorize is not None:
        UninstallListeners(
            store=store, installations=oauth.installation_store, forget=authorize.forget
        ).register(app)
    else:
        register_single_workspace(app)
    people = directory(slack)
    views = OpenedViews(store.db, clock=store.clock)
    guard = Guard(store=store, directory=people)
    home = HomePublisher(store=store, slack=slack, guard=guard, clock=store.clock)
    cards = CardOwner(store=store, slack=slack, on_change=home.request_changed)
    recorder = DecisionRecorder(store=store, bus=bus, cards=cards)
    ActionListeners(store=store, recorder=recorder, slack=slack, guard=guard, views=views).register(
        app
    )
    SubmissionListeners(store=store, recorder=recorder, guard=guard, views=views).register(app)
    starts = StartListeners(
        store=store,
        bus=bus,
        slack=slack,
        channel_agents=channel_agents or {},
        directory=people,
    )
    starts.register(app)
    GroupListeners(directory=people).register(app)
    home.register(app)
    ConversationListeners(
        starts=starts,
        inbox=Inbox(db=store.db, clock=store.clock),
        guard=guard,
        recorder=recorder,
        slack=slack,
    ).register(app)
    return app


def is_ssl_check(body: bytes) -> bool:
    """Whether ``body`` is Slack's ``ssl_check=1`` probe of a slash command URL.

    It is answered 200 and goes no further, signed or not, so it can never reach a
    listener (https://api.slack.com/interactivity/slash-commands#ssl).
    """
    try:
        return parse_qs(body.decode("utf-8", errors="strict")).get("ssl_check") == ["1"]
    except UnicodeDecodeError:
        return False


def is_unreadable(body: Mapping[str, Any]) -> str | None:
    """Why Bolt cannot be given the parsed request ``body`` (it would fail matching a
    listener: a 500 over HTTP), or None. Both edges, HTTP and Socket Mode, ask it."""
    if body.get("type") != "block_actions":
        return None
    actions = body.get("actions")
    if not actions:
        return "block_actions without actions"
    if not isinstance(actions, list) or not all(
        isinstance(action, dict) and isinstance(action.get("action_id"), str) for action in actions
    ):
        return "block_actions with an action that has no action_id"
    return None


def is_signed(verifier: SignatureVerifier, body: bytes, headers: dict[str, str]) -> bool:
    """Whether Slack signed ``body``. A body that is not UTF-8, or an
    ``X-Slack-Request-Timestamp`` that is not a number (``SignatureVerifier`` raises
    ``ValueError`` on it), was not sent by Slack."""
    try:
        return verifier.is_valid_request(body, headers)
    except (UnicodeDecodeError, ValueError):
        return False


def create_web_app(
    bolt_app: AsyncApp,
    *,
    signing_secret: str,
    serve_events: bool = True,
    body_read_timeout_s: float = BODY_READ_TIMEOUT_S,
) -> web.Application:
    """Return the aiohttp application serving ``bolt_app`` and the health check.

    The signature is checked over the exact raw body before anything parses it, so an
    unsigned or forged request, however malformed, gets 401 and reaches no listener
    (Slack's "Verifying requests from Slack"); a signed request Bolt cannot read gets 400.
    ``serve_events=False`` (Socket Mode, ``bot.socket_mode``): no ``POST /slack/events``,
    as Slack sends nothing there.
    A body larger than Slack's largest modal (``bot.http_limits.MAX_BODY_BYTES``) is a
    413, one not received within ``body_read_timeout_s`` (seconds) a 408.
    """
    verifier = SignatureVerifier(signing_secret)

    async def events(request: web.Request) -> web.Response:
        try:
            async with asyncio.timeout(body_read_timeout_s):
                body = await request.read()  # over MAX_BODY_BYTES: aiohttp answers 413
        except TimeoutError:
            return web.Response(status=408, text="request body not received in time")
        if is_ssl_check(body):
            return web.Response(status=200)  # Slack checking our certificate: nothing to do
        if not is_signed(verifier, body, dict(request.headers)):
            refusals.warning(
                "refused a request to %s: not signed with SLACK_SIGNING_SECRET, or sent more "
                "than 5 minutes ago; if every request from Slack is refused, set the app's "
                "Signing Secret (api.slack.com: Basic Information)",
                request.path,
            )
            return web.Response(status=401, text="invalid signature")
        try:
            bolt_request = AsyncBoltRequest(
                body=body.decode("utf-8"),
                query=request.query_string,
                headers=dict(request.headers),
            )
            unreadable = is_unreadable(bolt_request.body)
            if unreadable is not None:
                return web.Response(status=400, text=unreadable)
            return await to_aiohttp_response(await bolt_app.async_dispatch(bolt_request))
        except Exception:
            # Bolt raises while reading a signed body it cannot make sense of (bad
            # JSON, missing fields): answer it, never crash the connection.
            logger.exception("unreadable signed request to %s (%d bytes)", request.path, len(body))
            return web.Response(status=400, text="unreadable request")

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    web_app = web.Application(client_max_size=MAX_BODY_BYTES)
    if serve_events:
        web_app.router.add_post(EVENTS_PATH, events)
    web_app.router.add_get(HEALTH_PATH, healthz)
    if bolt_app.oauth_flow is not None:
        web_app.add_routes(install_routes(bolt_app.oauth_flow))
    return web_app


def install_routes(flow: AsyncOAuthFlow) -> list[web.RouteDef]:
    """``GET /slack/install`` and ``GET /slack/oauth_redirect``: Bolt's install flow.

    They are an admin's browser, not Slack, so nothing is signed: the redirect is
    checked by the one-time ``state`` in its query and the installer's cookie
    (``bot.oauth_states``), then its ``code`` is exchanged with ``oauth.v2.access``."""

    async def install(request: web.Request) -> web.Response:
        return await to_aiohttp_response(await flow.handle_installation(_browser(request)))

    async def redirect(request: web.Request) -> web.Response:
        return await to_aiohttp_response(await flow.handle_callback(_browser(request)))

    return [web.get(flow.install_path, install), web.get(flow.redirect_uri_path, redirect)]


def _browser(request: web.Request) -> AsyncBoltRequest:
    """A browser's GET as Bolt's request (its query and cookies; no body)."""
    return AsyncBoltRequest(body="", query=request.query_string, headers=dict(request.headers))

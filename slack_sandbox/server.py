"""The sandbox's aiohttp application and the local server that runs it."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from slack_sandbox.api_chat import CHAT_METHODS
from slack_sandbox.api_home import HOME_METHODS
from slack_sandbox.api_read import READ_METHODS
from slack_sandbox.api_usergroups import USERGROUP_METHODS
from slack_sandbox.api_views import VIEWS_METHODS
from slack_sandbox.core import Core
from slack_sandbox.interactions import Interactions
from slack_sandbox.oauth import OAuthApp, oauth_routes
from slack_sandbox.page import page_routes
from slack_sandbox.responses import response_routes
from slack_sandbox.socket_mode import SocketMode
from slack_sandbox.web_api import api_routes

WEB_API_METHODS = CHAT_METHODS | VIEWS_METHODS | READ_METHODS | USERGROUP_METHODS | HOME_METHODS


def build_app(
    *,
    core: Core,
    interactions: Interactions,
    request_url: Callable[[], str | None],
    oauth_app: Callable[[], OAuthApp | None] = lambda: None,
    socket_mode: SocketMode | None = None,
) -> web.Application:
    """Return the application: OAuth installs, Web API, response URLs, the page and its
    endpoints, and with ``socket_mode`` ``apps.connections.open`` and its websocket."""
    app = web.Application()
    app.add_routes(oauth_routes(core, oauth_app))  # before /api/{method}
    methods = dict(WEB_API_METHODS)
    if socket_mode is not None:
        methods["apps.connections.open"] = socket_mode.open_connection
        app.add_routes(socket_mode.routes())
    app.add_routes(api_routes(core, methods))
    app.add_routes(response_routes(core))
    app.add_routes(page_routes(core, interactions, request_url))
    return app


class Server:
    """Runs one application on a local TCP port.

    Args:
        app: The application to serve.
    """

    def __init__(self, app: web.Application) -> None:
        self.app = app
        self._runner: web.AppRunner | None = None

    async def start(self, host: str, port: int) -> str:
        """Listen on ``host:port`` (0 = a free port); return the base URL with a slash.

        Raises:
            OSError: The port is taken.
        """
        if self._runner is not None:
            raise RuntimeError("the sandbox server is already running")
        runner = web.AppRunner(self.app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        try:
            await site.start()
        except OSError:
            await runner.cleanup()
            raise
        self._runner = runner
        bound_port = runner.addresses[0][1]
        shown_host = "127.0.0.1" if host in ("0.0.0.0", "", "::") else host
        shown_host = f"[{shown_host}]" if ":" in shown_host else shown_host
        return f"http://{shown_host}:{bound_port}/"

    async def stop(self) -> None:
        """Stop listening (idempotent)."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

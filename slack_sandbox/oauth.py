"""Installing the app with OAuth, as Slack does it: the authorize page and ``oauth.v2.access``.

``GET /oauth/v2/authorize`` is the page an admin's browser is sent to by the app's
install link (``client_id``, ``scope``, ``state``, ``redirect_uri``): for a browser signed
in to one of the sandbox's workspaces (its ``d`` cookie, ``Sandbox.browser_cookie``) it
redirects to the app's Redirect URL with a one-time ``code`` and the ``state``, as if the
admin pressed Allow. ``POST /api/oauth.v2.access`` exchanges the code for that
workspace's bot token, authenticated with the app's client ID and secret (HTTP Basic, or
form fields), and checks ``redirect_uri`` against the authorize step's. The token works
only in its own workspace (``Core.tokens``). Slack's "Installing with OAuth"
(https://docs.slack.dev/authentication/installing-with-oauth) and
https://docs.slack.dev/reference/methods/oauth.v2.access.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlencode

from aiohttp import web

from slack_sandbox.core import Core
from slack_sandbox.state import APP_ID, BOT_USER_ID
from slack_sandbox.web_api import read_args

SESSION_COOKIE = "d"
"""The cookie of a browser signed in to Slack (Slack's own session cookie's name)."""
CODE_TTL_S = 600.0
"""How long a ``code`` may be exchanged, seconds (Slack: 10 minutes)."""


@dataclass
class Grant:
    """One ``code``: who allowed the app, in which workspace, with which scopes."""

    team: Core
    user_id: str
    scopes: str
    redirect_uri: str | None
    """The ``redirect_uri`` the authorize step was given (``oauth.v2.access`` must repeat it)."""
    issued_at: float


@dataclass
class OAuthApp:
    """The app's OAuth configuration, and the sandbox's side of its installs.

    Args:
        client_id: The app's Client ID.
        client_secret: Its Client Secret.
        redirect_urls: The Redirect URLs registered for it (a ``redirect_uri`` must be
            one of them; without one, the first is used).
    """

    client_id: str
    client_secret: str
    redirect_urls: list[str]
    sessions: dict[str, tuple[Core, str]] = field(default_factory=dict)
    """Browser session cookie -> (workspace, user) signed in with it."""
    grants: dict[str, Grant] = field(default_factory=dict)
    installs: list[tuple[str, str]] = field(default_factory=list)
    """``(team_id, user_id)`` of every completed install, oldest first."""

    def sign_in(self, team: Core, user_id: str) -> str:
        """Return a session cookie value for ``user_id`` signed in to ``team``."""
        session = secrets.token_urlsafe(16)
        self.sessions[session] = (team, user_id)
        return session


def _page(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=text, content_type="text/plain")


def oauth_routes(core: Core, oauth_app: Callable[[], OAuthApp | None]) -> list[web.RouteDef]:
    """Return ``GET /oauth/v2/authorize`` and ``POST``/``GET /api/oauth.v2.access`` (to
    register before the generic ``/api/{method}``); ``oauth_app`` gives the registered
    app, or ``None``: no OAuth app yet, and both refuse."""

    async def authorize(request: web.Request) -> web.Response:
        app = oauth_app()
        query = request.query
        if app is None or query.get("client_id") != app.client_id:
            return _page(400, "invalid_client_id")  # Slack shows an error page, no redirect
        redirect_uri = query.get("redirect_uri")
        if redirect_uri is not None and redirect_uri not in app.redirect_urls:
            return _page(400, "bad_redirect_uri")
        target = redirect_uri or (app.redirect_urls[0] if app.redirect_urls else None)
        if target is None:
            return _page(400, "no_redirect_uri")
        scopes = query.get("scope", "")
        if not scopes:
            return _page(400, "invalid_scope")
        signed_in = app.sessions.get(request.cookies.get(SESSION_COOKIE, ""))
        if signed_in is None:
            return _page(401, "sign in to a workspace first")
        team, user_id = signed_in
        if query.get("team") not in (None, team.workspace.team_id):
            return _page(403, "signed in to another workspace")
        code = secrets.token_urlsafe(16)
        app.grants[code] = Grant(
            team=team,
            user_id=user_id,
            scopes=scopes,
            redirect_uri=redirect_uri,
            issued_at=team.workspace.clock(),
        )
        back = {"code": code, **({"state": query["state"]} if "state" in query else {})}
        raise web.HTTPFound(f"{target}{'&' if '?' in target else '?'}{urlencode(back)}")

    async def access(request: web.Request) -> web.Response:
        args = await read_args(request) or {}
        client_id, client_secret = _client_of(request, args)
        answer = _exchange(core, oauth_app(), client_id, client_secret, args)
        core.calls.append(
            {
                "method": "oauth.v2.access",
                "args": {k: v for k, v in args.items() if k != "client_secret"},
                "ok": answer["ok"],
                **({"error": answer["error"]} if not answer["ok"] else {}),
            }
        )
        return web.json_response(answer)

    return [
        web.get("/oauth/v2/authorize", authorize),
        web.post("/api/oauth.v2.access", access),
        web.get("/api/oauth.v2.access", access),
    ]


def _client_of(request: web.Request, args: dict[str, str]) -> tuple[str | None, str | None]:
    """The client ID and secret: HTTP Basic auth (slack_sdk's way), else form fields."""
    auth = request.headers.get("Authorization", "")
    if auth.startswith("Basic "):
        try:
            client_id, _, secret = base64.b64decode(auth[6:]).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return None, None
        return client_id, secret
    return args.get("client_id"), args.get("client_secret")


def _exchange(
    core: Core,
    app: OAuthApp | None,
    client_id: str | None,
    client_secret: str | None,
    args: dict[str, str],
) -> dict[str, object]:
    """``oauth.v2.access``'s answer: the workspace's new bot token, or Slack's error."""
    if app is None or client_id != app.client_id:
        return {"ok": False, "error": "invalid_client_id"}
    if client_secret != app.client_secret:
        return {"ok": False, "error": "bad_client_secret"}
    grant = app.grants.pop(args.get("code") or "", None)  # a code is used once
    if grant is None or grant.team.workspace.clock() - grant.issued_at > CODE_TTL_S:
        return {"ok": False, "error": "invalid_code"}
    if grant.redirect_uri is not None and args.get("redirect_uri") != grant.redirect_uri:
        return {"ok": False, "error": "bad_redirect_uri"}
    team = grant.team
    token = f"xoxb-{team.workspace.team_id}-{secrets.token_hex(12)}"
    core.tokens[token] = team
    core.scopes[token] = grant.scopes
    app.installs.append((team.workspace.team_id, grant.user_id))
    enterprise = team.workspace.team.enterprise_id
    return {
        "ok": True,
        "access_token": token,
        "token_type": "bot",
        "scope": grant.scopes,
        "bot_user_id": BOT_USER_ID,
        "app_id": APP_ID,
        "team": {"id": team.workspace.team_id, "name": team.workspace.team.domain},
        "enterprise": {"id": enterprise, "name": team.workspace.team.enterprise_name}
        if enterprise
        else None,
        "is_enterprise_install": False,
        "authed_user": {"id": grant.user_id},
    }

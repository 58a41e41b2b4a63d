"""Installing the app in many workspaces: Bolt's OAuth flow on the project's stores.

``GET /slack/install`` sends the admin's browser to Slack's authorize page (with a
one-time ``state``, also set as a cookie); Slack sends it back to
``GET /slack/oauth_redirect`` with a ``code``, which Bolt exchanges for the workspace's
bot token (``oauth.v2.access``) and keeps with ``bot.installations``. From then on every
request from that workspace is authorized with its own installation (``StoreAuthorize``)
and every Web API call for it uses its token (``bot.workspaces.TeamClients``). Slack's
"Installing with OAuth" (https://docs.slack.dev/authentication/installing-with-oauth).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from slack_bolt.authorization import AuthorizeResult
from slack_bolt.authorization.async_authorize import AsyncAuthorize
from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_sdk.oauth.installation_store import Bot
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.oauth.state_store.async_state_store import AsyncOAuthStateStore
from slack_sdk.web.async_client import AsyncWebClient

from agent_bridge.deadline import within
from agent_bridge.errors import ConfigurationError, StoreUnavailableError
from bot.manifest import BOT_SCOPES as MANIFEST_SCOPES
from bot.manifest import OAUTH_REDIRECT_PATH
from bot.slack_gateway import SlackGateway
from bot.workspaces import TeamClients

logger = logging.getLogger(__name__)

INSTALL_PATH = "/slack/install"
"""Where an admin's browser starts an install (Bolt's flow redirects it to Slack)."""
BOT_SCOPES: Sequence[str] = tuple(sorted(MANIFEST_SCOPES))
"""The bot scopes an install asks for: the manifest's (``bot.manifest.BOT_SCOPES``)."""
AUTHORIZE_DB_S = 1.0
"""How long a request's read of its workspace's installation may wait on the database,
seconds: it runs before the ack, which Slack needs within 3 s
(https://docs.slack.dev/interactivity/handling-user-interaction#acknowledgment_response)."""
LAST_READ_MAX_S = 60.0
"""How old an installation read may be to answer for a database that cannot, seconds: an
uninstall another web process recorded meanwhile stops being served by then (one this
process records is forgotten at once, ``StoreAuthorize.forget``)."""


def authorize_url_of(api_url: str) -> str:
    """Slack's authorize page beside the Web API at ``api_url``:
    ``https://slack.com/api/`` -> ``https://slack.com/oauth/v2/authorize`` (the sandbox's
    likewise)."""
    base = api_url.rstrip("/").removesuffix("/api")
    return f"{base}/oauth/v2/authorize"


@dataclass(frozen=True)
class OAuthInstall:
    """The app's OAuth credentials and where Slack sends the admin back.

    Args:
        client_id: The app's Client ID (api.slack.com: Basic Information).
        client_secret: Its Client Secret (never shown).
        api_url: The Web API base URL (``SLACK_API_URL``); the authorize page is beside it.
        redirect_uri: The Redirect URL registered in the app (``https://HOST/slack/
            oauth_redirect``); ``None`` when the app registers only one.
        scopes: The bot scopes to ask for.
    """

    client_id: str
    client_secret: str = field(repr=False)
    api_url: str
    redirect_uri: str | None = None
    scopes: Sequence[str] = BOT_SCOPES

    def __post_init__(self) -> None:
        """Refuse a ``redirect_uri`` the app does not serve: every install would come
        back to a 404 or to Slack's own error page, long after the start.

        Raises:
            ConfigurationError: It is not ``https://HOST/slack/oauth_redirect`` (Slack
                sends the admin back to HTTPS Redirect URLs only).
        """
        if self.redirect_uri is None:
            return
        parts = urlsplit(self.redirect_uri)
        if parts.scheme != "https" or not parts.netloc or parts.path != OAUTH_REDIRECT_PATH:
            raise ConfigurationError(
                f"SLACK_REDIRECT_URI must be https://<your-host>{OAUTH_REDIRECT_PATH}: the "
                f"app takes installs back at {OAUTH_REDIRECT_PATH} only, over HTTPS (as the "
                "manifest's redirect_urls give it)"
            )

    def settings(
        self, *, installations: AsyncInstallationStore, states: AsyncOAuthStateStore
    ) -> AsyncOAuthSettings:
        """Bolt's OAuth settings over the project's stores: bot tokens only, no install
        page (``/slack/install`` redirects straight to Slack's consent page)."""
        return AsyncOAuthSettings(
            client_id=self.client_id,
            client_secret=self.client_secret,
            scopes=list(self.scopes),
            user_scopes=[],
            redirect_uri=self.redirect_uri,
            install_path=INSTALL_PATH,
            redirect_uri_path=OAUTH_REDIRECT_PATH,
            install_page_rendering_enabled=False,
            authorization_url=authorize_url_of(self.api_url),
            installation_store=installations,
            installation_store_bot_only=True,
            state_store=states,
        )


class StoreAuthorize(AsyncAuthorize):
    """Bolt's ``authorize`` from the stored installation of the request's workspace,
    with no ``auth.test`` (the install stored the bot's IDs), so no request waits on one
    (docs/architecture.md, invariant 6). A workspace without an installation gets
    ``None``, which Bolt answers with its "installation no longer available" message.

    The read runs before the ack, so under a deadline (``AUTHORIZE_DB_S``): a database
    that cannot answer in time (a migration's lock on the table, an outage) is answered
    from the installation this process last read for the workspace, so its requests are
    still acked in time; with none read yet, the error goes to Bolt, which answers at
    once with an error instead of past Slack's 3 s.

    Args:
        installations: Where installations are kept.
        clock: Monotonic seconds (the age of a read, ``LAST_READ_MAX_S``).
    """

    def __init__(
        self, installations: AsyncInstallationStore, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.installations = installations
        self.clock = clock
        self._last_read: dict[tuple[str | None, str | None], tuple[float, Bot]] = {}
        self._forgotten: dict[str, int] = {}  # times each workspace left, so far

    def forget(self, team_id: str) -> None:
        """Never answer for workspace ``team_id`` from an earlier read again (it left:
        ``bot.uninstalls``), nor from a read in flight now (it may predate the delete)."""
        self._forgotten[team_id] = self._forgotten.get(team_id, 0) + 1
        for key in [k for k in self._last_read if k[1] == team_id]:
            del self._last_read[key]

    async def __call__(
        self,
        *,
        context: Any,
        enterprise_id: str | None,
        team_id: str | None,
        user_id: str | None,
        actor_enterprise_id: str | None = None,
        actor_team_id: str | None = None,
        actor_user_id: str | None = None,
    ) -> AuthorizeResult | None:
        """The installation of workspace ``team_id`` as Bolt's ``AuthorizeResult``.

        Raises:
            StoreUnavailableError: The database did not answer in time, and no
                installation of the workspace was read before.
        """
        bot = await self._bot(enterprise_id, team_id)
        if bot is None:
            return None
        return AuthorizeResult(
            enterprise_id=bot.enterprise_id,
            team_id=bot.team_id,
            bot_id=bot.bot_id,
            bot_user_id=bot.bot_user_id,
            bot_token=bot.bot_token,
            bot_scopes=bot.bot_scopes,
            user_id=user_id,
        )

    async def _bot(self, enterprise_id: str | None, team_id: str | None) -> Bot | None:
        """The workspace's installation, read now, or the last one read (within
        ``LAST_READ_MAX_S``) if the database cannot answer within ``AUTHORIZE_DB_S``."""
        key = (enterprise_id, team_id)
        left = self._forgotten.get(team_id or "", 0)
        try:
            with within(AUTHORIZE_DB_S):
                bot = await self.installations.async_find_bot(
                    enterprise_id=enterprise_id, team_id=team_id
                )
        except StoreUnavailableError as exc:
            read_at, last = self._last_read.get(key, (None, None))
            if read_at is None or last is None or self.clock() - read_at > LAST_READ_MAX_S:
                raise
            logger.warning("team %s authorized from its last read installation: %s", team_id, exc)
            return last
        if bot is None:
            self._last_read.pop(key, None)  # uninstalled: never served again
        elif self._forgotten.get(team_id or "", 0) == left:  # it did not leave meanwhile
            self._last_read[key] = (self.clock(), bot)
        return bot


def bolt_options(oauth: AsyncOAuthSettings, authorize: StoreAuthorize) -> dict[str, Any]:
    """``AsyncApp``'s arguments for OAuth: the flow's settings, and ``authorize`` (Bolt
    takes an ``AsyncAuthorize`` instance beside OAuth settings)."""
    return {"oauth_settings": oauth, "authorize": authorize}


def oauth_gateway(oauth: AsyncOAuthSettings, client: AsyncWebClient) -> SlackGateway:
    """The gateway whose every call uses the stored token of its workspace, on
    ``client``'s base URL and HTTP session."""
    teams = TeamClients(oauth.installation_store, base_url=client.base_url, session=client.session)
    return SlackGateway(teams.client_for)

"""Which bot token a Web API call uses: the token of the workspace it is for.

The gateway (``bot.slack_gateway.SlackGateway``) asks ``client_for(team_id)`` before
every call. With one bot token (``SLACK_BOT_TOKEN``, the default) every workspace gets
that token's client (``bot.slack_gateway.single_workspace``); with OAuth
(``SLACK_CLIENT_ID``) ``TeamClients`` reads the workspace's installation from the
database each time, so an install or an uninstall takes effect in every process at once,
the worker's included, and no token of one workspace ever serves another's call.
"""

from __future__ import annotations

import aiohttp
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.web.async_client import AsyncWebClient

from bot.errors import SlackRefusedError
from bot.slack_client import make_client

NOT_INSTALLED = "not_installed"
"""The ``code`` of the refusal for a workspace with no installation (never installed,
or uninstalled since): like a revoked token, not retryable."""


class TeamClients:
    """``team_id -> AsyncWebClient`` with that workspace's bot token, from the stored
    installations.

    Args:
        installations: Where installations are kept (``bot.installations``).
        base_url: Web API base URL (``SLACK_API_URL``).
        session: The process's HTTP session, shared by every workspace's client.
    """

    def __init__(
        self,
        installations: AsyncInstallationStore,
        *,
        base_url: str,
        session: aiohttp.ClientSession | None = None,
    ) -> None:
        self.installations = installations
        self.base_url = base_url
        self.session = session
        self._clients: dict[str, AsyncWebClient] = {}
        """Bot token -> its client (a token is one workspace's; reinstalling issues a
        new one, so a cached client never outlives its installation's lookup)."""

    async def client_for(self, team_id: str | None) -> AsyncWebClient:
        """The client for workspace ``team_id``.

        Raises:
            SlackRefusedError: ``not_installed``: the app is not installed there (the
                caller's call is refused for good, as with a revoked token).
        """
        bot = await self.installations.async_find_bot(enterprise_id=None, team_id=team_id)
        if bot is None or not bot.bot_token:
            raise SlackRefusedError(
                f"the app is not installed in workspace {team_id}",
                method="installation",
                code=NOT_INSTALLED,
                retryable=False,
            )
        client = self._clients.get(bot.bot_token)
        if client is None:
            client = make_client(token=bot.bot_token, base_url=self.base_url, session=self.session)
            self._clients[bot.bot_token] = client
        return client

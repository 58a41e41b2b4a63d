"""The Slack Web API client, with slack_sdk's own retry handlers, and the installation
its bot token serves.

429 answers are retried after their ``Retry-After`` and 5xx / connection errors with
backoff (``slack_sdk.http_retry``), so neither the web process nor the worker writes its
own retry loop; but a ``chat.postMessage`` that may have posted is not sent again
(``NOT_REPEATABLE``). A process makes one ``aiohttp.ClientSession`` per workspace
(``open_session``) and hands it to that workspace's client, so every call reuses its
pooled, kept-alive connections instead of a new TCP and TLS handshake each (slack_sdk
opens a session per call when given none); the process closes it when it stops.
"""

from __future__ import annotations

from collections.abc import Collection
from urllib.parse import urlsplit

import aiohttp
from aiohttp import ClientConnectorError, ClientError
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient

from agent_bridge.errors import ConfigurationError

MAX_RETRIES = 2
SCOPES_HEADER = "x-oauth-scopes"
"""The header of a Web API answer listing the calling token's scopes (Slack's
"Scopes and permissions")."""
REQUEST_TIMEOUT_S = 10


def open_session() -> aiohttp.ClientSession:
    """Return a new HTTP session for one workspace's Web API calls (call it inside the
    running event loop; close it with ``await session.close()`` at shutdown)."""
    return aiohttp.ClientSession()


def make_client(
    *, token: str | None, base_url: str, session: aiohttp.ClientSession | None = None
) -> AsyncWebClient:
    """Return an ``AsyncWebClient`` for ``base_url`` (Slack's, or the sandbox's ``/api/``).

    Args:
        token: Bot token (``xoxb-...``); ``None`` in OAuth mode (each call's token is
            its workspace's, ``bot.workspaces``).
        base_url: Web API base URL ending in ``/``.
        session: The workspace's HTTP session (``open_session``), reused by every call;
            ``None``: a session per call (short-lived tools and tests).
    """
    return AsyncWebClient(
        token=token,
        base_url=base_url,
        timeout=REQUEST_TIMEOUT_S,
        session=session,
        retry_handlers=[
            AsyncRateLimitErrorRetryHandler(max_retry_count=MAX_RETRIES),
            NotRepeatingPosts(AsyncServerErrorRetryHandler(max_retry_count=MAX_RETRIES)),
            NotRepeatingPosts(AsyncConnectionErrorRetryHandler(max_retry_count=MAX_RETRIES)),
        ],
    )


NOT_REPEATABLE = frozenset({"chat.postMessage"})
"""Web API methods that create something each time they are sent: a 5xx, or a connection
dropped once the request was sent, may come after Slack acted, and sending it again would
post twice. slack_sdk's handlers retry any method; for these the failure is the
caller's, whose outbox looks for the message before posting again (``bot.outbox``). A
429 is retried (Slack did nothing), and so is a connection never made."""


def _method(request: HttpRequest) -> str:
    """The Web API method a request calls (the last part of its URL's path)."""
    return urlsplit(request.url).path.rstrip("/").rsplit("/", 1)[-1]


class NotRepeatingPosts(AsyncRetryHandler):
    """One of slack_sdk's retry handlers (``inner``: its 5xx or its connection error
    retries) that sends a ``NOT_REPEATABLE`` method again only when no connection was
    made (``ClientConnectorError``: nothing was sent).

    Args:
        inner: The handler whose rule and backoff apply otherwise.
    """

    def __init__(self, inner: AsyncRetryHandler) -> None:
        super().__init__(inner.max_retry_count, inner.interval_calculator)
        self.inner = inner

    async def _can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        if _method(request) in NOT_REPEATABLE and not isinstance(error, ClientConnectorError):
            return False
        return await self.inner._can_retry_async(
            state=state, request=request, response=response, error=error
        )


PASSING_CODES = frozenset(
    {"internal_error", "fatal_error", "service_unavailable", "request_timeout", "team_added_to_org"}
)
"""Slack's own passing trouble, answered ``ok: false`` with HTTP 200 and retried by
nothing in slack_sdk ("a transient issue on our end", "temporarily unavailable", a
workspace being migrated to an Enterprise organization; https://api.slack.com/web
"Errors"): an outage, waited out or tried again, never a refused call or token."""


async def installation_of_token(
    client: AsyncWebClient, *, needs: Collection[str] = ()
) -> AuthorizeResult:
    """Which workspace (and Enterprise Grid org) ``client``'s bot token is installed in,
    from ``auth.test`` (https://docs.slack.dev/reference/methods/auth.test), asked once
    at process start so no request waits for it (Bolt would ask on the first request).
    Slack being down or rate limiting is retried by the client's handlers.

    Returns:
        Bolt's ``AuthorizeResult`` of the bot token (``team_id``, ``enterprise_id``,
        ``bot_id``, ``bot_user_id``, ``bot_token``).

    Raises:
        ConfigurationError: Slack refused the token (``invalid_auth``...) or could not
            be reached after the retries, or the token lacks scopes of ``needs`` (the
            manifest's, ``bot.manifest.BOT_SCOPES``, for a process; Slack lists a token's
            scopes on every answer, ``x-oauth-scopes``): the process should not serve.
    """
    try:
        response = await client.auth_test()
    except SlackApiError as exc:
        status = exc.response.status_code
        code = exc.response.get("error") if isinstance(exc.response.data, dict) else None
        if status == 429 or status >= 500 or code in PASSING_CODES:
            raise ConfigurationError(
                f"Slack's auth.test answered {code or f'HTTP {status}'} past the retries "
                "(Slack's own trouble, not the token); the process cannot know its "
                "installation. Restart it once Slack answers."
            ) from exc
        raise ConfigurationError(
            f"SLACK_BOT_TOKEN was refused by auth.test: {code or status}. "
            "Check the token of the app's installation."
        ) from exc
    except (ClientError, TimeoutError) as exc:
        raise ConfigurationError(
            f"Slack's auth.test could not be reached at {client.base_url} "
            f"({type(exc).__name__}); check SLACK_API_URL and the network, then restart."
        ) from exc
    granted = next((v for k, v in response.headers.items() if k.lower() == SCOPES_HEADER), None)
    if granted is not None:
        missing = sorted(set(needs) - {scope.strip() for scope in str(granted).split(",")})
        if missing:
            raise ConfigurationError(
                f"SLACK_BOT_TOKEN lacks scopes the app needs: {', '.join(missing)} (the "
                "manifest's; each one's use is beside it in manifest.yml). Add them to the "
                "app, install it again, and set the new token"
            )
    return AuthorizeResult.from_auth_test_response(
        auth_test_response=response, bot_token=client.token
    )

"""Socket Mode: the web process takes Slack's deliveries over a websocket it opens.

With ``SLACK_APP_TOKEN`` (an app-level token, ``xapp-…``, with ``connections:write``) the
Bolt app of ``bot.app.create_app`` (the same listeners, the same guards) is served by
slack_bolt's ``AsyncSocketModeHandler`` over slack_sdk's aiohttp Socket Mode client:
``apps.connections.open`` for a URL, the websocket, each envelope dispatched to Bolt and
acked with the listener's answer (``response_action`` and all), and a new connection
whenever Slack asks (``disconnect``) or the connection is lost (the client pings every
``ping_interval_s`` and reconnects when pongs stop). So a developer can run against a
real workspace without a public URL (https://api.slack.com/apis/socket-mode).

Requests arrive unsigned over the app's own authenticated websocket, so Bolt skips the
signature check for them; what the HTTP edge (``bot.app.create_web_app``) refuses before
Bolt (a ``block_actions`` without an ``action_id`` to match, a body Bolt cannot read) is
refused here too, logged and not acked, as a 400 is not an answer Slack accepts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from aiohttp import ClientError
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.adapter.socket_mode.async_internals import (
    run_async_bolt_app,
    send_async_response,
)
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest

from agent_bridge.errors import ConfigurationError
from bot.app import is_unreadable
from bot.slack_gateway import translate

logger = logging.getLogger(__name__)

PING_INTERVAL_S = 5.0
"""How often the Socket Mode client pings Slack, seconds; a connection whose pongs stop
for four intervals, or that is closed, is replaced by a new one."""


class CheckedSocketModeHandler(AsyncSocketModeHandler):
    """slack_bolt's ``AsyncSocketModeHandler``, refusing what the HTTP edge refuses
    before Bolt sees it, never letting a listener's failure escape unlogged, and counting
    the envelopes the client has taken to dispatch, so a stop acks them before closing
    (``settle``)."""

    def __init__(self, app: AsyncApp, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        # slack_sdk's processor takes each envelope off its queue and calls this at once,
        # scheduling what it returns: counted from there, no envelope is between counts.
        self._listeners = self.client.run_message_listeners
        self.client.run_message_listeners = self._counted  # type: ignore[method-assign,assignment]
        self._taken = 0
        """Envelopes taken off the client's queue whose listeners have not ended."""
        self._owed = 0
        """Once a stop began: envelopes received before it, not yet taken."""
        self._changed = asyncio.Event()
        self.settling = False
        """Whether a stop is waiting for the envelopes received before it to be acked."""

    def _counted(self, message: dict[str, Any], raw_message: str) -> Awaitable[None]:
        """The client's ``run_message_listeners`` for one message, an envelope counted
        (a message without one, ``hello`` or ``disconnect``, has nothing to ack); once a
        stop began, only an envelope received before it is dispatched, and no message
        without one (a ``disconnect`` would open a new websocket only to close it)."""
        envelope = bool(message.get("envelope_id"))
        if self.settling:
            owed = self._owed > 0  # the queue is in order: the first taken were there
            if owed:
                self._owed -= 1
            self._changed.set()
            if not (owed and envelope):
                return self._refused(message)
        if not envelope:  # nothing to ack: a stop does not wait for it
            return self._listeners(message, raw_message)
        self._taken += 1
        return self._listened(message, raw_message)

    async def _listened(self, message: dict[str, Any], raw_message: str) -> None:
        try:
            await self._listeners(message, raw_message)
        finally:
            self._taken -= 1
            self._changed.set()

    async def _refused(self, message: dict[str, Any]) -> None:
        """A message not handled because the stop began: an envelope that arrived after
        it is neither dispatched nor acked, so nothing is half-done (Slack sends an event
        again on another connection; a click shows its person Slack's error, and can be
        made again); one without an envelope is dropped."""
        if message.get("envelope_id"):
            logger.warning(
                "%s envelope %s arrived while stopping: not handled",
                message.get("type"),
                message.get("envelope_id"),
            )
        else:
            logger.info("%s message dropped while stopping", message.get("type"))

    async def handle(self, client: SocketModeClient, req: SocketModeRequest) -> None:  # type: ignore[override]
        """Dispatch one envelope to Bolt and ack it with Bolt's answer; an envelope the
        HTTP edge would answer 400 is logged and left un-acked."""
        started = time.time()
        reason = is_unreadable(req.payload)
        if reason is not None:
            logger.warning("%s envelope %s refused: %s", req.type, req.envelope_id, reason)
            return
        try:
            response = await run_async_bolt_app(self.app, req)
        except Exception:
            logger.exception("unreadable %s envelope %s", req.type, req.envelope_id)
            return
        await send_async_response(client, req, response, started)

    async def settle(self, timeout_s: float) -> int:
        """Wait, at most ``timeout_s`` seconds, until every envelope received before this
        call (taken by the client to dispatch, or still in its queue) has been dispatched
        and acked over the open websocket: a click acked by ``bot.actions.ack_first``
        has its listener running already, and closing first would leave Slack without its
        ack (the reviewer shown an error for a decision being recorded). Envelopes
        arriving meanwhile are not handled (``_refused``), so a steady flow cannot hold
        the stop.

        Returns:
            How many envelopes received before the stop were not acked by the deadline.
        """
        self.settling = True
        self._owed = self.client.message_queue.qsize()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while (self._taken or self._owed) and loop.time() < deadline:
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), deadline - loop.time())
        return self._taken + self._owed


@dataclass
class SocketModeConnection:
    """A running Socket Mode connection of the web process."""

    handler: CheckedSocketModeHandler

    @property
    def client(self) -> SocketModeClient:
        """slack_sdk's Socket Mode client (``is_connected``, ``wss_uri``)."""
        return self.handler.client

    async def stop(self, timeout_s: float) -> None:
        """Ack the envelopes received (``CheckedSocketModeHandler.settle``, at most
        ``timeout_s`` seconds; what is left is logged), then close the websocket and the
        client's HTTP session."""
        left = await self.handler.settle(timeout_s)
        if left:
            logger.error("%d Socket Mode envelopes not acked before the stop", left)
        await self.handler.close_async()  # type: ignore[no-untyped-call]


async def connect_socket_mode(
    bolt_app: AsyncApp, *, app_token: str, ping_interval_s: float = PING_INTERVAL_S
) -> SocketModeConnection:
    """Open the Socket Mode connection serving ``bolt_app``.

    ``apps.connections.open`` goes to the Web API base URL of ``bolt_app.client`` (the
    sandbox's in tests and the demo), with ``app_token``.

    Args:
        bolt_app: The app of ``bot.app.create_app``.
        app_token: The app-level token (``xapp-…``).
        ping_interval_s: Seconds between the client's pings (tests shorten it, so a cut
            connection is noticed sooner).

    Returns:
        The connection, once the first websocket is open; it reconnects by itself.

    Raises:
        ConfigurationError: Slack refused the app-level token (``invalid_auth``, a bot
            token: ``not_allowed_token_type``), could not be reached, or failed on its
            side (said so, not blamed on the token); slack_sdk's client would otherwise
            retry forever.
    """
    handler = CheckedSocketModeHandler(
        bolt_app, app_token=app_token, ping_interval=ping_interval_s, logger=logger
    )
    try:
        # The first URL is asked here, so a refused token stops the start; connect()
        # uses it, and asks again itself for every later connection.
        handler.client.wss_uri = await handler.client.issue_new_wss_url()
    except SlackApiError as exc:
        await handler.close_async()  # type: ignore[no-untyped-call]
        error = translate("apps.connections.open", exc)
        if error.retryable:  # a 429, a 5xx or Slack's own passing error: not the token
            raise ConfigurationError(
                f"Slack's apps.connections.open failed ({error.code}): Slack's own trouble, "
                "not the token; restart once Slack answers."
            ) from None
        raise ConfigurationError(
            f"SLACK_APP_TOKEN was refused by apps.connections.open: {error.code}. Use an "
            "app-level token (xapp-...) with connections:write, from api.slack.com: Basic "
            "Information."
        ) from None
    except (ClientError, TimeoutError) as exc:
        await handler.close_async()  # type: ignore[no-untyped-call]
        raise ConfigurationError(
            f"Slack's apps.connections.open could not be reached ({type(exc).__name__}); "
            "check SLACK_API_URL and the network, then restart."
        ) from None
    await handler.connect_async()  # type: ignore[no-untyped-call]
    return SocketModeConnection(handler=handler)

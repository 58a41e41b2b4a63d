"""Socket Mode: Slack's deliveries over a websocket the app opens, instead of HTTP posts.

As Slack does it (https://api.slack.com/apis/socket-mode): the app calls
``apps.connections.open`` with its app-level token (``xapp-…``) and gets a one-use
``wss://…/link/?ticket=…`` URL; on connecting it receives ``hello``. Each delivery is an
envelope ``{"envelope_id", "type", "payload", "accepts_response_payload"}`` of type
``events_api`` (the ``event_callback`` body, with ``retry_attempt`` and
``retry_reason``), ``interactive`` (the interaction payload) or ``slash_commands`` (the
command's fields as an object); the app acks with ``{"envelope_id", "payload"?}`` within
3 s, the payload being what an HTTP answer's body would be (``response_action``, a
command's text). An ``events_api`` envelope not acked in time is sent again with
``retry_attempt`` one more and ``retry_reason: "timeout"``, up to ``EVENT_RETRIES`` times.
``disconnect`` (``reason: "refresh_requested"``) asks the app to move to a new URL.

The sandbox's URLs are ``ws://`` on its own port; what it sends is otherwise Slack's.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import WSMsgType, web

from slack_sandbox.core import Core
from slack_sandbox.delivery import REQUEST_TIMEOUT_S, Reply
from slack_sandbox.errors import BotUnreachable

LINK_PATH = "/link/"
APP_ID = "A0SANDBOX"
EVENT_RETRIES = 3
"""How many times Slack sends an un-acked ``events_api`` envelope again."""
RETRY_REASON = "timeout"


def envelope_of(body: bytes, content_type: str) -> tuple[str, dict[str, Any]]:
    """Return ``(envelope type, payload)`` of a delivery Slack would post over HTTP as
    ``body``: a JSON event callback, a form with ``payload=<json>``, or a slash
    command's form."""
    if content_type.startswith("application/json"):
        return "events_api", json.loads(body)
    fields = dict(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
    if "payload" in fields:
        return "interactive", json.loads(fields["payload"])
    return "slash_commands", fields


class SocketMode:
    """The Socket Mode side of the sandbox: connection URLs, open websockets, envelopes.

    Args:
        core: The sandbox state (its base URL and clock).
        app_token: The only app-level token ``apps.connections.open`` accepts.
        ack_deadline_s: How long the app has to ack an envelope (Slack: 3 s).
    """

    def __init__(self, *, core: Core, app_token: str, ack_deadline_s: float) -> None:
        self.core = core
        self.app_token = app_token
        self.ack_deadline_s = ack_deadline_s
        self.connections: list[web.WebSocketResponse] = []
        """Open websockets, oldest first; deliveries go to the newest."""
        self.opened = 0
        """How many connections the app has opened (a reconnect adds one)."""
        self.envelopes: list[dict[str, Any]] = []
        """Every envelope sent, oldest first (retries too)."""
        self.acks: list[dict[str, Any]] = []
        """Every ack received and kept (not lost), oldest first."""
        self.lose_acks = 0
        """The next this many acks are lost on the way (never seen by the sandbox)."""
        self._tickets: set[str] = set()
        self._requests: dict[web.WebSocketResponse, web.Request] = {}
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}

    # -- apps.connections.open and the websocket ------------------------------------

    def open_connection(self, _core: Core, _args: dict[str, Any]) -> dict[str, Any]:
        """``apps.connections.open`` (the Web API checked the app token): a one-use URL."""
        ticket = secrets.token_urlsafe(12)
        self._tickets.add(ticket)
        base = self.core.base_url.replace("http://", "ws://", 1).rstrip("/")
        return {"ok": True, "url": f"{base}{LINK_PATH}?ticket={ticket}&app_id={APP_ID}"}

    def routes(self) -> list[web.RouteDef]:
        """The websocket endpoint the URLs of ``open_connection`` point at."""
        return [web.get(LINK_PATH, self._link)]

    async def _link(self, request: web.Request) -> web.StreamResponse:
        ticket = request.query.get("ticket", "")
        if ticket not in self._tickets:
            return web.Response(status=401, text="invalid or used ticket")
        self._tickets.discard(ticket)
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self.connections.append(ws)
        self._requests[ws] = request
        self.opened += 1
        await ws.send_json(
            {
                "type": "hello",
                "num_connections": len(self.connections),
                "debug_info": {"host": "sandbox", "approximate_connection_time": 18060},
                "connection_info": {"app_id": APP_ID},
            }
        )
        try:
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    self._acked(message.data)
        finally:
            if ws in self.connections:
                self.connections.remove(ws)
            self._requests.pop(ws, None)
        return ws

    def _acked(self, data: str) -> None:
        try:
            ack = json.loads(data)
        except ValueError:
            self.core.violate("socket mode", [f"the app sent text that is not JSON: {data[:80]}"])
            return
        envelope_id = ack.get("envelope_id") if isinstance(ack, dict) else None
        waiting = self._waiting.get(envelope_id) if isinstance(envelope_id, str) else None
        if waiting is None:
            self.core.violate("socket mode", [f"ack of no envelope sent: {data[:80]}"])
            return
        if self.lose_acks > 0:
            self.lose_acks -= 1
            return
        self.acks.append(ack)
        if not waiting.done():
            waiting.set_result(ack)

    # -- deliveries -------------------------------------------------------------------

    async def deliver(self, body: bytes, *, content_type: str) -> Reply:
        """Send the delivery ``body`` as an envelope on the newest connection and wait
        for its ack; an un-acked event is sent again (``EVENT_RETRIES``).

        Returns:
            The ack as an HTTP answer would be: 200 with the ack's ``payload`` as JSON
            (empty when none), and the time from the acked attempt's send.

        Raises:
            BotUnreachable: No connection is open, an event was acked after none of its
                sends' deadlines, or an interaction was not acked at all.
        """
        kind, payload = envelope_of(body, content_type)
        envelope_id = secrets.token_hex(16)
        attempts = 1 + (EVENT_RETRIES if kind == "events_api" else 0)
        waiting: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[envelope_id] = waiting
        try:
            for attempt in range(attempts):
                envelope: dict[str, Any] = {
                    "envelope_id": envelope_id,
                    "type": kind,
                    "payload": payload,
                    "accepts_response_payload": kind != "events_api",
                }
                if kind == "events_api":
                    envelope["retry_attempt"] = attempt
                    envelope["retry_reason"] = RETRY_REASON if attempt else ""
                started = time.monotonic()
                await self._send(envelope)
                # An event is sent again when its deadline passes; an interaction's late
                # ack is still awaited, so it is reported late (a violation), as over HTTP.
                timeout = self.ack_deadline_s if kind == "events_api" else REQUEST_TIMEOUT_S
                try:
                    ack = await asyncio.wait_for(asyncio.shield(waiting), timeout)
                except TimeoutError:
                    continue
                answer = ack.get("payload")
                return Reply(
                    status=200,
                    body=json.dumps(answer) if answer else "",
                    elapsed_s=time.monotonic() - started,
                )
        finally:
            del self._waiting[envelope_id]
        raise BotUnreachable(f"no ack for {kind} envelope {envelope_id} after {attempts} sends")

    async def _send(self, envelope: dict[str, Any]) -> None:
        if not self.connections:
            raise BotUnreachable("the app has no Socket Mode connection open")
        self.envelopes.append(envelope)
        try:
            await self.connections[-1].send_json(envelope)
        except ConnectionError:
            pass  # the connection just went: like a lost send, the retry covers an event

    # -- connection trouble -----------------------------------------------------------

    async def refresh(self) -> None:
        """Ask every open connection to move (``disconnect``, ``refresh_requested``);
        the old connection stays open until the app closes it."""
        for ws in list(self.connections):
            await ws.send_json(
                {
                    "type": "disconnect",
                    "reason": "refresh_requested",
                    "debug_info": {"host": "sandbox"},
                }
            )

    def drop(self) -> None:
        """Cut every open connection without a close frame, as a network failure does."""
        for ws in list(self.connections):
            self.connections.remove(ws)
            transport = self._requests[ws].transport
            if transport is not None:
                transport.abort()

    async def close(self) -> None:
        """Close every connection (the sandbox stops)."""
        for ws in list(self.connections):
            await ws.close()
        self.connections.clear()

"""The web process against hostile or clumsy clients: a timestamp that is not a number,
Slack's largest modals and larger bodies, slow clients, a flood of half-sent connections.

Everything over real sockets to a real ``start_web`` (the harness's web app, or a second
one on the same parts with shortened limits).
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from bot import ids
from bot.connections import ACCEPT_ERROR, quiet_accept_errors
from bot.http_limits import INPUT_MAX_CHARS, MAX_BODY_BYTES, HttpLimits
from bot.processes import WebServer, start_web
from slack_sandbox.delivery import payload_body
from tests.harness import DBA, Harness
from tests.slack_bodies import sample_click, submission_payload

SHORT = HttpLimits(max_connections=24, header_read_timeout_s=0.5, body_read_timeout_s=0.5)
LONG_TEXT = ("é€😀" * INPUT_MAX_CHARS)[:INPUT_MAX_CHARS]
"""An input's longest answer, in characters that cost the most on the wire."""


@pytest.fixture
async def short_web(harness: Harness) -> AsyncIterator[WebServer]:
    """A second web app on the harness's parts, with ``SHORT`` limits."""
    server = await start_web(
        settings=harness.web_settings,
        store=harness.web_store,
        bus=harness.web_bus,
        client=harness.client,
        deduper=harness.deduper,
        host="127.0.0.1",
        port=0,
        limits=SHORT,
    )
    yield server
    await server.stop()


def address(server: WebServer) -> tuple[str, int]:
    host, port = server.url.removeprefix("http://").split(":")
    return host, int(port)


def half_sent(server: WebServer) -> socket.socket:
    """A connection that sent part of a request's headers, and nothing more."""
    sock = socket.create_connection(address(server))
    sock.sendall(b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Type: appl")
    return sock


async def closed_by_server(sock: socket.socket, timeout_s: float = 10.0) -> bool:
    """Whether the server closes ``sock`` within ``timeout_s`` (reads its EOF)."""
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(timeout_s):
            while True:
                try:
                    data = await loop.sock_recv(sock, 4096)
                except ConnectionResetError:
                    return True
                if not data:
                    return True
    except TimeoutError:
        return False


def large_modal_submission() -> dict[str, Any]:
    """A modal of 25 text inputs, each answered with ``LONG_TEXT`` (a submission well
    over 1 MiB, as Slack sends it)."""
    blocks = [
        {
            "type": "input",
            "block_id": f"arg_{i}",
            "label": {"type": "plain_text", "text": f"arg {i}"},
            "element": {
                "type": "plain_text_input",
                "action_id": "value",
                "multiline": True,
                "initial_value": LONG_TEXT,
            },
        }
        for i in range(25)
    ]
    view = {
        "id": "V0LARGE001",
        "type": "modal",
        "callback_id": ids.EDIT_CALLBACK,
        "private_metadata": "not-an-opened-view",
        "title": {"type": "plain_text", "text": "Edit"},
        "blocks": blocks,
    }
    return submission_payload(
        view, user_id=DBA, values={f"arg_{i}": LONG_TEXT[::-1] for i in range(25)}
    )


async def test_a_timestamp_that_is_not_a_number_is_a_401_without_a_traceback(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    body = payload_body(sample_click())
    for timestamp in ("soon", "", "1e9", "\u0661\u0667" + "\u0660" * 8):  # Arabic-Indic digits
        status, text = await harness.sandbox.post_signed(
            body, headers={"X-Slack-Request-Timestamp": timestamp}
        )
        assert (status, text) == (401, "invalid signature"), timestamp
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_a_modal_larger_than_a_mebibyte_is_read_and_answered(harness: Harness) -> None:
    body = payload_body(large_modal_submission())
    assert 1024 * 1024 < len(body) < MAX_BODY_BYTES
    status, text = await harness.sandbox.post_signed(body)
    assert status == 200
    answer = json.loads(text)  # the app read it: not a form it opened, said on the form
    assert answer["response_action"] == "errors"


async def test_a_body_larger_than_slacks_largest_modal_is_a_413(harness: Harness) -> None:
    body = b"payload=" + b"x" * MAX_BODY_BYTES
    status, _ = await harness.sandbox.post_signed(body)
    assert status == 413


async def test_a_client_that_does_not_send_its_headers_is_dropped(short_web: WebServer) -> None:
    sock = half_sent(short_web)
    try:
        assert await closed_by_server(sock)
    finally:
        sock.close()


async def test_a_body_that_does_not_arrive_is_a_408(short_web: WebServer) -> None:
    reader, writer = await asyncio.open_connection(*address(short_web))
    writer.write(
        b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\n\r\npayload="
    )
    await writer.drain()
    async with asyncio.timeout(10):
        status_line = await reader.readline()
    assert status_line.startswith(b"HTTP/1.1 408"), status_line
    writer.close()


async def test_a_flood_of_half_sent_connections_leaves_healthz_answering(
    short_web: WebServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="bot.connections")
    flood = [half_sent(short_web) for _ in range(SHORT.max_connections * 4)]
    try:
        async with aiohttp.ClientSession() as session:
            for _ in range(3):
                async with asyncio.timeout(5), session.get(short_web.url + "/healthz") as reply:
                    assert reply.status == 200
        assert short_web.connections.open_connections <= SHORT.max_connections
        warnings = [r for r in caplog.records if r.name == "bot.connections"]
        assert len(warnings) == 1, [r.getMessage() for r in warnings]  # once, not per client
        assert "connection limit (24) reached" in warnings[0].getMessage()
    finally:
        for sock in flood:
            sock.close()


def test_asyncio_accept_errors_are_logged_once_a_minute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    quiet_accept_errors()
    quiet_accept_errors()  # idempotent: one filter
    asyncio_logger = logging.getLogger("asyncio")
    caplog.set_level(logging.ERROR, logger="asyncio")
    for _ in range(500):
        asyncio_logger.error(ACCEPT_ERROR + "\nsocket: <...>", exc_info=False)
    asyncio_logger.error("another asyncio error")
    messages = [r.getMessage() for r in caplog.records if r.name == "asyncio"]
    assert len([m for m in messages if m.startswith(ACCEPT_ERROR)]) <= 1
    assert "another asyncio error" in messages

"""The sandbox speaks Slack's Socket Mode: the test plays the app with a bare websocket
(aiohttp), so every frame is seen as Slack sends it and as an app must answer it
(https://api.slack.com/apis/socket-mode)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from slack_sandbox import BotUnreachable, Sandbox
from slack_sandbox.socket_mode import EVENT_RETRIES, RETRY_REASON, SocketMode

APP_TOKEN = "xapp-1-A0SANDBOX-test"
BOT_TOKEN = "xoxb-test"
ACK_DEADLINE_S = 0.3
"""Short, so the un-acked event's retries are quick; each still waits for it."""


@pytest.fixture
async def sandbox() -> AsyncIterator[Sandbox]:
    sandbox = Sandbox(
        signing_secret="s", bot_token=BOT_TOKEN, app_token=APP_TOKEN, ack_deadline_s=ACK_DEADLINE_S
    )
    await sandbox.start()
    yield sandbox
    await sandbox.stop()


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


def socket_mode(sandbox: Sandbox) -> SocketMode:
    assert sandbox.socket_mode is not None
    return sandbox.socket_mode


async def connections_open(session: aiohttp.ClientSession, sandbox: Sandbox, token: str) -> Any:
    async with session.post(
        sandbox.api_url + "apps.connections.open", headers={"Authorization": f"Bearer {token}"}
    ) as response:
        return await response.json()


async def connect(
    session: aiohttp.ClientSession, sandbox: Sandbox
) -> tuple[aiohttp.ClientWebSocketResponse, dict[str, Any]]:
    """Open a connection as an app does; return it and its ``hello``."""
    opened = await connections_open(session, sandbox, APP_TOKEN)
    assert opened["ok"] is True
    ws = await session.ws_connect(opened["url"])
    return ws, await ws.receive_json()


async def test_apps_connections_open_takes_only_the_app_level_token(
    sandbox: Sandbox, session: aiohttp.ClientSession
) -> None:
    refused = await connections_open(session, sandbox, BOT_TOKEN)
    assert refused == {"ok": False, "error": "not_allowed_token_type"}
    assert (await connections_open(session, sandbox, "xapp-unknown"))["error"] == "invalid_auth"
    async with session.post(  # and the bot's methods refuse the app-level token
        sandbox.api_url + "auth.test", headers={"Authorization": f"Bearer {APP_TOKEN}"}
    ) as response:
        assert (await response.json())["error"] == "not_allowed_token_type"
    opened = await connections_open(session, sandbox, APP_TOKEN)
    assert opened["ok"] is True and opened["url"].startswith("ws://")
    assert all(APP_TOKEN not in json.dumps(call) for call in sandbox.calls)


async def test_a_connection_starts_with_hello_and_a_url_is_used_once(
    sandbox: Sandbox, session: aiohttp.ClientSession
) -> None:
    opened = await connections_open(session, sandbox, APP_TOKEN)
    ws = await session.ws_connect(opened["url"])
    hello = await ws.receive_json()
    assert hello["type"] == "hello" and hello["num_connections"] == 1
    assert hello["connection_info"]["app_id"]
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await session.ws_connect(opened["url"])
    assert refused.value.status == 401
    await ws.close()


async def test_a_slash_command_is_an_envelope_and_its_ack_payload_is_the_answer(
    sandbox: Sandbox, session: aiohttp.ClientSession
) -> None:
    ws, _ = await connect(session, sandbox)
    command = asyncio.create_task(
        sandbox.slash_command(command="/agent", text="hi", user_id="U0ALICE", channel_id="general")
    )
    envelope = await ws.receive_json()
    assert envelope["type"] == "slash_commands" and envelope["accepts_response_payload"] is True
    assert envelope["payload"]["command"] == "/agent" and envelope["payload"]["text"] == "hi"
    await ws.send_json({"envelope_id": envelope["envelope_id"], "payload": {"text": "Queued."}})
    status, body = await command
    assert status == 200 and json.loads(body) == {"text": "Queued."}
    assert sandbox.violations == []
    await ws.close()


async def test_an_event_is_an_events_api_envelope_acked_by_its_id(
    sandbox: Sandbox, session: aiohttp.ClientSession
) -> None:
    ws, _ = await connect(session, sandbox)
    mention = asyncio.create_task(
        sandbox.mention(user_id="U0ALICE", channel_id="general", text="do it")
    )
    event = await ws.receive_json()
    assert event["type"] == "events_api" and event["accepts_response_payload"] is False
    assert event["payload"]["type"] == "event_callback"
    assert event["payload"]["event"]["type"] == "app_mention"
    assert (event["retry_attempt"], event["retry_reason"]) == (0, "")
    await ws.send_json({"envelope_id": event["envelope_id"]})
    assert (await mention)[0] == 200
    await ws.close()


async def test_an_event_never_acked_is_sent_again_then_given_up(
    sandbox: Sandbox, session: aiohttp.ClientSession
) -> None:
    ws, _ = await connect(session, sandbox)
    mention = asyncio.create_task(
        sandbox.mention(user_id="U0ALICE", channel_id="general", text="do it")
    )
    sent = [await ws.receive_json() for _ in range(1 + EVENT_RETRIES)]
    assert [e["retry_attempt"] for e in sent] == list(range(1 + EVENT_RETRIES))
    assert {e["retry_reason"] for e in sent[1:]} == {RETRY_REASON}
    assert len({e["envelope_id"] for e in sent}) == 1
    with pytest.raises(BotUnreachable, match="no ack"):
        await mention
    await ws.close()


async def test_disconnect_asks_the_app_to_move_and_a_cut_closes_the_socket(
    sandbox: Sandbox, session: aiohttp.ClientSession
) -> None:
    ws, _ = await connect(session, sandbox)
    await socket_mode(sandbox).refresh()
    disconnect = await ws.receive_json()
    assert disconnect["type"] == "disconnect" and disconnect["reason"] == "refresh_requested"
    socket_mode(sandbox).drop()
    cut = await ws.receive()
    assert cut.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR, aiohttp.WSMsgType.CLOSE)
    with pytest.raises(BotUnreachable, match="no Socket Mode connection"):
        await sandbox.mention(user_id="U0ALICE", channel_id="general", text="anyone?")

"""End to end over Socket Mode: the web process with ``SLACK_APP_TOKEN`` takes every
delivery over the websocket it opens to the sandbox (``apps.connections.open``, ``hello``,
envelopes acked with their answers), with the same listeners and guards as over HTTP.

The agent is ``tests.report_agent`` (structured arguments), so an edit can fail on the
form; the modal's ``response_action: "errors"`` travels back in the envelope's ack.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from slack_bolt.adapter.socket_mode.async_internals import run_async_bolt_app
from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.web.async_client import AsyncWebClient

from agent_bridge.errors import ConfigurationError
from agent_bridge.models import ApprovalState, RunState
from agent_bridge.settings import (
    DEMO_APP_TOKEN,
    WebConfig,
    WebSettings,
    WorkerConfig,
    read_settings,
)
from bot import ids
from bot.app import EVENTS_PATH
from bot.socket_mode import CheckedSocketModeHandler, SocketModeConnection, connect_socket_mode
from slack_sandbox import Sandbox
from slack_sandbox.delivery import FORM, payload_body
from slack_sandbox.socket_mode import RETRY_REASON
from tests.harness import (
    CHANNEL,
    REQUESTER,
    REVIEWER,
    TEST_APP_TOKEN,
    TEST_BOT_TOKEN,
    TEST_SIGNING_SECRET,
    WAIT_TIMEOUT_S,
    Harness,
)
from tests.slack_bodies import APPROVE, click_payload

FIXTURES = Path(__file__).parent / "fixtures"
CALL = {
    "tool_calls": [
        {
            "name": "send_report",
            "args": {"recipients": ["ada@example.com"], "copies": 2, "subject": "November"},
        }
    ]
}


@pytest.fixture
def agent_settings(settings: WorkerConfig) -> WorkerConfig:
    return settings.model_copy(
        update={"agent": "tests.report_agent:tools", "policy": FIXTURES / "report_policy.yml"}
    )


@pytest.fixture
def web_settings(web_settings: WebConfig) -> WebConfig:
    """The web app in Socket Mode."""
    return web_settings.model_copy(update={"slack_app_token": TEST_APP_TOKEN})


def socket(harness: Harness) -> Any:
    """The sandbox's Socket Mode side."""
    assert harness.sandbox.socket_mode is not None
    return harness.sandbox.socket_mode


def envelope_types(harness: Harness) -> set[str]:
    return {envelope["type"] for envelope in socket(harness).envelopes}


async def approve_a_report(harness: Harness) -> None:
    """A run from the slash command to its end, approved with one click."""
    run = await harness.start_run(CALL)
    (request,) = await harness.requests(run, count=1)
    status, _ = await harness.click(request, "approve")
    assert status == 200
    assert (await harness.finished(run)).state == RunState.DONE


async def test_the_approval_loop_runs_over_socket_mode(harness: Harness) -> None:
    """A command, a modal opened and submitted with a field error, then fixed, all as
    envelopes; the app serves no HTTP endpoint for Slack."""
    run = await harness.start_run(CALL)
    (request,) = await harness.requests(run, count=1)
    view = await harness.open_modal(request, "edit")
    recipients = ids.arg_block_id("recipients")
    status, body = await harness.sandbox.submit_view(
        view_id=view["id"], user_id=REVIEWER, values={recipients: '"ada@example.com"'}
    )
    assert status == 200 and body is not None and body["response_action"] == "errors"
    assert "Must be a list" in body["errors"][recipients]
    ack = socket(harness).acks[-1]
    assert ack["payload"] == body  # the field error came back in the envelope's ack
    stored = await harness.store.get_request(request.request_id)
    assert stored is not None and stored.state == ApprovalState.PENDING and not stored.decision

    status, body = await harness.sandbox.submit_view(
        view_id=view["id"],
        user_id=REVIEWER,
        values={recipients: '["grace@example.com"]'},
    )
    assert status == 200 and not body
    assert (await harness.finished(run)).state == RunState.DONE
    decided = await harness.store.get_request(request.request_id)
    assert decided is not None and decided.decision is not None
    assert decided.decision.type == "edit"
    assert envelope_types(harness) == {"slash_commands", "interactive"}
    assert harness.server is not None
    async with aiohttp.ClientSession() as session:  # Slack sends nothing over HTTP now
        async with session.post(harness.server.url + EVENTS_PATH, data=b"x") as response:
            assert response.status == 404


async def test_a_guard_refuses_over_socket_mode_as_over_http(harness: Harness) -> None:
    """The requester's own click is refused by the same guard (four eyes), privately."""
    run = await harness.start_run(CALL)
    (request,) = await harness.requests(run, count=1)
    status, _ = await harness.click(request, "approve", user_id=REQUESTER)
    assert status == 200
    told = await harness.wait_for(lambda: harness.ephemeral("four eyes"))
    assert told["user"] == REQUESTER
    stored = await harness.store.get_request(request.request_id)
    assert stored is not None and stored.state == ApprovalState.PENDING


async def test_a_cut_connection_reconnects_and_keeps_working(harness: Harness) -> None:
    sm = socket(harness)
    assert sm.opened == 1
    sm.drop()  # no close frame: the client finds out when its pings go unanswered
    await harness.wait_for(lambda: _opened(sm, 2))  # a new connection after the cut
    await approve_a_report(harness)
    await sm.refresh()  # Slack's disconnect (refresh_requested): move to a new URL
    await harness.wait_for(lambda: _opened(sm, 3))  # and after the refresh
    await approve_a_report(harness)


async def _opened(sm: Any, count: int) -> bool:
    return sm.opened >= count and bool(sm.connections)


async def test_an_event_whose_ack_is_lost_is_sent_again_and_handled_once(
    harness: Harness,
) -> None:
    """Slack sends an un-acked ``events_api`` envelope again (``retry_attempt`` 1); the
    app acks the retry and Bolt's de-duplication keeps it from starting a second run."""
    sm = socket(harness)
    sm.lose_acks = 1
    status, _ = await harness.sandbox.mention(
        user_id=REQUESTER, channel_id=CHANNEL, text="Send the November report"
    )
    assert status == 200
    events = [e for e in sm.envelopes if e["type"] == "events_api"]
    assert [(e["retry_attempt"], e["retry_reason"]) for e in events] == [(0, ""), (1, RETRY_REASON)]
    assert len({e["envelope_id"] for e in events}) == 1
    assert harness.web_store.runs_asked == 1  # the retry reached no listener
    runs = await harness.store.db.fetch_all("SELECT run_id FROM runs")
    assert len(runs) == 1


async def test_a_click_without_actions_is_refused_unacked_and_the_connection_goes_on(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    """What the HTTP edge answers 400 is not acked (nor dispatched) over Socket Mode.

    Envelopes are handled in the order they arrive, and a refusal needs no I/O, so once a
    later envelope is acked the refused one would have been acked already if it were."""
    sm = socket(harness)
    run = await harness.start_run(CALL)
    (request,) = await harness.requests(run, count=1)
    assert request.channel_id and request.message_ts
    message = harness.sandbox.message(request.channel_id, request.message_ts)
    clicked = click_payload(
        message,
        channel_id=request.channel_id,
        action_id=APPROVE,
        value=f"{request.request_id}.{request.version}",
        user_id=REVIEWER,
    )
    clicked["actions"] = []
    refused = asyncio.create_task(sm.deliver(payload_body(clicked), content_type=FORM))
    await harness.wait_for(lambda: _sent(sm, "interactive"))
    status, _ = await harness.click(request, "approve")  # a later envelope, acked
    assert status == 200
    refused_id = next(e["envelope_id"] for e in sm.envelopes if e["type"] == "interactive")
    assert refused_id not in {ack["envelope_id"] for ack in sm.acks}
    refused.cancel()
    assert (await harness.finished(run)).state == RunState.DONE
    said = [r for r in caplog.records if r.name == "bot.socket_mode"]
    assert [r.levelno for r in said] == [logging.WARNING]
    assert "block_actions without actions" in said[0].getMessage()
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []  # no traceback


async def _sent(sm: Any, kind: str) -> bool:
    return any(e["type"] == kind for e in sm.envelopes)


async def test_a_stop_acks_the_envelope_it_is_dispatching_before_it_closes(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stop (SIGTERM, a deploy) comes while a click's envelope is dispatched: its
    listener already runs (``ack_first``), its ack is not sent yet. The stop acks it over
    the still open websocket before closing, so Slack shows the reviewer no error for a
    decision that is recorded."""
    sm = socket(harness)
    run = await harness.start_run(CALL)
    (request,) = await harness.requests(run, count=1)
    answered, sending = asyncio.Event(), asyncio.Event()

    async def answered_then_held(app: AsyncApp, req: Any) -> Any:
        response = await run_async_bolt_app(app, req)
        if req.type == "interactive":
            answered.set()  # Bolt answered: the ack is ready, not yet sent
            await sending.wait()
        return response

    monkeypatch.setattr("bot.socket_mode.run_async_bolt_app", answered_then_held)
    clicking = asyncio.create_task(harness.click(request, "approve"))
    await asyncio.wait_for(answered.wait(), WAIT_TIMEOUT_S)
    server, harness.server = harness.server, None  # stopped here, not again at teardown
    assert server is not None and server.socket_mode is not None
    handler = server.socket_mode.handler
    stopping = asyncio.create_task(server.stop())

    async def settling() -> bool:
        return handler.settling

    await harness.wait_for(settling)
    assert sm.connections  # the websocket stays open for the ack
    sending.set()
    assert await asyncio.wait_for(stopping, WAIT_TIMEOUT_S) == []  # its work ended too
    assert (await clicking)[0] == 200
    (click,) = [e for e in sm.envelopes if e["type"] == "interactive"]
    assert click["envelope_id"] in {ack["envelope_id"] for ack in sm.acks}
    assert not sm.connections
    assert (await harness.finished(run)).state == RunState.DONE  # the worker applied it


async def test_a_refused_app_token_stops_the_start_with_a_clear_error() -> None:
    sandbox = Sandbox(
        signing_secret=TEST_SIGNING_SECRET, bot_token=TEST_BOT_TOKEN, app_token=TEST_APP_TOKEN
    )
    await sandbox.start()
    app = AsyncApp(
        client=AsyncWebClient(base_url=sandbox.api_url, token=TEST_BOT_TOKEN),
        signing_secret=TEST_SIGNING_SECRET,
    )
    try:
        for token, said in [("xapp-not-this-one", "invalid_auth"), (TEST_BOT_TOKEN, "not_allowed")]:
            with pytest.raises(ConfigurationError, match=f"SLACK_APP_TOKEN .*{said}") as caught:
                await connect_socket_mode(app, app_token=token)
            assert token not in str(caught.value)
        assert sandbox.socket_mode is not None and sandbox.socket_mode.opened == 0
        # Slack's own passing trouble is said to be Slack's, not blamed on the token.
        sandbox.fail_next("apps.connections.open", status=200, error="fatal_error")
        with pytest.raises(ConfigurationError, match="fatal_error") as caught:
            await connect_socket_mode(app, app_token=TEST_APP_TOKEN)
        assert "not the token" in str(caught.value)
        assert "refused" not in str(caught.value)
    finally:
        await sandbox.stop()


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("xoxb-123-abc", "SLACK_APP_TOKEN: is not an app-level token (xapp-...)"),
        (DEMO_APP_TOKEN, "SLACK_APP_TOKEN is the demo's public value: set your app's app-level"),
        ("", "SLACK_APP_TOKEN: is not an app-level token"),
    ],
)
def test_a_wrong_app_token_is_named_never_shown(
    monkeypatch: pytest.MonkeyPatch, value: str, said: str
) -> None:
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "0f3c9a-not-public")
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-not-public")
    monkeypatch.setenv("DATABASE_URL", "postgresql://app@127.0.0.1:1/app")
    monkeypatch.setenv("SLACK_APP_TOKEN", value)
    with pytest.raises(ConfigurationError) as caught:
        read_settings(WebSettings)
    assert said in str(caught.value)
    assert not value or value not in str(caught.value)


def interactive_envelope(n: int) -> str:
    """A click's Socket Mode envelope, as Slack frames it."""
    payload = {
        "type": "block_actions",
        "user": {"id": "U1", "team_id": "T1"},
        "team": {"id": "T1"},
        "api_app_id": "A1",
        "token": "x",
        "trigger_id": "t",
        "container": {"type": "message", "message_ts": "1.1", "channel_id": "C1"},
        "channel": {"id": "C1"},
        "actions": [{"action_id": "go", "block_id": "b", "type": "button", "value": "v"}],
    }
    envelope = {"type": "interactive", "envelope_id": f"env-{n}", "payload": payload}
    return json.dumps({**envelope, "accepts_response_payload": False})


def acking_handler(
    dispatch: asyncio.Event | None = None,
) -> tuple[CheckedSocketModeHandler, list[tuple[str, bool]]]:
    """A handler whose one listener acks (after ``dispatch`` is set, if given), with the
    websocket replaced by a record of each ack: (envelope ID, sent while still open)."""

    async def authorize(**_: Any) -> AuthorizeResult:
        return AuthorizeResult(
            enterprise_id=None, team_id="T1", bot_user_id="UB", bot_id="B1", bot_token="xoxb-1"
        )

    app = AsyncApp(
        client=AsyncWebClient(token="xoxb-1"),
        signing_secret="s",
        authorize=authorize,
        request_verification_enabled=False,
    )

    @app.action("go")
    async def go(ack: Any) -> None:
        if dispatch is not None:
            await dispatch.wait()
        await ack()

    handler = CheckedSocketModeHandler(app, app_token="xapp-1")
    closed = [False]
    acks: list[tuple[str, bool]] = []

    async def send(response: Any) -> None:
        acks.append((response.envelope_id, not closed[0]))

    real_close = handler.close_async

    async def close() -> None:
        closed[0] = True
        await real_close()  # type: ignore[no-untyped-call]

    handler.client.send_socket_mode_response = send  # type: ignore[method-assign]
    handler.close_async = close  # type: ignore[method-assign]
    return handler, acks


async def until(probe: Callable[[], bool]) -> None:
    """Let the loop run until ``probe`` holds (the client's processor taking envelopes)."""
    deadline = asyncio.get_running_loop().time() + WAIT_TIMEOUT_S
    while not probe():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {probe}"
        await asyncio.sleep(0)


async def test_an_envelope_received_but_not_yet_dispatched_is_acked_before_the_close() -> None:
    """The stop comes while an envelope is received but not dispatched: still in the
    client's queue, or taken off it with its listeners' task scheduled and not started.
    Each is dispatched and acked before the close."""
    for taken in (False, True):
        handler, acks = acking_handler()
        queue = handler.client.message_queue
        await queue.put(interactive_envelope(1))
        if taken:
            await until(queue.empty)  # its task is scheduled, not yet run
        await SocketModeConnection(handler=handler).stop(WAIT_TIMEOUT_S)
        assert acks == [("env-1", True)], f"taken off the queue: {taken}"


async def test_envelopes_arriving_during_the_stop_neither_hold_it_nor_are_half_handled(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Three clicks are being dispatched when the stop comes; Slack goes on sending two
    more over the open websocket. The three received before the stop are acked before
    the close; the two after are not handled at all (no listener, no ack), so a steady
    flow cannot hold the stop."""
    dispatch = asyncio.Event()
    handler, acks = acking_handler(dispatch)
    queue = handler.client.message_queue
    for n in (1, 2, 3):
        await queue.put(interactive_envelope(n))
    await until(queue.empty)  # taken by the client's processor, their acks held
    stopping = asyncio.create_task(SocketModeConnection(handler=handler).stop(WAIT_TIMEOUT_S))
    await until(lambda: handler.settling)
    for n in (4, 5):
        await queue.put(interactive_envelope(n))

    def refused() -> list[str]:
        return [r.getMessage() for r in caplog.records if "arrived while stopping" in r.message]

    await until(lambda: len(refused()) == 2)
    dispatch.set()
    await asyncio.wait_for(stopping, WAIT_TIMEOUT_S)
    assert sorted(acks) == [("env-1", True), ("env-2", True), ("env-3", True)]
    assert "env-4" in refused()[0] and "env-5" in refused()[1]


async def test_a_disconnect_queued_at_the_stop_neither_reconnects_nor_holds_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Slack's ``disconnect`` (no envelope, nothing to ack) is queued as the stop begins,
    and Slack cannot be reached for a new websocket. Taken after the stop began, it is
    dropped, not followed to a new websocket; taken before, its reconnection is not
    waited for. Either way the stop is not held to its deadline."""
    reconnects: list[bool] = []

    async def connect_to_new_endpoint(force: bool = False) -> None:
        reconnects.append(force)
        await asyncio.Event().wait()  # Slack unreachable: slack_sdk would retry forever

    disconnect = json.dumps({"type": "disconnect", "reason": "warning"})
    for taken_before_the_stop in (False, True):
        handler, acks = acking_handler()
        reconnects.clear()
        handler.client.connect_to_new_endpoint = connect_to_new_endpoint  # type: ignore[method-assign]
        await handler.client.message_queue.put(disconnect)
        if taken_before_the_stop:
            await until(lambda: bool(reconnects))
        began = asyncio.get_running_loop().time()
        await SocketModeConnection(handler=handler).stop(WAIT_TIMEOUT_S)  # settles at once
        took = asyncio.get_running_loop().time() - began
        assert took < WAIT_TIMEOUT_S / 4  # not held to its deadline
        assert acks == [] and reconnects == ([True] if taken_before_the_stop else [])
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []

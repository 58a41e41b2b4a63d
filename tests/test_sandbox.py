"""The local Slack sandbox speaks Slack's wire format, both ways.

A real ``AsyncWebClient`` calls its Web API; a tiny aiohttp bot stub (below) receives
its deliveries and checks their signatures with the real ``SignatureVerifier``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import parse_qsl

import aiohttp
import pytest
from aiohttp import web
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from bot.http_limits import HEADER_READ_TIMEOUT_S
from slack_sandbox import BotUnreachable, NotSubmitted, Sandbox, SandboxError, live_mentions
from slack_sandbox.delivery import IDLE_REUSE_S, form_body
from slack_sandbox.payloads import slash_command_fields
from slack_sandbox.validation import check_message, check_view

SECRET = "test-signing-secret"
TOKEN = "xoxb-sandbox-test"
REVIEWER = "U0REVIEWER"
GENERAL = "C0GENERAL"

Answer = Callable[[dict[str, Any]], tuple[int, Any]]


class FakeClock:
    """Unix time that moves only when told to."""

    def __init__(self) -> None:
        self.now = 1_733_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class BotStub:
    """A bot at ``/slack/events``: verifies signatures, records requests, answers.

    ``answer(request)`` returns ``(status, body)``; body is text or a JSON-able dict.
    """

    def __init__(self) -> None:
        self.verifier = SignatureVerifier(SECRET)
        self.received: list[dict[str, Any]] = []
        self.rejected = 0
        self.answer: Answer = lambda request: (200, "")
        self.url = ""
        app = web.Application()
        app.router.add_post("/slack/events", self._handle)
        self._runner = web.AppRunner(app)

    async def start(self) -> None:
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}/slack/events"

    async def stop(self) -> None:
        await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.Response:
        raw = await request.read()
        headers = request.headers
        if not self.verifier.is_valid(
            raw, headers.get("X-Slack-Request-Timestamp"), headers.get("X-Slack-Signature")
        ):
            self.rejected += 1
            return web.Response(status=401, text="invalid signature")
        if headers.get("Content-Type") == "application/json":  # an Events API callback
            form, payload = {}, json.loads(raw)
        else:
            form = dict(parse_qsl(raw.decode()))
            payload = json.loads(form["payload"]) if "payload" in form else None
        record = {"content_type": headers.get("Content-Type"), "form": form, "payload": payload}
        self.received.append(record)
        status, body = self.answer(record)
        if isinstance(body, dict):
            return web.json_response(body, status=status)
        return web.Response(status=status, text=body)

    @property
    def last(self) -> dict[str, Any]:
        request: dict[str, Any] = self.received[-1]["payload"] or self.received[-1]["form"]
        return request


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def bot() -> AsyncIterator[BotStub]:
    stub = BotStub()
    await stub.start()
    yield stub
    await stub.stop()


@pytest.fixture
async def sandbox(bot: BotStub, clock: FakeClock) -> AsyncIterator[Sandbox]:
    sb = Sandbox(signing_secret=SECRET, bot_token=TOKEN, request_url=bot.url, clock=clock)
    await sb.start()
    yield sb
    await sb.stop()


@pytest.fixture
def client(sandbox: Sandbox) -> AsyncWebClient:
    return AsyncWebClient(token=TOKEN, base_url=sandbox.api_url)


async def http(method: str, url: str, **kwargs: Any) -> tuple[int, dict[str, str], Any]:
    """Return ``(status, headers, JSON or text body)`` of one raw HTTP request."""
    async with aiohttp.ClientSession() as session:
        async with session.request(method, url, **kwargs) as response:
            text = await response.text()
            try:
                body: Any = json.loads(text)
            except ValueError:
                body = text
            return response.status, dict(response.headers), body


def button(action_id: str, value: str, text: str = "Approve", **extra: Any) -> dict[str, Any]:
    return {
        "type": "button",
        "action_id": action_id,
        "text": {"type": "plain_text", "text": text},
        "value": value,
    } | extra


APPROVAL_BLOCKS: list[dict[str, Any]] = [
    {"type": "header", "text": {"type": "plain_text", "text": "Approve run_sql?"}},
    {"type": "section", "block_id": "args", "text": {"type": "mrkdwn", "text": "`DROP t`"}},
    {
        "type": "actions",
        "block_id": "decide",
        "elements": [
            button("approval:approve", "req-1", style="primary"),
            button("approval:reject", "req-1", "Reject", style="danger"),
        ],
    },
]


def modal(*blocks: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "type": "modal",
        "callback_id": "approval_edit",
        "title": {"type": "plain_text", "text": "Edit run_sql"},
        "submit": {"type": "plain_text", "text": "Submit"},
        "private_metadata": "req-1",
        "blocks": list(blocks),
    } | extra


def text_input(block_id: str, **element: Any) -> dict[str, Any]:
    return {
        "type": "input",
        "block_id": block_id,
        "label": {"type": "plain_text", "text": block_id},
        "element": {"type": "plain_text_input", "action_id": "value"} | element,
    }


def options(*values: str) -> list[dict[str, Any]]:
    return [{"text": {"type": "plain_text", "text": v.title()}, "value": v} for v in values]


async def post_card(client: AsyncWebClient) -> str:
    response = await client.chat_postMessage(
        channel=GENERAL, text="Approve?", blocks=APPROVAL_BLOCKS
    )
    ts = response["ts"]
    assert isinstance(ts, str)
    return ts


async def fresh_trigger(sandbox: Sandbox, bot: BotStub, client: AsyncWebClient) -> str:
    ts = await post_card(client)
    await sandbox.click(channel_id=GENERAL, ts=ts, action_id="approval:approve", user_id=REVIEWER)
    trigger_id = bot.last["trigger_id"]
    assert isinstance(trigger_id, str)
    return trigger_id


# -- Web API ------------------------------------------------------------------------------


async def test_post_reply_update_and_read_back(sandbox: Sandbox, client: AsyncWebClient) -> None:
    posted = await client.chat_postMessage(channel="#general", text="hi", blocks=APPROVAL_BLOCKS)
    assert posted["ok"] and posted["channel"] == GENERAL
    ts = posted["ts"]
    assert posted["message"]["blocks"][2]["elements"][0]["value"] == "req-1"
    reply = await client.chat_postMessage(channel=GENERAL, text="tool ran", thread_ts=ts)
    later = await client.chat_postMessage(channel=GENERAL, text="second")
    stamps = [ts, reply["ts"], later["ts"]]
    assert stamps == sorted(stamps, key=float) and len(set(stamps)) == 3
    assert all(len(s.split(".")[1]) == 6 for s in stamps)

    updated = await client.chat_update(channel=GENERAL, ts=ts, text="decided", blocks=[])
    assert updated["ok"] and updated["text"] == "decided"
    assert "edited" in sandbox.message(GENERAL, ts)

    history = await client.conversations_history(channel=GENERAL, limit=10)
    assert [m["ts"] for m in history["messages"]] == [later["ts"], ts]
    replies = await client.conversations_replies(channel=GENERAL, ts=ts)
    assert [m["ts"] for m in replies["messages"]] == [ts, reply["ts"]]
    assert [m["ts"] for m in sandbox.thread(GENERAL, ts)] == [ts, reply["ts"]]
    assert [m["ts"] for m in sandbox.messages(GENERAL)] == stamps
    assert sandbox.messages(GENERAL)[1]["thread_ts"] == ts
    assert sandbox.violations == []


async def test_refusals_slack_would_give(sandbox: Sandbox, client: AsyncWebClient) -> None:
    calls = [
        ("chat.postMessage", {"channel": GENERAL, "text": "x", "thread_ts": "1.000001"}),
        ("chat.update", {"channel": GENERAL, "ts": "1.000001", "text": "x"}),
        ("chat.postMessage", {"channel": GENERAL}),
        ("users.info", {"user": "U0NOBODY"}),
        ("conversations.history", {"channel": "C0NOWHERE"}),
    ]
    errors = []
    for method, args in calls:
        with pytest.raises(SlackApiError) as caught:
            await client.api_call(method, json=args)
        errors.append(caught.value.response["error"])
    expected = [
        "thread_not_found",
        "message_not_found",
        "no_text",
        "user_not_found",
        "channel_not_found",
    ]
    assert errors == expected
    assert [c.get("error") for c in sandbox.calls] == expected
    assert sandbox.violations == ["chat.postMessage in C0GENERAL: no_text"]


async def test_channels_resolve_by_name_and_id(sandbox: Sandbox, client: AsyncWebClient) -> None:
    new = await client.chat_postMessage(channel="#war-room", text="x")
    assert new["channel"] == sandbox.channel_id("war-room")
    info = await client.conversations_info(channel=new["channel"])
    assert info["channel"]["name"] == "war-room"
    assert (await client.chat_postMessage(channel="C0APPROVAL", text="x"))[
        "channel"
    ] == "C0APPROVAL"
    user = await client.users_info(user=REVIEWER)
    assert user["user"]["name"] == "reviewer" and user["user"]["profile"]["display_name"]
    assert (await client.auth_test())["team_id"] == "T0SANDBOX"
    link = await client.chat_getPermalink(channel=new["channel"], message_ts=new["ts"])
    assert link["permalink"].startswith(sandbox.base_url)


async def test_ephemeral_and_delete(sandbox: Sandbox, client: AsyncWebClient) -> None:
    ts = await post_card(client)
    eph = await client.chat_postEphemeral(channel=GENERAL, user=REVIEWER, text="only you")
    assert eph["ok"] and eph["message_ts"]
    assert [e["text"] for e in sandbox.ephemerals(GENERAL, REVIEWER)] == ["only you"]
    assert sandbox.ephemerals(user_id="U0ALICE") == []
    await client.chat_delete(channel=GENERAL, ts=ts)  # sent form-encoded
    assert sandbox.messages(GENERAL) == []


async def test_form_encoded_body_with_token_field(sandbox: Sandbox) -> None:
    form = {"token": TOKEN, "channel": GENERAL, "text": "x", "blocks": json.dumps(APPROVAL_BLOCKS)}
    status, _, body = await http("POST", sandbox.api_url + "chat.postMessage", data=form)
    assert status == 200 and body["ok"], body
    assert sandbox.message(GENERAL, body["ts"])["blocks"][0]["type"] == "header"


async def test_auth_and_unknown_method(sandbox: Sandbox) -> None:
    bad = AsyncWebClient(token="xoxb-wrong", base_url=sandbox.api_url)
    with pytest.raises(SlackApiError) as caught:
        await bad.chat_postMessage(channel=GENERAL, text="x")
    assert caught.value.response["error"] == "invalid_auth"
    _, _, body = await http("POST", sandbox.api_url + "chat.postMessage", json={"text": "x"})
    assert body == {"ok": False, "error": "invalid_auth"}
    headers = {"Authorization": f"Bearer {TOKEN}"}
    _, _, body = await http("POST", sandbox.api_url + "chat.fly", headers=headers)
    assert body == {"ok": False, "error": "unknown_method"}
    assert sandbox.messages(GENERAL) == []


async def test_fail_next_answers_429_then_succeeds(sandbox: Sandbox) -> None:
    sandbox.fail_next("chat.postMessage", retry_after_s=7)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    url = sandbox.api_url + "chat.postMessage"
    status, got, body = await http(
        "POST", url, json={"channel": GENERAL, "text": "x"}, headers=headers
    )
    assert (status, got["Retry-After"], body["error"]) == (429, "7", "ratelimited")
    sandbox.fail_next("chat.update", status=503)
    status, _, body = await http("POST", sandbox.api_url + "chat.update", json={}, headers=headers)
    assert (status, body) == (503, {"ok": False, "error": "internal_error"})

    sandbox.fail_next("chat.postMessage", retry_after_s=0)
    client = AsyncWebClient(
        token=TOKEN,
        base_url=sandbox.api_url,
        retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=1)],
    )
    assert (await client.chat_postMessage(channel=GENERAL, text="x"))["ok"]
    posts = [c for c in sandbox.calls if c["method"] == "chat.postMessage"]
    assert [c["ok"] for c in posts] == [False, False, True]
    assert len(sandbox.messages(GENERAL)) == 1


# -- Block Kit validation ----------------------------------------------------------------


async def test_invalid_block_kit_is_refused_and_recorded(
    sandbox: Sandbox, bot: BotStub, client: AsyncWebClient
) -> None:
    too_many = [{"type": "divider"}] * 51
    with pytest.raises(SlackApiError) as caught:
        await client.chat_postMessage(channel=GENERAL, text="x", blocks=too_many)
    assert caught.value.response["error"] == "invalid_blocks"
    assert caught.value.response["response_metadata"]["messages"]
    long_value = [{"type": "actions", "elements": [button("approval:approve", "v" * 2001)]}]
    with pytest.raises(SlackApiError):
        await client.chat_postMessage(channel=GENERAL, text="x", blocks=long_value)
    trigger = await fresh_trigger(sandbox, bot, client)
    long_title = modal(text_input("reason"), title={"type": "plain_text", "text": "t" * 25})
    with pytest.raises(SlackApiError) as caught:
        await client.views_open(trigger_id=trigger, view=long_title)
    assert caught.value.response["error"] == "invalid_arguments"

    assert len(sandbox.messages(GENERAL)) == 1  # only the card fresh_trigger posted
    assert len(sandbox.violations) == 3, sandbox.violations
    assert "51 blocks" in sandbox.violations[0]
    assert "value attribute cannot exceed 2000" in sandbox.violations[1]
    assert "title" in sandbox.violations[2]


@pytest.mark.parametrize(
    ("blocks", "needle"),
    [
        ([{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}], "3000"),
        ([{"type": "header", "text": {"type": "plain_text", "text": "x" * 151}}], "150"),
        ([{"type": "actions", "elements": [button("a", "v", "x" * 76)]}], "75"),
        ([{"type": "divider", "block_id": "d"}, {"type": "divider", "block_id": "d"}], "duplicate"),
        ([{"type": "actions", "elements": [button("a", "1"), button("a", "2")]}], "duplicate"),
        ([{"type": "section", "text": {"type": "mrkdwn", "text": "x"}, "colour": 1}], "unknown"),
        ([{"type": "header", "text": {"type": "mrkdwn", "text": "x"}}], "plain_text"),
        ([{"type": "section", "text": {"type": "mrkdwn", "text": ""}}], "more than 0"),
        ([{"type": "section", "text": "plain string"}], "text object"),
        ([{"type": "carousel-ish"}], "unsupported"),
        ([{"type": "divider", "block_id": "b" * 256}], "255"),
    ],
)
def test_message_checks(blocks: list[dict[str, Any]], needle: str) -> None:
    problems = [str(p) for p in check_message("fallback", blocks)]
    assert any(needle in p for p in problems), problems


def test_message_checks_pass_valid_blocks() -> None:
    assert check_message("x" * 40_000, APPROVAL_BLOCKS) == []
    assert check_message("x" * 40_001, None)


@pytest.mark.parametrize(
    ("view", "needle"),
    [
        (modal(text_input("r"), submit=None), "submit"),
        (modal(text_input("r", initial_value="x" * 11, max_length=10)), "limit is 10"),
        (modal(text_input("r", initial_value="x" * 3001)), "limit is 3000"),
        (modal(text_input("r"), private_metadata="m" * 3001), "private_metadata"),
        (modal(text_input("r"), callback_id="c" * 256), "callback_id"),
        (modal(*[{"type": "divider"}] * 101), "100"),
        (modal(text_input("r"), close={"type": "plain_text", "text": "c" * 25}), "close"),
        (modal(text_input("r") | {"label": {"type": "plain_text", "text": "l" * 2001}}), "label"),
        (modal(text_input("r"), colour="red"), "unknown"),
    ],
)
def test_view_checks(view: dict[str, Any], needle: str) -> None:
    problems = [str(p) for p in check_view(view)]
    assert any(needle in p for p in problems), problems


def test_view_checks_pass_a_full_form() -> None:
    assert check_view(modal(*FORM_BLOCKS, notify_on_close=True)) == []


def test_live_mentions_finds_every_live_token() -> None:
    text = (
        "hi <!channel> <!here|here> <@U123> <#C999|ops> <!subteam^S1> "
        "<https://x.io|click> <!everyone>"
    )
    assert live_mentions(text) == [
        "<!channel>",
        "<!here|here>",
        "<@U123>",
        "<#C999|ops>",
        "<!subteam^S1>",
        "<https://x.io|click>",
        "<!everyone>",
    ]
    assert live_mentions("&lt;!channel&gt; &lt;@U123&gt; a &amp; b <https://x.io>") == []


# -- Delivering to the bot ---------------------------------------------------------------

FORM_BLOCKS = [
    {"type": "section", "text": {"type": "mrkdwn", "text": "Edit the call"}},
    text_input("arg:query", multiline=True, initial_value="SELECT 1"),
    {
        "type": "input",
        "block_id": "arg:limit",
        "label": {"type": "plain_text", "text": "limit"},
        "element": {"type": "number_input", "action_id": "value", "is_decimal_allowed": False},
        "optional": True,
    },
    {
        "type": "input",
        "block_id": "arg:db",
        "label": {"type": "plain_text", "text": "db"},
        "element": {
            "type": "static_select",
            "action_id": "value",
            "options": options("prod", "staging"),
            "initial_option": options("staging")[0],
        },
    },
    {
        "type": "input",
        "block_id": "arg:mode",
        "label": {"type": "plain_text", "text": "mode"},
        "element": {"type": "radio_buttons", "action_id": "value", "options": options("ro", "rw")},
        "optional": True,
    },
    {
        "type": "input",
        "block_id": "arg:flags",
        "label": {"type": "plain_text", "text": "flags"},
        "element": {"type": "checkboxes", "action_id": "value", "options": options("a", "b")},
        "optional": True,
    },
]


async def test_click_delivers_a_signed_block_actions_payload(
    sandbox: Sandbox, bot: BotStub, client: AsyncWebClient
) -> None:
    ts = await post_card(client)
    reply = await client.chat_postMessage(
        channel=GENERAL,
        text="r",
        thread_ts=ts,
        blocks=[{"type": "actions", "elements": [button("approval:approve", "req-2")]}],
    )
    status, _ = await sandbox.click(
        channel_id=GENERAL, ts=reply["ts"], action_id="approval:approve", user_id=REVIEWER
    )
    assert status == 200 and bot.rejected == 0
    assert bot.received[-1]["content_type"] == "application/x-www-form-urlencoded"
    p = bot.last
    assert p["type"] == "block_actions" and p["api_app_id"] and p["token"]
    assert p["user"] == {
        "id": REVIEWER,
        "username": "reviewer",
        "name": "reviewer",
        "team_id": "T0SANDBOX",
    }
    assert p["container"] == {
        "type": "message",
        "message_ts": reply["ts"],
        "channel_id": GENERAL,
        "is_ephemeral": False,
        "thread_ts": ts,
    }
    assert p["team"] == {"id": "T0SANDBOX", "domain": "sandbox"}
    assert p["channel"] == {"id": GENERAL, "name": "general"}
    assert (p["enterprise"], p["is_enterprise_install"]) == (None, False)
    assert p["message"]["ts"] == reply["ts"] and p["message"]["thread_ts"] == ts
    assert p["state"] == {"values": {}}
    assert p["response_url"].startswith(sandbox.base_url + "response/")
    (action,) = p["actions"]
    assert action["action_id"] == "approval:approve" and action["value"] == "req-2"
    assert action["type"] == "button" and action["text"]["text"] == "Approve"
    assert action["block_id"] == p["message"]["blocks"][0]["block_id"]  # filled in by Slack
    assert float(action["action_ts"]) > 0 and p["trigger_id"]

    await sandbox.click(
        channel_id=GENERAL, ts=ts, action_id="approval:reject", user_id="U0DBA", value="req-1"
    )
    assert bot.last["actions"][0]["value"] == "req-1" and bot.last["user"]["id"] == "U0DBA"
    with pytest.raises(SandboxError, match="no button"):
        await sandbox.click(channel_id=GENERAL, ts=ts, action_id="approval:edit", user_id=REVIEWER)
    with pytest.raises(SandboxError, match="no button"):
        await sandbox.click(
            channel_id=GENERAL, ts=ts, action_id="approval:reject", user_id=REVIEWER, value="x"
        )
    assert len(bot.received) == 2
    assert sandbox.violations == []


async def test_views_open_needs_a_fresh_unused_trigger(
    sandbox: Sandbox, bot: BotStub, client: AsyncWebClient, clock: FakeClock
) -> None:
    trigger = await fresh_trigger(sandbox, bot, client)
    opened = await client.views_open(trigger_id=trigger, view=modal(text_input("reason")))
    view = opened["view"]
    assert view["id"].startswith("V") and view["hash"] and view["state"] == {"values": {}}
    assert view["callback_id"] == "approval_edit" and view["private_metadata"] == "req-1"
    (shown,) = sandbox.open_views(REVIEWER)
    assert shown["id"] == view["id"] and shown["errors"] == {}

    errors = []
    for trigger_id, wait_s in [(trigger, 0), ("123.456.abc", 0), (None, 3.1)]:
        if trigger_id is None:
            trigger_id = await fresh_trigger(sandbox, bot, client)
        clock.advance(wait_s)
        with pytest.raises(SlackApiError) as caught:
            await client.views_open(trigger_id=trigger_id, view=modal(text_input("reason")))
        errors.append(caught.value.response["error"])
    assert errors == ["exchanged_trigger_id", "invalid_trigger_id", "expired_trigger_id"]
    assert len(sandbox.violations) == 3
    assert len(sandbox.open_views(REVIEWER)) == 1


async def open_form(sandbox: Sandbox, bot: BotStub, client: AsyncWebClient, **extra: Any) -> str:
    trigger = await fresh_trigger(sandbox, bot, client)
    opened = await client.views_open(trigger_id=trigger, view=modal(*FORM_BLOCKS, **extra))
    view_id = opened["view"]["id"]
    assert isinstance(view_id, str)
    return view_id


async def test_submit_with_errors_keeps_the_view_then_empty_answer_closes_it(
    sandbox: Sandbox, bot: BotStub, client: AsyncWebClient
) -> None:
    view_id = await open_form(sandbox, bot, client)
    bot.answer = lambda r: (200, {"response_action": "errors", "errors": {"arg:query": "Bad SQL"}})
    status, body = await sandbox.submit_view(
        view_id=view_id, user_id=REVIEWER, values={"arg:limit": "5", "arg:flags": ["b"]}
    )
    assert status == 200 and body is not None and body["response_action"] == "errors"
    p = bot.last
    assert p["type"] == "view_submission" and p["user"]["id"] == REVIEWER and p["trigger_id"]
    assert (p["response_urls"], p["enterprise"], p["is_enterprise_install"]) == ([], None, False)
    view = p["view"]
    assert view["id"] == view_id and view["callback_id"] == "approval_edit"
    assert view["private_metadata"] == "req-1" and view["root_view_id"] == view_id
    assert view["type"] == "modal" and view["hash"] and "errors" not in view
    assert view["state"]["values"] == {
        "arg:query": {"value": {"type": "plain_text_input", "value": "SELECT 1"}},
        "arg:limit": {"value": {"type": "number_input", "value": "5"}},
        "arg:db": {"value": {"type": "static_select", "selected_option": options("staging")[0]}},
        "arg:mode": {"value": {"type": "radio_buttons", "selected_option": None}},
        "arg:flags": {"value": {"type": "checkboxes", "selected_options": options("b")}},
    }
    (shown,) = sandbox.open_views(REVIEWER)
    assert shown["errors"] == {"arg:query": "Bad SQL"}

    bot.answer = lambda r: (200, "")
    status, body = await sandbox.submit_view(
        view_id=view_id, user_id=REVIEWER, values={"arg:query": "SELECT 2", "arg:mode": "ro"}
    )
    assert (status, body) == (200, None)
    values = bot.last["view"]["state"]["values"]
    assert values["arg:query"]["value"]["value"] == "SELECT 2"
    assert values["arg:limit"]["value"]["value"] == "5"  # kept from the shown modal
    assert values["arg:mode"]["value"]["selected_option"]["value"] == "ro"
    assert sandbox.open_views(REVIEWER) == []
    assert sandbox.violations == []


async def test_submit_applies_update_push_and_clear(
    sandbox: Sandbox, bot: BotStub, client: AsyncWebClient
) -> None:
    view_id = await open_form(sandbox, bot, client)
    done = modal({"type": "section", "text": {"type": "mrkdwn", "text": "Done"}}, submit=None)
    bot.answer = lambda r: (200, {"response_action": "update", "view": done})
    await sandbox.submit_view(view_id=view_id, user_id=REVIEWER)
    (shown,) = sandbox.open_views(REVIEWER)
    assert shown["id"] == view_id and shown["blocks"][0]["text"]["text"] == "Done"
    with pytest.raises(SandboxError, match="no submit"):
        await sandbox.submit_view(view_id=view_id, user_id=REVIEWER)

    view_id = await open_form(sandbox, bot, client)
    bot.answer = lambda r: (200, {"response_action": "push", "view": modal(text_input("why"))})
    await sandbox.submit_view(view_id=view_id, user_id=REVIEWER)
    stack = sandbox.open_views(REVIEWER)
    assert len(stack) == 2 and stack[1]["previous_view_id"] == view_id
    bot.answer = lambda r: (200, {"response_action": "clear"})
    await sandbox.submit_view(view_id=stack[1]["id"], user_id=REVIEWER, values={"why": "ok"})
    assert sandbox.open_views(REVIEWER) == []
    assert sandbox.violations == []


async def test_bad_submission_answers_are_violations(
    sandbox: Sandbox, bot: BotStub, client: AsyncWebClient
) -> None:
    view_id = await open_form(sandbox, bot, client)
    bot.answer = lambda r: (200, {"response_action": "errors", "errors": {"nope": "x"}})
    await sandbox.submit_view(view_id=view_id, user_id=REVIEWER)
    bot.answer = lambda r: (500, "boom")
    await sandbox.submit_view(view_id=view_id, user_id=REVIEWER)
    assert "not an input block" in sandbox.violations[0]
    assert "HTTP 500" in sandbox.violations[1]
    assert sandbox.open_views(REVIEWER)[0]["errors"] == {}


async def test_slack_client_checks_before_submitting(
    sandbox: Sandbox, bot: BotStub, client: AsyncWebClient
) -> None:
    view_id = await open_form(sandbox, bot, client)
    sent = len(bot.received)
    with pytest.raises(NotSubmitted, match="would not submit"):
        await sandbox.submit_view(view_id=view_id, user_id=REVIEWER, values={"arg:query": ""})
    with pytest.raises(NotSubmitted, match="would not submit"):
        await sandbox.submit_view(view_id=view_id, user_id=REVIEWER, values={"arg:limit": "1.5"})
    with pytest.raises(SandboxError, match="not an option"):
        await sandbox.submit_view(view_id=view_id, user_id=REVIEWER, values={"arg:db": "dev"})
    with pytest.raises(SandboxError, match="no input blocks"):
        await sandbox.submit_view(view_id=view_id, user_id=REVIEWER, values={"nope": "x"})
    with pytest.raises(SandboxError, match="not open"):
        await sandbox.submit_view(view_id=view_id, user_id="U0ALICE")
    assert len(bot.received) == sent
    assert sandbox.open_views(REVIEWER)[0]["errors"] == {
        "arg:query": "Please complete this required field.",  # still empty, as the modal shows
        "arg:limit": "Enter a whole number.",
    }


async def test_close_view_notifies_only_when_asked(
    sandbox: Sandbox, bot: BotStub, client: AsyncWebClient
) -> None:
    view_id = await open_form(sandbox, bot, client)
    sent = len(bot.received)
    await sandbox.close_view(view_id=view_id, user_id=REVIEWER)
    assert len(bot.received) == sent and sandbox.open_views(REVIEWER) == []
    view_id = await open_form(sandbox, bot, client, notify_on_close=True)
    await sandbox.close_view(view_id=view_id, user_id=REVIEWER)
    assert bot.last["type"] == "view_closed" and bot.last["view"]["id"] == view_id
    assert bot.last["is_cleared"] is False


async def test_response_url_posts_ephemeral_in_channel_and_replaces(
    sandbox: Sandbox, bot: BotStub, client: AsyncWebClient
) -> None:
    ts = await post_card(client)
    await sandbox.click(channel_id=GENERAL, ts=ts, action_id="approval:approve", user_id=REVIEWER)
    url = bot.last["response_url"]
    status, _, body = await http("POST", url, json={"text": "Only you see this"})
    assert (status, body) == (200, {"ok": True})
    (eph,) = sandbox.ephemerals(GENERAL, REVIEWER)
    assert eph["text"] == "Only you see this"
    await http("POST", url, json={"text": "Everyone", "response_type": "in_channel"})
    assert sandbox.messages(GENERAL)[-1]["text"] == "Everyone"
    await http(
        "POST", url, json={"text": "Approved by reviewer", "replace_original": True, "blocks": []}
    )
    assert sandbox.message(GENERAL, ts)["text"] == "Approved by reviewer"
    status, _, body = await http("POST", url, json={"blocks": [{"type": "header"}]})
    assert status == 400 and body["error"] == "invalid_blocks"
    assert len(sandbox.violations) == 1
    status, _, _ = await http("POST", sandbox.base_url + "response/unknown", json={"text": "x"})
    assert status == 404


async def test_slash_command_fields_and_immediate_answer(sandbox: Sandbox, bot: BotStub) -> None:
    bot.answer = lambda r: (200, "Started run r-1")
    status, body = await sandbox.slash_command(
        command="/agent", text="count users", user_id=REVIEWER, channel_id=GENERAL
    )
    assert (status, body) == (200, "Started run r-1")
    form = bot.last
    assert set(form) == {
        "token",
        "team_id",
        "team_domain",
        "channel_id",
        "channel_name",
        "user_id",
        "user_name",
        "command",
        "text",
        "api_app_id",
        "is_enterprise_install",
        "response_url",
        "trigger_id",
    }
    assert (form["command"], form["text"], form["channel_name"]) == (
        "/agent",
        "count users",
        "general",
    )
    assert [e["text"] for e in sandbox.ephemerals(GENERAL, REVIEWER)] == ["Started run r-1"]
    assert sandbox.violations == []


async def test_a_slow_answer_is_a_violation_and_is_not_applied(bot: BotStub) -> None:
    # With no time allowed at all, any answer is late: no need to make the bot sleep.
    bot.answer = lambda request: (200, "too late")
    sb = Sandbox(signing_secret=SECRET, bot_token=TOKEN, request_url=bot.url, ack_deadline_s=0)
    await sb.start()
    try:
        status, _ = await sb.slash_command(
            command="/agent", text="x", user_id=REVIEWER, channel_id=GENERAL
        )
    finally:
        await sb.stop()
    assert status == 200 and sb.ephemerals() == []
    assert len(sb.violations) == 1 and "Slack gives up after 0 s" in sb.violations[0]
    assert len(bot.received) == 1  # the answer came, and was not applied


async def test_post_signed_reaches_the_bot_forged_or_not(sandbox: Sandbox, bot: BotStub) -> None:
    fields = slash_command_fields(
        team_id="T0SANDBOX",
        channel_id=GENERAL,
        channel_name="general",
        user_id=REVIEWER,
        user_name="reviewer",
        command="/agent",
        text="x",
        response_url=sandbox.base_url + "response/none",
        trigger_id="1.2.3",
    )
    body = form_body(fields)
    assert (await sandbox.post_signed(body))[0] == 200
    assert (await sandbox.post_signed(body, signature="v0=forged"))[0] == 401
    assert (await sandbox.post_signed(body, timestamp=int(time.time()) - 600))[0] == 401
    assert bot.rejected == 2 and len(bot.received) == 1


async def test_unreachable_bot_is_a_sandbox_error(sandbox: Sandbox) -> None:
    sandbox.request_url = None
    with pytest.raises(BotUnreachable):
        await sandbox.slash_command(
            command="/agent", text="x", user_id=REVIEWER, channel_id=GENERAL
        )


# -- The page -------------------------------------------------------------------------------


async def test_page_serves_html_state_and_actions(
    sandbox: Sandbox, bot: BotStub, client: AsyncWebClient
) -> None:
    ts = await post_card(client)
    await client.chat_postMessage(channel=GENERAL, text="reply", thread_ts=ts)
    status, headers, html = await http("GET", sandbox.base_url)
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert "<script" in html and "http" not in html.replace(sandbox.base_url, "")
    for asset in ("static/app.js", "static/style.css"):
        assert (await http("GET", sandbox.base_url + asset))[0] == 200

    status, _, state = await http("GET", sandbox.base_url + "sandbox/state")
    assert status == 200 and {"id": GENERAL, "name": "general"} in state["channels"]
    (card,) = state["messages"][GENERAL]
    assert card["ts"] == ts and [r["text"] for r in card["replies"]] == ["reply"]

    click = {"channel_id": GENERAL, "ts": ts, "action_id": "approval:approve", "user_id": REVIEWER}
    status, _, body = await http("POST", sandbox.base_url + "sandbox/click", json=click)
    assert (status, body["ok"], body["status"]) == (200, True, 200)
    assert bot.last["actions"][0]["action_id"] == "approval:approve"
    for bad, code in [
        ("not json", 400),
        (json.dumps([1]), 400),
        (json.dumps({"channel_id": GENERAL}), 400),
        (json.dumps(click | {"action_id": "approval:nope"}), 409),
    ]:
        status, _, body = await http("POST", sandbox.base_url + "sandbox/click", data=bad)
        assert (status, body["ok"]) == (code, False) and body["error"]
    status, _, body = await http("POST", sandbox.base_url + "sandbox/submit", json={"view_id": 1})
    assert status == 400 and not body["ok"]


async def test_page_endpoints_drive_commands_and_modals(
    sandbox: Sandbox, bot: BotStub, client: AsyncWebClient
) -> None:
    base = sandbox.base_url + "sandbox/"
    command = {"channel_id": GENERAL, "user_id": "U0ALICE", "command": "/agent", "text": "go"}
    status, _, body = await http("POST", base + "command", json=command)
    assert (status, body["ok"]) == (200, True)
    assert (bot.last["command"], bot.last["text"], bot.last["user_id"]) == (
        "/agent",
        "go",
        "U0ALICE",
    )

    view_id = await open_form(sandbox, bot, client)
    submit = {"view_id": view_id, "user_id": REVIEWER, "values": {"arg:query": None}}
    status, _, body = await http("POST", base + "submit", json=submit)
    assert status == 422 and body["field_errors"] == {
        "arg:query": "Please complete this required field."
    }
    _, _, state = await http("GET", base + "state")
    assert state["views"][REVIEWER][0]["errors"] == body["field_errors"]

    submit["values"] = {"arg:query": "SELECT 1", "arg:flags": ["a"], "arg:mode": None}
    status, _, body = await http("POST", base + "submit", json=submit)
    assert (status, body) == (200, {"ok": True, "status": 200, "body": None})
    assert bot.last["view"]["state"]["values"]["arg:flags"]["value"]["selected_options"]
    assert sandbox.open_views(REVIEWER) == []

    view_id = await open_form(sandbox, bot, client)
    status, _, body = await http("POST", base + "close", json={"view_id": view_id})
    assert status == 400 and not body["ok"]
    status, _, body = await http(
        "POST", base + "close", json={"view_id": view_id, "user_id": REVIEWER}
    )
    assert (status, body["ok"]) == (200, True) and sandbox.open_views(REVIEWER) == []
    assert sandbox.violations == []


# -- People, user groups, channels ----------------------------------------------------------

GUEST = "U0GUEST"
"""A Slack Connect guest from T0OTHER (no org)."""
GRID = "W0GRID"
"""A person of T0GRIDB, another workspace of the sandbox's org E0ORG."""
HELPER_BOT = "U0HELPER"
"""Another app's bot user."""


@pytest.fixture
async def grid(bot: BotStub, clock: FakeClock) -> AsyncIterator[Sandbox]:
    """A sandbox whose workspace is in org E0ORG, with a guest, an org member and a bot."""
    sb = Sandbox(
        signing_secret=SECRET,
        bot_token=TOKEN,
        request_url=bot.url,
        clock=clock,
        enterprise_id="E0ORG",
        enterprise_name="Acme",
    )
    sb.add_user(GUEST, "gwen", team_id="T0OTHER")
    sb.add_user(GRID, "grace", team_id="T0GRIDB", enterprise_id="E0ORG")
    sb.add_user(HELPER_BOT, "helper", is_bot=True)
    await sb.start()
    yield sb
    await sb.stop()


async def test_a_click_carries_the_clickers_home_team_and_the_org(
    grid: Sandbox, bot: BotStub
) -> None:
    client = AsyncWebClient(token=TOKEN, base_url=grid.api_url)
    ts = await post_card(client)
    await grid.click(channel_id=GENERAL, ts=ts, action_id="approval:approve", user_id=GUEST)
    p = bot.last
    assert p["user"] == {"id": GUEST, "username": "gwen", "name": "gwen", "team_id": "T0OTHER"}
    assert p["team"] == {
        "id": "T0SANDBOX",  # the message's workspace, as Slack sends it in Slack Connect
        "domain": "sandbox",
        "enterprise_id": "E0ORG",
        "enterprise_name": "Acme",
    }
    assert (p["enterprise"], p["is_enterprise_install"]) == ({"id": "E0ORG", "name": "Acme"}, False)
    await grid.click(channel_id=GENERAL, ts=ts, action_id="approval:approve", user_id=REVIEWER)
    assert bot.last["user"]["team_id"] == "T0SANDBOX"
    assert grid.violations == []


async def test_commands_and_modals_carry_the_actors_own_team(grid: Sandbox, bot: BotStub) -> None:
    await grid.slash_command(command="/agent", text="x", user_id=GRID, channel_id=GENERAL)
    form = bot.last
    assert (form["team_id"], form["team_domain"]) == ("T0GRIDB", "t0gridb")
    assert (form["enterprise_id"], form["enterprise_name"]) == ("E0ORG", "Acme")
    await grid.slash_command(command="/agent", text="x", user_id=GUEST, channel_id=GENERAL)
    assert bot.last["team_id"] == "T0OTHER" and "enterprise_id" not in bot.last
    await grid.slash_command(command="/agent", text="x", user_id=REVIEWER, channel_id=GENERAL)
    assert (bot.last["team_id"], bot.last["enterprise_id"]) == ("T0SANDBOX", "E0ORG")

    client = AsyncWebClient(token=TOKEN, base_url=grid.api_url)
    ts = await post_card(client)
    await grid.click(channel_id=GENERAL, ts=ts, action_id="approval:approve", user_id=GUEST)
    opened = await client.views_open(
        trigger_id=bot.last["trigger_id"], view=modal(text_input("reason"), notify_on_close=True)
    )
    view_id = opened["view"]["id"]
    await grid.submit_view(view_id=view_id, user_id=GUEST, values={"reason": "no"})
    p = bot.last
    assert p["team"] == {"id": "T0OTHER", "domain": "t0other"} and p["enterprise"] is None
    assert p["user"]["team_id"] == "T0OTHER"
    assert (p["view"]["team_id"], p["view"]["app_installed_team_id"]) == ("T0OTHER", "T0SANDBOX")

    await grid.click(channel_id=GENERAL, ts=ts, action_id="approval:approve", user_id=GRID)
    opened = await client.views_open(
        trigger_id=bot.last["trigger_id"], view=modal(text_input("reason"), notify_on_close=True)
    )
    await grid.close_view(view_id=opened["view"]["id"], user_id=GRID)
    p = bot.last
    assert p["type"] == "view_closed" and p["user"]["team_id"] == "T0GRIDB"
    assert p["team"]["enterprise_id"] == "E0ORG" and p["enterprise"]["id"] == "E0ORG"
    assert grid.violations == []


async def test_users_info_shows_home_team_bots_and_org(grid: Sandbox) -> None:
    client = AsyncWebClient(token=TOKEN, base_url=grid.api_url)
    guest = (await client.users_info(user=GUEST))["user"]
    assert (guest["team_id"], guest["is_bot"], guest["profile"]["display_name"]) == (
        "T0OTHER",
        False,
        "gwen",
    )
    assert guest["profile"]["real_name"] == "Gwen" and "enterprise_user" not in guest
    member = (await client.users_info(user=GRID))["user"]
    assert member["team_id"] == "T0GRIDB"
    assert member["enterprise_user"]["enterprise_id"] == "E0ORG"
    helper = (await client.users_info(user=HELPER_BOT))["user"]
    assert helper["is_bot"] and helper["team_id"] == "T0SANDBOX"
    assert helper["profile"]["bot_id"] == "B0HELPER"
    assert (await client.users_info(user=REVIEWER))["user"]["team_id"] == "T0SANDBOX"
    assert (await client.auth_test())["enterprise_id"] == "E0ORG"
    with pytest.raises(SandboxError, match="is in org"):
        grid.add_user("U0X", "x", team_id="T0GRIDB", enterprise_id="E0ELSE")


async def test_mentions_are_stored_and_delivered_as_events(grid: Sandbox, bot: BotStub) -> None:
    status, _ = await grid.mention(user_id=REVIEWER, channel_id=GENERAL, text="count users")
    assert status == 200 and bot.received[-1]["content_type"] == "application/json"
    p = bot.last
    assert (p["type"], p["team_id"], p["enterprise_id"]) == ("event_callback", "T0SANDBOX", "E0ORG")
    assert p["event_id"].startswith("Ev") and p["is_ext_shared_channel"] is False
    assert p["authorizations"][0]["enterprise_id"] == "E0ORG"
    event = p["event"]
    assert event["type"] == "app_mention" and event["text"] == "<@U0SANDBOXBOT> count users"
    assert (event["user"], event["team"], event["channel"]) == (REVIEWER, "T0SANDBOX", GENERAL)
    assert "user_team" not in event and "bot_id" not in event
    stored = grid.message(GENERAL, event["ts"])
    assert stored["user"] == REVIEWER and "bot_id" not in stored

    await grid.mention(user_id=GUEST, channel_id=GENERAL, text="hi", thread_ts=event["ts"])
    guest = bot.last
    assert guest["is_ext_shared_channel"] is True and guest["team_id"] == "T0SANDBOX"
    g = guest["event"]
    assert (g["team"], g["user_team"], g["source_team"]) == ("T0OTHER", "T0OTHER", "T0OTHER")
    assert g["thread_ts"] == event["ts"]
    await grid.mention(user_id=GRID, channel_id=GENERAL, text="hi")
    assert bot.last["is_ext_shared_channel"] is False  # same org: shared inside it

    await grid.mention(user_id=HELPER_BOT, channel_id=GENERAL, text="<@U0SANDBOXBOT> deploy")
    b = bot.last["event"]
    assert b["text"] == "<@U0SANDBOXBOT> deploy" and b["user"] == HELPER_BOT
    assert (b["bot_id"], b["app_id"]) == ("B0HELPER", "A0HELPER")
    profile = b["bot_profile"]
    assert (profile["id"], profile["app_id"], profile["team_id"]) == (
        "B0HELPER",
        "A0HELPER",
        "T0SANDBOX",
    )
    assert profile["name"] == "helper" and profile["deleted"] is False and profile["icons"]
    assert grid.message(GENERAL, b["ts"])["bot_id"] == "B0HELPER"

    grid.add_channel("C0LOBBY", "lobby", bot_member=False)
    with pytest.raises(SandboxError, match="not in"):
        await grid.mention(user_id=REVIEWER, channel_id="C0LOBBY", text="hi")
    with pytest.raises(SandboxError, match="no message"):
        await grid.mention(user_id=REVIEWER, channel_id=GENERAL, text="x", thread_ts="1.000001")
    assert grid.violations == []


async def test_user_groups_and_their_members_changed_event(
    sandbox: Sandbox, bot: BotStub, client: AsyncWebClient, clock: FakeClock
) -> None:
    assert await sandbox.set_usergroup("S0DBA", "dba-team", ["U0DBA", REVIEWER]) is None
    assert bot.received == []  # Slack tells no one of a new group
    listed = await client.usergroups_users_list(usergroup="S0DBA", include_disabled=True)
    assert listed["users"] == ["U0DBA", REVIEWER]
    groups = await client.usergroups_list(include_users=True, include_count=True)
    (group,) = groups["usergroups"]
    assert (group["id"], group["handle"], group["user_count"]) == ("S0DBA", "dba-team", 2)
    assert group["team_id"] == "T0SANDBOX" and group["users"] == ["U0DBA", REVIEWER]

    clock.advance(60)
    bot.answer = lambda request: (200, "noted")
    reply = await sandbox.set_usergroup("S0DBA", "dba-team", [REVIEWER, "U0ALICE"])
    assert reply == (200, "noted")
    assert bot.received[-1]["content_type"] == "application/json"
    p = bot.last
    assert (p["type"], p["team_id"], p["api_app_id"]) == (
        "event_callback",
        "T0SANDBOX",
        "A0SANDBOX",
    )
    assert p["event_id"].startswith("Ev") and p["event_time"] == int(clock.now)
    assert p["event"] == {
        "type": "subteam_members_changed",
        "subteam_id": "S0DBA",
        "team_id": "T0SANDBOX",
        "date_previous_update": int(clock.now) - 60,
        "date_update": int(clock.now),
        "added_users": ["U0ALICE"],
        "added_users_count": 1,
        "removed_users": ["U0DBA"],
        "removed_users_count": 1,
        "event_ts": f"{clock.now:.6f}",
    }
    assert sandbox.usergroup_users("S0DBA") == [REVIEWER, "U0ALICE"]
    assert await sandbox.set_usergroup("S0DBA", "dba-team", ["U0ALICE", REVIEWER]) is None
    assert len(bot.received) == 1

    with pytest.raises(SlackApiError) as caught:
        await client.usergroups_users_list(usergroup="S0NOPE")
    assert caught.value.response["error"] == "no_such_subteam"
    sandbox.fail_next("usergroups.users.list", status=500)
    with pytest.raises(SlackApiError) as caught:
        await client.usergroups_users_list(usergroup="S0DBA")
    assert caught.value.response.status_code == 500
    assert (await client.usergroups_users_list(usergroup="S0DBA"))["ok"]
    with pytest.raises(SandboxError, match="S0DBA"):
        await sandbox.set_usergroup("dba", "dba", [])
    with pytest.raises(SandboxError, match="no user group"):
        sandbox.usergroup_users("S0NOPE")


async def test_permalinks(sandbox: Sandbox, client: AsyncWebClient) -> None:
    ts = await post_card(client)
    reply = await client.chat_postMessage(channel=GENERAL, text="r", thread_ts=ts)
    link = await client.chat_getPermalink(channel=GENERAL, message_ts=ts)
    assert link["channel"] == GENERAL
    assert link["permalink"] == f"{sandbox.base_url}archives/{GENERAL}/p{ts.replace('.', '')}"
    threaded = await client.chat_getPermalink(channel=GENERAL, message_ts=reply["ts"])
    assert threaded["permalink"].endswith(f"?thread_ts={ts}&cid={GENERAL}")
    for url in (link["permalink"], threaded["permalink"]):  # the page opens them
        status, headers, _ = await http("GET", url, allow_redirects=False)
        p = url.split("/")[-1].split("?")[0]
        assert (status, headers["Location"]) == (302, f"/#{GENERAL}/{p}")
    errors = []
    for channel, message_ts in [(GENERAL, "1.000001"), ("C0NOWHERE", ts)]:
        with pytest.raises(SlackApiError) as caught:
            await client.chat_getPermalink(channel=channel, message_ts=message_ts)
        errors.append(caught.value.response["error"])
    assert errors == ["message_not_found", "channel_not_found"]


async def test_the_bot_posts_only_where_it_is_a_member(
    sandbox: Sandbox, client: AsyncWebClient
) -> None:
    sandbox.add_channel("C0SECRET", "secret", private=True, bot_member=False)
    sandbox.add_channel("C0LOBBY", "lobby", bot_member=False)
    sandbox.add_channel("C0OPS", "ops")
    posted = await client.chat_postMessage(channel="C0OPS", text="x")
    sandbox.add_channel("C0OPS", "ops", bot_member=False)  # the bot was removed

    calls: list[tuple[str, dict[str, Any]]] = []
    for channel in ("C0SECRET", "C0LOBBY"):
        calls += [
            ("chat.postMessage", {"channel": channel, "text": "x"}),
            ("chat.postEphemeral", {"channel": channel, "user": REVIEWER, "text": "x"}),
            ("conversations.history", {"channel": channel}),
        ]
    calls += [
        ("chat.update", {"channel": "C0OPS", "ts": posted["ts"], "text": "y"}),
        ("chat.getPermalink", {"channel": "C0SECRET", "message_ts": "1.000001"}),
        ("conversations.info", {"channel": "C0SECRET"}),
    ]
    errors = []
    for method, args in calls:
        with pytest.raises(SlackApiError) as caught:
            await client.api_call(method, json=args)
        errors.append(caught.value.response["error"])
    hidden, outside = ["channel_not_found"] * 3, ["not_in_channel"] * 3
    assert errors == [*hidden, *outside, "not_in_channel", "channel_not_found", "channel_not_found"]
    lobby = (await client.conversations_info(channel="C0LOBBY"))["channel"]
    assert (lobby["is_member"], lobby["is_private"]) == (False, False)

    sandbox.invite_bot("C0SECRET")
    assert (await client.chat_postMessage(channel="C0SECRET", text="in"))["ok"]
    info = (await client.conversations_info(channel="C0SECRET"))["channel"]
    assert (info["is_member"], info["is_private"], info["name"]) == (True, True, "secret")
    assert (await client.chat_postMessage(channel="C0NEWONE", text="implicit"))["ok"]
    with pytest.raises(SandboxError, match="no channel"):
        sandbox.invite_bot("C0NOWHERE")
    assert sandbox.violations == []


async def test_a_forged_click_sends_another_value(
    sandbox: Sandbox, bot: BotStub, client: AsyncWebClient
) -> None:
    ts = await post_card(client)
    await sandbox.click(
        channel_id=GENERAL,
        ts=ts,
        action_id="approval:approve",
        user_id=REVIEWER,
        forged_value="req-other",
    )
    p = bot.last
    assert p["actions"][0]["value"] == "req-other"
    assert p["message"]["blocks"][2]["elements"][0]["value"] == "req-1"  # the card is real
    assert p["actions"][0]["block_id"] == "decide"


async def test_a_view_not_on_the_users_stack_can_be_submitted(
    sandbox: Sandbox, bot: BotStub, client: AsyncWebClient
) -> None:
    view_id = await open_form(sandbox, bot, client)
    (stolen,) = sandbox.open_views(REVIEWER)
    stolen["private_metadata"] = "req-other"
    bot.answer = lambda r: (200, {"response_action": "errors", "errors": {"arg:query": "No"}})
    status, body = await sandbox.submit_unopened_view(
        user_id="U0ALICE", view=stolen, values={"arg:query": ""}
    )
    assert status == 200 and body == {"response_action": "errors", "errors": {"arg:query": "No"}}
    p = bot.last
    assert p["type"] == "view_submission" and p["user"]["id"] == "U0ALICE" and p["trigger_id"]
    assert (p["view"]["id"], p["view"]["private_metadata"]) == (view_id, "req-other")
    assert "errors" not in p["view"]
    values = p["view"]["state"]["values"]
    assert values["arg:query"]["value"] == {"type": "plain_text_input", "value": None}
    assert values["arg:db"]["value"]["selected_option"]["value"] == "staging"
    (still,) = sandbox.open_views(REVIEWER)  # the real modal is untouched
    assert still["errors"] == {} and still["private_metadata"] == "req-1"
    assert sandbox.open_views("U0ALICE") == []

    made_up = modal(text_input("reason")) | {"id": "V0FORGED", "blocks": [text_input("reason")]}
    bot.answer = lambda r: (200, "")
    assert await sandbox.submit_unopened_view(user_id=REVIEWER, view=made_up) == (200, None)
    assert bot.last["view"]["id"] == "V0FORGED"
    with pytest.raises(SandboxError, match="'id'"):
        await sandbox.submit_unopened_view(user_id=REVIEWER, view=modal())
    with pytest.raises(SandboxError, match="no input blocks"):
        await sandbox.submit_unopened_view(user_id=REVIEWER, view=made_up, values={"x": "1"})
    assert sandbox.violations == []


def key_metadata(key: str) -> dict[str, Any]:
    return {"event_type": "agent_bridge_message", "event_payload": {"key": key}}


async def test_message_metadata_is_kept_and_returned_only_when_asked(
    sandbox: Sandbox, client: AsyncWebClient
) -> None:
    header = key_metadata("run/header")
    parent = (await client.chat_postMessage(channel=GENERAL, text="p", metadata=header))["ts"]
    await client.chat_postMessage(
        channel=GENERAL, text="r", thread_ts=parent, metadata=key_metadata("run/tool:1")
    )
    plain = await client.conversations_history(channel=GENERAL)
    assert [m.get("metadata") for m in plain["messages"]] == [None]
    full = await client.conversations_history(channel=GENERAL, include_all_metadata=True)
    assert [m["metadata"] for m in full["messages"]] == [header]
    since = await client.conversations_history(
        channel=GENERAL, include_all_metadata=True, oldest=parent
    )
    assert since["messages"] == []
    thread = await client.conversations_replies(
        channel=GENERAL, ts=parent, include_all_metadata=True
    )
    keys = [m["metadata"]["event_payload"]["key"] for m in thread["messages"]]
    assert keys == ["run/header", "run/tool:1"]
    with pytest.raises(SlackApiError) as refused:
        await client.chat_postMessage(channel=GENERAL, text="x", metadata={"event_type": 1})
    assert refused.value.response["error"] == "invalid_metadata_format"


async def test_history_and_threads_are_read_a_page_at_a_time_after_oldest(
    sandbox: Sandbox, client: AsyncWebClient
) -> None:
    """Cursor pagination as slack_sdk's own paginator follows it (``next_cursor``,
    ``""`` after the last page), and ``oldest`` in a thread as in a channel."""
    parent = (await client.chat_postMessage(channel=GENERAL, text="p0"))["ts"]
    replies = [
        (await client.chat_postMessage(channel=GENERAL, text=f"r{n}", thread_ts=parent))["ts"]
        for n in range(4)
    ]
    for n in range(1, 5):
        await client.chat_postMessage(channel=GENERAL, text=f"p{n}")
    history = [
        m["text"]
        async for page in await client.conversations_history(channel=GENERAL, limit=2)
        for m in page["messages"]
    ]
    assert history == ["p4", "p3", "p2", "p1", "p0"]
    thread_pages = [
        [m["text"] for m in page["messages"]]
        async for page in await client.conversations_replies(channel=GENERAL, ts=parent, limit=2)
    ]
    assert thread_pages == [["p0", "r0"], ["r1", "r2"], ["r3"]]
    since = await client.conversations_replies(channel=GENERAL, ts=parent, oldest=replies[1])
    assert [m["text"] for m in since["messages"]] == ["r2", "r3"]
    with pytest.raises(SlackApiError) as refused:
        await client.conversations_replies(channel=GENERAL, ts=parent, cursor="not-ours")
    assert refused.value.response["error"] == "invalid_cursor"


async def test_a_stalled_call_is_held_landed_or_lost(
    sandbox: Sandbox, client: AsyncWebClient
) -> None:
    landed = sandbox.stall_next("chat.postMessage", key_contains="/card:")
    call = asyncio.create_task(
        client.chat_postMessage(channel=GENERAL, text="card", metadata=key_metadata("r/card:1"))
    )
    await landed.reached.wait()
    assert [m["text"] for m in sandbox.messages(GENERAL)] == ["card"]  # in Slack already
    assert not call.done()  # the caller has not heard back
    landed.released.set()
    assert (await call)["ok"]

    lost = sandbox.stall_next("chat.postMessage", applied=False)
    call = asyncio.create_task(client.chat_postMessage(channel=GENERAL, text="lost"))
    await lost.reached.wait()
    lost.released.set()
    with pytest.raises(SlackApiError):
        await call
    assert [m["text"] for m in sandbox.messages(GENERAL)] == ["card"]


async def test_latency_delays_every_web_api_call(sandbox: Sandbox, client: AsyncWebClient) -> None:
    sandbox.set_latency(0.05, 0.06, seed=7)
    started = time.monotonic()
    await client.auth_test()
    assert time.monotonic() - started >= 0.05


def test_an_idle_connection_to_the_bot_is_let_go_before_the_web_process_closes_it() -> None:
    # A delivery written into a connection the web process is closing for idleness fails
    # ("Can not write request body"): the sandbox must stop reusing one first.
    assert IDLE_REUSE_S < HEADER_READ_TIMEOUT_S

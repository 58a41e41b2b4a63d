"""The Slack gateway's contract, run against its twin and against the sandbox over HTTP.

Each kind of failure comes out as the project's own error (``bot.errors``), never a
slack_sdk or aiohttp type: the gateway is the one place that translates them.
"""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import aiohttp
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from agent_bridge.errors import ConfigurationError
from agent_bridge.settings import DEMO_BOT_TOKEN, DEMO_SIGNING_SECRET
from bot import slack_gateway
from bot.errors import (
    ChannelUnreachableError,
    MessageGoneError,
    SlackCallError,
    SlackRefusedError,
    SlackUnavailableError,
)
from bot.manifest import BOT_SCOPES
from bot.slack_client import installation_of_token, make_client
from bot.slack_gateway import Slack, message_metadata, single_workspace, translate
from bot.testing import MemoryGateway
from slack_sandbox import Sandbox

TEAM = "T0SANDBOX"
BLOCKS = [{"type": "section", "text": {"type": "mrkdwn", "text": "hello"}}]


@dataclass
class Subject:
    """A gateway under test and what the test needs to see behind it."""

    gateway: Slack
    channel_id: str
    text_of: Callable[[str], str]
    """``ts -> the message's text`` as the workspace holds it."""
    delete: Callable[[str], object]
    """Delete the message ``ts`` as a person would (may return an awaitable)."""
    ephemerals: Callable[[str], list[str]]
    """``user_id -> texts of the ephemerals that user was shown``."""
    outage: Callable[[], object]
    """Make the next post fail as a Slack outage (a 5xx: slack_sdk does not send a post
    again, ``bot.slack_client.NOT_REPEATABLE``)."""


@pytest.fixture(params=["twin", "sandbox"])
async def subject(request: pytest.FixtureRequest) -> AsyncIterator[Subject]:
    if request.param == "twin":
        twin = MemoryGateway(channels={"C0GENERAL"})
        yield Subject(
            gateway=twin,
            channel_id="C0GENERAL",
            text_of=lambda ts: str(twin.messages[("C0GENERAL", ts)]["text"]),
            delete=lambda ts: twin.delete("C0GENERAL", ts),
            ephemerals=lambda user: [t for _, u, t in twin.ephemerals if u == user],
            outage=lambda: setattr(twin, "outage", 1),
        )
        return
    sandbox = Sandbox(signing_secret=DEMO_SIGNING_SECRET, bot_token=DEMO_BOT_TOKEN)
    await sandbox.start()
    client = make_client(token=DEMO_BOT_TOKEN, base_url=sandbox.api_url)
    channel_id = sandbox.channel_id("general")
    try:
        yield Subject(
            gateway=single_workspace(client),
            channel_id=channel_id,
            text_of=lambda ts: str(sandbox.message(channel_id, ts)["text"]),
            delete=lambda ts: client.chat_delete(channel=channel_id, ts=ts),
            ephemerals=lambda user: [m["text"] for m in sandbox.ephemerals(channel_id, user)],
            outage=lambda: sandbox.fail_next("chat.postMessage", status=503, times=1),
        )
    finally:
        await sandbox.stop()


async def _delete(subject: Subject, ts: str) -> None:
    outcome = subject.delete(ts)
    if hasattr(outcome, "__await__"):
        await outcome


async def test_a_posted_message_can_be_updated(subject: Subject) -> None:
    ts = await subject.gateway.post_message(
        team_id=TEAM, channel_id=subject.channel_id, text="first", blocks=BLOCKS
    )
    await subject.gateway.update_message(
        team_id=TEAM, channel_id=subject.channel_id, ts=ts, text="second", blocks=BLOCKS
    )
    assert subject.text_of(ts) == "second"


async def test_updating_a_deleted_message_says_it_is_gone(subject: Subject) -> None:
    ts = await subject.gateway.post_message(
        team_id=TEAM, channel_id=subject.channel_id, text="card", blocks=BLOCKS
    )
    await _delete(subject, ts)
    with pytest.raises(MessageGoneError) as gone:
        await subject.gateway.update_message(
            team_id=TEAM, channel_id=subject.channel_id, ts=ts, text="x", blocks=BLOCKS
        )
    assert gone.value.method == "chat.update" and not gone.value.retryable


async def test_an_unknown_channel_is_unreachable(subject: Subject) -> None:
    with pytest.raises(ChannelUnreachableError) as unreachable:
        await subject.gateway.update_message(
            team_id=TEAM, channel_id="C0NOWHERE", ts="1.000001", text="x", blocks=BLOCKS
        )
    assert unreachable.value.code == "channel_not_found" and not unreachable.value.retryable


async def test_a_trigger_slack_did_not_issue_is_refused(subject: Subject) -> None:
    view = {"type": "modal", "title": {"type": "plain_text", "text": "T"}, "blocks": BLOCKS}
    with pytest.raises(SlackRefusedError) as refused:
        await subject.gateway.open_view(team_id=TEAM, trigger_id="1.2.forged", view=view)
    assert refused.value.code == "invalid_trigger_id"


async def test_a_reply_needs_its_thread(subject: Subject) -> None:
    ts = await subject.gateway.post_message(
        team_id=TEAM, channel_id=subject.channel_id, text="parent", blocks=BLOCKS
    )
    reply = await subject.gateway.post_message(
        team_id=TEAM, channel_id=subject.channel_id, text="reply", blocks=BLOCKS, thread_ts=ts
    )
    assert subject.text_of(reply) == "reply"
    await _delete(subject, ts)
    with pytest.raises(MessageGoneError) as gone:
        await subject.gateway.post_message(
            team_id=TEAM, channel_id=subject.channel_id, text="x", blocks=BLOCKS, thread_ts=ts
        )
    assert gone.value.code == "thread_not_found"


async def test_an_ephemeral_is_posted(subject: Subject) -> None:
    await subject.gateway.post_ephemeral(
        team_id=TEAM, channel_id=subject.channel_id, user_id="U0REVIEWER", text="only you"
    )
    assert subject.ephemerals("U0REVIEWER") == ["only you"]
    assert subject.ephemerals("U0DBA") == []


async def test_an_outage_is_unavailable_and_retryable(subject: Subject) -> None:
    subject.outage()
    with pytest.raises(SlackUnavailableError) as down:
        await subject.gateway.post_message(
            team_id=TEAM, channel_id=subject.channel_id, text="x", blocks=BLOCKS
        )
    assert down.value.retryable and down.value.method == "chat.postMessage"
    ts = await subject.gateway.post_message(  # Slack is back
        team_id=TEAM, channel_id=subject.channel_id, text="back", blocks=BLOCKS
    )
    assert subject.text_of(ts) == "back"


async def test_5xx_past_the_retries_is_unavailable_and_retryable() -> None:
    sandbox = Sandbox(signing_secret=DEMO_SIGNING_SECRET, bot_token=DEMO_BOT_TOKEN)
    await sandbox.start()
    try:
        gateway = single_workspace(make_client(token=DEMO_BOT_TOKEN, base_url=sandbox.api_url))
        channel = sandbox.channel_id("general")
        ts = await gateway.post_message(team_id=TEAM, channel_id=channel, text="x", blocks=BLOCKS)
        sandbox.fail_next("chat.update", status=500, times=3)  # slack_sdk retries twice
        with pytest.raises(SlackUnavailableError) as down:
            await gateway.update_message(
                team_id=TEAM, channel_id=channel, ts=ts, text="y", blocks=BLOCKS
            )
        assert down.value.retryable and down.value.method == "chat.update"
        assert len([c for c in sandbox.calls if c["method"] == "chat.update"]) == 3
        # a post is not sent again: its 5xx may have come after Slack posted
        sandbox.fail_next("chat.postMessage", status=500, times=1)
        with pytest.raises(SlackUnavailableError):
            await gateway.post_message(team_id=TEAM, channel_id=channel, text="z", blocks=BLOCKS)
        assert len([c for c in sandbox.calls if c["method"] == "chat.postMessage"]) == 2
    finally:
        await sandbox.stop()


async def test_an_unreachable_slack_is_unavailable_not_an_aiohttp_error() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    gateway = single_workspace(
        make_client(token=DEMO_BOT_TOKEN, base_url=f"http://127.0.0.1:{port}/api/")
    )
    with pytest.raises(SlackUnavailableError) as down:
        await gateway.post_message(team_id=TEAM, channel_id="C1", text="x", blocks=BLOCKS)
    assert isinstance(down.value, SlackCallError) and down.value.retryable
    assert down.value.code is None and "unreachable" in str(down.value)


@pytest.mark.parametrize("status", [502, 503])
def test_a_proxy_s_plain_text_5xx_is_unavailable(status: int) -> None:
    """A proxy in front of Slack may answer plain text; slack_sdk keeps that body as
    ``response.data``, and the gateway must still call it a passing outage."""
    body = "upstream connect error or disconnect/reset before headers"
    response = AsyncSlackResponse(
        client=None,
        http_verb="POST",
        api_url="https://slack.com/api/chat.update",
        req_args={},
        data=body,  # type: ignore[arg-type]  # what slack_sdk stores for a non-JSON body
        headers={},
        status_code=status,
    )
    error = translate("chat.update", SlackApiError("proxy", response))  # type: ignore[no-untyped-call]
    assert isinstance(error, SlackUnavailableError) and error.retryable
    assert error.code == f"HTTP {status}"


@pytest.mark.parametrize(
    ("code", "passing"),
    [("internal_error", True), ("fatal_error", True), ("missing_scope", False)],
)
def test_slacks_own_passing_errors_are_an_outage_not_a_refusal(code: str, passing: bool) -> None:
    """Slack answers its own trouble ``ok: false`` with HTTP 200, as it answers a refusal:
    those codes are tried again, a refusal is not."""
    response = AsyncSlackResponse(
        client=None,
        http_verb="POST",
        api_url="https://slack.com/api/chat.postMessage",
        req_args={},
        data={"ok": False, "error": code},
        headers={},
        status_code=200,
    )
    error = translate("chat.postMessage", SlackApiError(code, response))  # type: ignore[no-untyped-call]
    assert (isinstance(error, SlackUnavailableError), error.retryable) == (passing, passing)
    assert error.code == code


async def test_a_message_is_found_by_the_key_in_its_metadata(subject: Subject) -> None:
    gateway, channel = subject.gateway, subject.channel_id
    parent = await gateway.post_message(
        team_id=TEAM, channel_id=channel, text="header", blocks=BLOCKS, key="run-1/header"
    )
    reply = await gateway.post_message(
        team_id=TEAM,
        channel_id=channel,
        text="result",
        blocks=BLOCKS,
        thread_ts=parent,
        key="run-1/tool:c1",
    )
    await gateway.post_message(team_id=TEAM, channel_id=channel, text="other", blocks=BLOCKS)
    found_parent = await gateway.find_message(
        team_id=TEAM, channel_id=channel, key="run-1/header", oldest=float(parent) - 60
    )
    found_reply = await gateway.find_message(
        team_id=TEAM, channel_id=channel, key="run-1/tool:c1", thread_ts=parent
    )
    assert (found_parent, found_reply) == (parent, reply)
    assert (
        await gateway.find_message(
            team_id=TEAM, channel_id=channel, key="run-1/tool:c2", thread_ts=parent
        )
        is None
    )
    assert (
        await gateway.find_message(
            team_id=TEAM, channel_id=channel, key="run-1/header", oldest=float(parent)
        )
        is None  # only messages after oldest
    )


async def test_a_message_is_found_after_oldest_however_long_its_thread_before_it(
    subject: Subject, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dead worker's reply in a long thread is found by reading the thread from the
    intention on (``oldest``), not from its start: with reads of 2 pages of 2, a thread of
    8 replies before it would hide it."""
    monkeypatch.setattr(slack_gateway, "FIND_PAGE_SIZE", 2)
    monkeypatch.setattr(slack_gateway, "FIND_PAGES_MAX", 2)
    gateway, channel = subject.gateway, subject.channel_id
    parent = await gateway.post_message(
        team_id=TEAM, channel_id=channel, text="header", blocks=BLOCKS, key="run-1/header"
    )
    for n in range(8):
        earlier = await gateway.post_message(
            team_id=TEAM, channel_id=channel, text=f"earlier {n}", blocks=BLOCKS, thread_ts=parent
        )
    reply = await gateway.post_message(
        team_id=TEAM,
        channel_id=channel,
        text="result",
        blocks=BLOCKS,
        thread_ts=parent,
        key="run-1/tool:c9",
    )
    for n in range(4):  # later replies: the reply is on the 1st of 3 pages from oldest
        await gateway.post_message(
            team_id=TEAM, channel_id=channel, text=f"later {n}", blocks=BLOCKS, thread_ts=parent
        )
    found = await gateway.find_message(
        team_id=TEAM,
        channel_id=channel,
        key="run-1/tool:c9",
        thread_ts=parent,
        oldest=float(earlier),
    )
    assert found == reply


async def test_a_message_is_found_on_a_later_page_of_its_thread(
    subject: Subject, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(slack_gateway, "FIND_PAGE_SIZE", 2)
    gateway, channel = subject.gateway, subject.channel_id
    parent = await gateway.post_message(team_id=TEAM, channel_id=channel, text="h", blocks=BLOCKS)
    for n in range(4):
        await gateway.post_message(
            team_id=TEAM, channel_id=channel, text=f"r{n}", blocks=BLOCKS, thread_ts=parent
        )
    reply = await gateway.post_message(
        team_id=TEAM, channel_id=channel, text="x", blocks=BLOCKS, thread_ts=parent, key="k/3"
    )
    found = await gateway.find_message(
        team_id=TEAM, channel_id=channel, key="k/3", thread_ts=parent
    )
    assert found == reply  # the 3rd page of 2 (the parent and 4 replies before it)


async def test_a_workspace_s_calls_share_one_connection_of_its_session() -> None:
    opened: list[float] = []  # when each TCP connection was opened
    trace = aiohttp.TraceConfig()

    async def on_open(*_: object) -> None:
        opened.append(time.monotonic())

    trace.on_connection_create_end.append(on_open)
    sandbox = Sandbox(signing_secret=DEMO_SIGNING_SECRET, bot_token=DEMO_BOT_TOKEN)
    await sandbox.start()
    session = aiohttp.ClientSession(trace_configs=[trace])
    try:
        client = make_client(token=DEMO_BOT_TOKEN, base_url=sandbox.api_url, session=session)
        gateway = single_workspace(client)
        for n in range(5):
            await gateway.post_message(
                team_id=TEAM, channel_id=sandbox.channel_id("general"), text=f"{n}", blocks=BLOCKS
            )
        assert len([c for c in sandbox.calls if c["method"] == "chat.postMessage"]) == 5
        assert len(opened) == 1  # one TCP connection, kept alive (no handshake per call)
    finally:
        await session.close()
        await sandbox.stop()


async def test_a_token_lacking_scopes_of_the_manifest_is_named_at_start() -> None:
    """Slack says a token's scopes on every answer (``x-oauth-scopes``): a token whose
    app was given fewer than the manifest's (scopes edited by hand) is refused at the
    start, naming what lacks, rather than break one feature at a time later."""
    granted = ["chat:write", "commands", "users:read"]
    sandbox = Sandbox(
        signing_secret=DEMO_SIGNING_SECRET, bot_token=DEMO_BOT_TOKEN, bot_scopes=granted
    )
    await sandbox.start()
    try:
        client = make_client(token=DEMO_BOT_TOKEN, base_url=sandbox.api_url)
        with pytest.raises(ConfigurationError, match="SLACK_BOT_TOKEN lacks scopes") as caught:
            await installation_of_token(client, needs=BOT_SCOPES)
        missing = sorted(set(BOT_SCOPES) - set(granted))
        assert f"the app needs: {', '.join(missing)} (" in str(caught.value)
        assert (await installation_of_token(client, needs=granted)).team_id == TEAM
    finally:
        await sandbox.stop()


async def test_the_installation_is_resolved_once_and_a_refused_token_is_a_clear_error() -> None:
    sandbox = Sandbox(signing_secret=DEMO_SIGNING_SECRET, bot_token=DEMO_BOT_TOKEN)
    await sandbox.start()
    try:
        good = make_client(token=DEMO_BOT_TOKEN, base_url=sandbox.api_url)
        installation = await installation_of_token(good)
        assert installation.team_id == TEAM and installation.bot_token == DEMO_BOT_TOKEN
        assert installation.bot_user_id
        wrong = make_client(token="xoxb-not-this-app", base_url=sandbox.api_url)
        with pytest.raises(ConfigurationError, match=r"SLACK_BOT_TOKEN was refused.*invalid_auth"):
            await installation_of_token(wrong)
        # Slack's own passing trouble is said to be Slack's, never blamed on the token.
        sandbox.fail_next("auth.test", status=200, error="fatal_error")
        with pytest.raises(ConfigurationError, match=r"fatal_error.*not the token") as caught:
            await installation_of_token(good)
        assert "refused" not in str(caught.value)
    finally:
        await sandbox.stop()


async def test_a_message_another_app_posted_with_the_key_is_not_found() -> None:
    """Any app may post metadata naming a run's key (the run and request IDs are on the
    cards): only the bot's own message is found, so none stands in for one never posted."""
    sandbox = Sandbox(signing_secret=DEMO_SIGNING_SECRET, bot_token=DEMO_BOT_TOKEN)
    await sandbox.start()
    try:
        gateway = single_workspace(make_client(token=DEMO_BOT_TOKEN, base_url=sandbox.api_url))
        channel = sandbox.channel_id("general")
        parent = await gateway.post_message(
            team_id=TEAM, channel_id=channel, text="header", blocks=BLOCKS, key="run-1/header"
        )
        sandbox.post_as_other_app(
            channel,
            text="I am the card",
            metadata=message_metadata("run-1/card:r1"),
            thread_ts=parent,
        )
        key = "run-1/card:r1"
        assert (
            await gateway.find_message(team_id=TEAM, channel_id=channel, key=key, thread_ts=parent)
            is None
        )
        own = await gateway.post_message(
            team_id=TEAM,
            channel_id=channel,
            text="card",
            blocks=BLOCKS,
            thread_ts=parent,
            key="run-1/card:r1",
        )
        assert (
            await gateway.find_message(team_id=TEAM, channel_id=channel, key=key, thread_ts=parent)
            == own
        )
    finally:
        await sandbox.stop()


async def test_a_post_slack_made_before_a_gateway_s_503_is_not_made_again() -> None:
    """slack_sdk retries a 5xx; a ``chat.postMessage`` answered 503 after Slack posted it
    would post twice. It fails instead, and the outbox finds the message before posting
    again; a ``chat.update``, the same twice, is still retried."""
    sandbox = Sandbox(signing_secret=DEMO_SIGNING_SECRET, bot_token=DEMO_BOT_TOKEN)
    await sandbox.start()
    try:
        gateway = single_workspace(make_client(token=DEMO_BOT_TOKEN, base_url=sandbox.api_url))
        channel = sandbox.channel_id("general")
        stall = sandbox.stall_next("chat.postMessage", key_contains="run-1", answer_status=503)
        stall.released.set()
        with pytest.raises(SlackUnavailableError):
            await gateway.post_message(
                team_id=TEAM, channel_id=channel, text="answer", blocks=BLOCKS, key="run-1/a"
            )
        posted = [m for m in sandbox.messages(channel) if m.get("text") == "answer"]
        assert len(posted) == 1
        found = await gateway.find_message(team_id=TEAM, channel_id=channel, key="run-1/a")
        assert found is not None and found == posted[0]["ts"]
        updating = sandbox.stall_next("chat.update", ts=found, answer_status=503)
        updating.released.set()
        await gateway.update_message(
            team_id=TEAM, channel_id=channel, ts=found, text="answered", blocks=BLOCKS
        )
        assert sandbox.message(channel, found)["text"] == "answered"
    finally:
        await sandbox.stop()

"""The sandbox speaks Slack's OAuth: the authorize page, ``oauth.v2.access``, tokens that
work in their own workspace only, and what an uninstall sends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from slack_sandbox import Sandbox
from tests.test_sandbox import SECRET, BotStub, FakeClock

CLIENT_ID = "123.456"
CLIENT_SECRET = "oauth-client-secret"
REDIRECT = "https://app.example/slack/oauth_redirect"
BETA = "T0BETA"


@pytest.fixture
async def bot() -> AsyncIterator[BotStub]:
    stub = BotStub()
    await stub.start()
    yield stub
    await stub.stop()


@pytest.fixture
async def sandbox(bot: BotStub) -> AsyncIterator[Sandbox]:
    """A Slack with the app registered for OAuth and installed nowhere."""
    sb = Sandbox(signing_secret=SECRET, bot_token=None, request_url=bot.url, clock=FakeClock())
    sb.register_oauth_app(
        client_id=CLIENT_ID, client_secret=CLIENT_SECRET, redirect_urls=[REDIRECT]
    )
    await sb.start()
    yield sb
    await sb.stop()


async def authorize(
    sandbox: Sandbox, *, user_id: str | None = "U0ALICE", **query: str
) -> tuple[int, str]:
    """Open the authorize page (signed in as ``user_id``); return the status and the
    redirect's ``Location`` (or the page's text)."""
    params = {"client_id": CLIENT_ID, "scope": "chat:write,commands", "state": "s1"} | query
    cookies = dict([sandbox.browser_cookie(user_id)]) if user_id else {}
    async with aiohttp.ClientSession(cookies=cookies) as browser:
        async with browser.get(
            f"{sandbox.base_url}oauth/v2/authorize", params=params, allow_redirects=False
        ) as page:
            return page.status, page.headers.get("Location") or await page.text()


def code_of(location: str) -> tuple[str, dict[str, list[str]]]:
    parts = urlsplit(location)
    return f"{parts.scheme}://{parts.netloc}{parts.path}", parse_qs(parts.query)


async def test_an_install_gives_a_code_then_a_bot_token_of_that_workspace(
    sandbox: Sandbox,
) -> None:
    status, location = await authorize(sandbox, redirect_uri=REDIRECT)
    assert status == 302
    target, query = code_of(location)
    assert target == REDIRECT and query["state"] == ["s1"]
    client = AsyncWebClient(base_url=sandbox.api_url)
    answer = await client.oauth_v2_access(
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        code=query["code"][0],
        redirect_uri=REDIRECT,
    )
    assert answer["token_type"] == "bot" and answer["team"]["id"] == "T0SANDBOX"
    assert answer["scope"] == "chat:write,commands" and answer["authed_user"]["id"] == "U0ALICE"
    token = answer["access_token"]
    assert (await client.auth_test(token=token))["team_id"] == "T0SANDBOX"
    assert sandbox.installs == [("T0SANDBOX", "U0ALICE")]
    with pytest.raises(SlackApiError) as reused:  # a code is used once
        await client.oauth_v2_access(
            client_id=CLIENT_ID, client_secret=CLIENT_SECRET, code=query["code"][0]
        )
    assert reused.value.response["error"] == "invalid_code"
    assert all("client_secret" not in c["args"] for c in sandbox.calls)


@pytest.mark.parametrize(
    ("changes", "user_id", "status", "said"),
    [
        ({"client_id": "9.9"}, "U0ALICE", 400, "invalid_client_id"),
        ({"redirect_uri": "https://evil.example/cb"}, "U0ALICE", 400, "bad_redirect_uri"),
        ({"scope": ""}, "U0ALICE", 400, "invalid_scope"),
        ({}, None, 401, "sign in"),
        ({"team": BETA}, "U0ALICE", 403, "another workspace"),
    ],
)
async def test_the_authorize_page_never_redirects_a_wrong_request(
    sandbox: Sandbox, changes: dict[str, str], user_id: str | None, status: int, said: str
) -> None:
    answer = await authorize(sandbox, user_id=user_id, **changes)
    assert answer[0] == status and said in answer[1]
    assert sandbox.installs == []


async def test_oauth_v2_access_checks_the_client_the_code_and_the_redirect(
    sandbox: Sandbox,
) -> None:
    client = AsyncWebClient(base_url=sandbox.api_url)

    async def code(**query: str) -> str:
        return code_of((await authorize(sandbox, **query))[1])[1]["code"][0]

    async def refused(**args: str) -> str:
        with pytest.raises(SlackApiError) as caught:
            await client.oauth_v2_access(**({"client_id": CLIENT_ID} | args))
        return str(caught.value.response["error"])

    assert await refused(client_secret="wrong", code=await code()) == "bad_client_secret"
    assert await refused(client_id="9.9", client_secret=CLIENT_SECRET, code=await code()) == (
        "invalid_client_id"
    )
    with_redirect = await code(redirect_uri=REDIRECT)
    assert await refused(client_secret=CLIENT_SECRET, code=with_redirect) == "bad_redirect_uri"
    assert await refused(client_secret=CLIENT_SECRET, code="never-issued") == "invalid_code"
    assert sandbox.installs == []


async def test_a_token_works_in_its_own_workspace_only(sandbox: Sandbox) -> None:
    beta = sandbox.add_workspace(BETA, users={"U0BOB": "bob"}, channels={"C0BETA": "general"})
    client = AsyncWebClient(base_url=sandbox.api_url)
    tokens = {}
    for workspace, admin in ((sandbox, "U0ALICE"), (beta, "U0BOB")):
        async with aiohttp.ClientSession(cookies=dict([workspace.browser_cookie(admin)])) as b:
            async with b.get(
                f"{sandbox.base_url}oauth/v2/authorize",
                params={"client_id": CLIENT_ID, "scope": "chat:write"},
                allow_redirects=False,
            ) as page:
                found = code_of(page.headers["Location"])[1]["code"][0]
        answer = await client.oauth_v2_access(
            client_id=CLIENT_ID, client_secret=CLIENT_SECRET, code=found
        )
        tokens[workspace.team_id] = answer["access_token"]
    assert (await client.auth_test(token=tokens[BETA]))["team_id"] == BETA
    await client.chat_postMessage(token=tokens[BETA], channel="C0BETA", text="beta's")
    # beta's token sees beta's channels only: alpha's general is not where it posts
    await client.chat_postMessage(token=tokens[BETA], channel="C0GENERAL", text="stray")
    assert [m["text"] for m in beta.messages("C0BETA")] == ["beta's"]
    assert sandbox.messages("C0GENERAL") == [] and sandbox.messages("C0BETA") == []
    assert [c["team_id"] for c in sandbox.calls if c["method"] == "chat.postMessage"] == [BETA] * 2


async def test_an_uninstall_revokes_the_token_and_tells_the_bot(
    sandbox: Sandbox, bot: BotStub
) -> None:
    _, location = await authorize(sandbox)
    client = AsyncWebClient(base_url=sandbox.api_url)
    answer = await client.oauth_v2_access(
        client_id=CLIENT_ID, client_secret=CLIENT_SECRET, code=code_of(location)[1]["code"][0]
    )
    replies = await sandbox.uninstall()
    assert [s for s, _, _ in replies] == [200, 200]
    events = [r["payload"] for r in bot.received]
    assert [(e["type"], e["team_id"], e["event"]["type"]) for e in events] == [
        ("event_callback", "T0SANDBOX", "tokens_revoked"),
        ("event_callback", "T0SANDBOX", "app_uninstalled"),
    ]
    assert events[0]["event"]["tokens"]["bot"]
    with pytest.raises(SlackApiError) as revoked:
        await client.auth_test(token=answer["access_token"])
    assert revoked.value.response["error"] == "token_revoked"

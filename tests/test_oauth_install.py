"""End to end: the app installed with OAuth in two workspaces whose runs and cards never mix.

The sandbox is one Slack with two workspaces (``T0SANDBOX`` and ``T0BETA``); each admin's
browser (aiohttp with a cookie jar) opens the web process's ``/slack/install``, is sent to
the sandbox's authorize page, and comes back to ``/slack/oauth_redirect`` with a code the
app exchanges (``oauth.v2.access``) for that workspace's bot token. The worker and the web
process then call Slack with the token of each run's workspace, which the sandbox accepts
only there. An uninstall removes one workspace's token and closes its open requests; the
other keeps working.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit, urlunsplit

import aiohttp
import psycopg
import pytest
from slack_sdk.oauth import OAuthStateUtils
from yarl import URL

from agent_bridge import review_wording
from agent_bridge.audit import AuditKind, read_events
from agent_bridge.models import ApprovalRequest, ApprovalState, Run, RunState
from agent_bridge.scripted_model import DEMO_TASK
from agent_bridge.settings import WebConfig, WorkerConfig
from bot import ids
from bot.installations import InstallationStore
from bot.manifest import OAUTH_REDIRECT_PATH
from bot.oauth_install import INSTALL_PATH
from slack_sandbox import Sandbox
from slack_sandbox.delivery import ACK_DEADLINE_S
from tests import services
from tests.clocks import ShiftedClock
from tests.harness import CHANNEL, REQUESTER, REVIEWER, TEST_SIGNING_SECRET, Harness

CLIENT_ID = "1111.2222"
CLIENT_SECRET = "test-client-secret"
BETA = "T0BETA"
BETA_CHANNEL = "C0BETAGEN"
BETA_REQUESTER = "U0BOB"
BETA_REVIEWER = "U0BREV"
ALPHA = "T0SANDBOX"
UNINSTALL_AGO_S = 2.0
"""How long before the reinstall Slack sent the uninstall's events (a retry comes later)."""


@pytest.fixture
def web_settings(pg_url: str) -> WebConfig:
    """The web process in OAuth mode: a client ID and secret, no bot token."""
    return WebConfig(
        slack_signing_secret=TEST_SIGNING_SECRET,
        slack_client_id=CLIENT_ID,
        slack_client_secret=CLIENT_SECRET,
        database_url=pg_url,
        redis_url=services.redis_url(),
    )


@pytest.fixture
def sandbox_clock() -> ShiftedClock:
    """The sandbox's time, which a test may put back (events of an earlier time)."""
    return ShiftedClock()


@pytest.fixture
def harness_options(sandbox_clock: ShiftedClock) -> dict[str, Any]:
    return {"sandbox_clock": sandbox_clock}


@pytest.fixture
def agent_settings(settings: WorkerConfig) -> WorkerConfig:
    """The worker in OAuth mode: tokens from the stored installations."""
    return WorkerConfig.model_validate(
        settings.model_dump() | {"slack_bot_token": None, "slack_client_id": CLIENT_ID}
    )


@pytest.fixture
async def beta(harness: Harness) -> AsyncIterator[Sandbox]:
    """The second workspace, and the app registered for OAuth with the web's Redirect URL."""
    assert harness.server is not None
    harness.sandbox.register_oauth_app(
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        redirect_urls=[harness.server.url + OAUTH_REDIRECT_PATH],
    )
    yield harness.sandbox.add_workspace(
        BETA,
        users={BETA_REQUESTER: "bob", BETA_REVIEWER: "brev"},
        channels={BETA_CHANNEL: "general"},
    )


async def install(harness: Harness, workspace: Sandbox, admin: str) -> tuple[int, str]:
    """``admin`` installs the app in ``workspace`` from a browser signed in there;
    return the last page's status and text."""
    assert harness.server is not None
    jar = aiohttp.CookieJar(unsafe=True, treat_as_secure_origin=[harness.server.url])
    name, value = workspace.browser_cookie(admin)
    jar.update_cookies({name: value}, URL(workspace.base_url))
    async with aiohttp.ClientSession(cookie_jar=jar) as browser:
        async with browser.get(harness.server.url + INSTALL_PATH) as page:
            return page.status, await page.text()


async def start_run(
    workspace: Sandbox, harness: Harness, *, user_id: str, channel: str, task: str = DEMO_TASK
) -> Run:
    """``/agent <task>`` by ``user_id`` in ``workspace``; return the queued run."""
    before = {r.run_id for r in await runs(harness)}
    status, _ = await workspace.slash_command(
        command="/agent", text=task, user_id=user_id, channel_id=channel
    )
    assert status == 200

    async def queued() -> Run | None:
        new = [r for r in await runs(harness) if r.run_id not in before]
        return new[0] if new else None

    return await harness.wait_for(queued)


async def runs(harness: Harness) -> list[Run]:
    rows = await harness.store.db.fetch_all("SELECT run_id FROM runs")
    return [await harness.store.get_run(r["run_id"]) for r in rows]


def posts_in(sandbox: Sandbox, channel: str) -> list[dict[str, Any]]:
    """The ``chat.postMessage`` calls the product made into ``channel``."""
    return [
        c
        for c in sandbox.calls
        if c["method"] == "chat.postMessage" and c["args"].get("channel") == channel
    ]


async def approve(workspace: Sandbox, request: ApprovalRequest, user_id: str) -> tuple[int, str]:
    assert request.channel_id and request.message_ts
    return await workspace.click(
        channel_id=request.channel_id,
        ts=request.message_ts,
        action_id=ids.decision_action_id("approve"),
        user_id=user_id,
    )


async def test_two_workspaces_install_run_and_never_mix_and_one_uninstalls(
    harness: Harness, beta: Sandbox
) -> None:
    alpha = harness.sandbox
    # Before any install the app has no token anywhere: a command starts nothing.
    assert await InstallationStore(harness.store.db).teams() == []
    status, _ = await alpha.slash_command(
        command="/agent", text=DEMO_TASK, user_id=REQUESTER, channel_id=CHANNEL
    )
    assert status == 200
    assert await runs(harness) == [] and harness.web_store.runs_asked == 0

    status, page = await install(harness, alpha, REQUESTER)
    assert status == 200, page
    status, page = await install(harness, beta, BETA_REQUESTER)
    assert status == 200, page
    assert alpha.installs == [(ALPHA, REQUESTER), (BETA, BETA_REQUESTER)]
    installations = InstallationStore(harness.store.db)
    assert await installations.teams() == [ALPHA, BETA]
    alpha_bot = await installations.async_find_bot(enterprise_id=None, team_id=ALPHA)
    beta_bot = await installations.async_find_bot(enterprise_id=None, team_id=BETA)
    assert alpha_bot and beta_bot and alpha_bot.bot_token != beta_bot.bot_token
    assert BETA in (beta_bot.bot_token or "") and ALPHA not in (beta_bot.bot_token or "")

    # A run in each workspace: each one's cards go to its own channel, with its own token.
    run_a = await start_run(alpha, harness, user_id=REQUESTER, channel=CHANNEL)
    run_b = await start_run(beta, harness, user_id=BETA_REQUESTER, channel=BETA_CHANNEL)
    assert (run_a.team_id, run_b.team_id) == (ALPHA, BETA)
    write_a, sql_a = await harness.requests(run_a, count=2)
    write_b, sql_b = await harness.requests(run_b, count=2)
    assert {write_b.channel_id, sql_b.channel_id} == {BETA_CHANNEL}
    assert beta.message(BETA_CHANNEL, write_b.message_ts or "")["blocks"]
    assert alpha.messages(BETA_CHANNEL) == []  # nothing of beta's landed in alpha
    assert beta.messages(CHANNEL) == []
    assert posts_in(alpha, BETA_CHANNEL) and {
        c["team_id"] for c in posts_in(alpha, BETA_CHANNEL)
    } == {BETA}
    assert {c["team_id"] for c in posts_in(alpha, CHANNEL)} == {ALPHA}

    # A reviewer of alpha cannot decide beta's card: as a guest in beta's channel ...
    beta.add_user(REVIEWER, "reviewer", team_id=ALPHA)
    status, _ = await approve(beta, write_b, REVIEWER)
    assert status == 200
    # ... nor with beta's request forged onto an alpha card.
    assert write_a.message_ts
    status, _ = await alpha.click(
        channel_id=write_a.channel_id or "",
        ts=write_a.message_ts,
        action_id=ids.decision_action_id("approve"),
        user_id=REVIEWER,
        forged_value=f"{write_b.request_id}.{write_b.version}",
    )
    assert status == 200

    async def both_refused() -> list[Any] | None:
        events = [
            e
            for e in await read_events(harness.store.db)
            if e.kind == AuditKind.REFUSED and e.request_id == write_b.request_id
        ]
        return events if len(events) == 2 else None

    refusals = await harness.wait_for(both_refused)
    assert all(e.reason and e.reason in review_wording.OTHER_WORKSPACE_TEXT for e in refusals)
    still = await harness.store.get_request(write_b.request_id)
    assert still is not None and still.state == ApprovalState.PENDING

    # Alpha uninstalls: its token is revoked, its open requests closed and audited.
    replies = await alpha.uninstall()
    assert [status for status, _, _ in replies] == [200, 200]

    async def closed() -> list[ApprovalRequest] | None:
        found = await harness.store.requests_for_run(run_a.run_id)
        return found if {r.state for r in found} == {ApprovalState.CANCELLED} else None

    cancelled = await harness.wait_for(closed)
    assert {r.request_id for r in cancelled} == {write_a.request_id, sql_a.request_id}
    assert await installations.teams() == [BETA]
    failed = await harness.finished(run_a)
    assert failed.state == RunState.FAILED
    audit = [e for e in await read_events(harness.store.db) if e.kind == AuditKind.CANCELLED]
    assert {e.request_id for e in audit} == {write_a.request_id, sql_a.request_id}
    assert all(ALPHA in (e.reason or "") for e in audit)
    # A click on alpha's closed card records nothing.
    await approve(alpha, write_a, REVIEWER)

    # Beta keeps working: its reviewer decides, the run finishes, in beta's channel only.
    assert (await approve(beta, write_b, BETA_REVIEWER))[0] == 200
    assert (await approve(beta, sql_b, BETA_REVIEWER))[0] == 200
    done = await harness.finished(run_b)
    assert done.state == RunState.DONE
    assert {c["team_id"] for c in posts_in(alpha, BETA_CHANNEL)} == {BETA}
    closed_card = await harness.store.get_request(write_a.request_id)
    assert closed_card is not None and closed_card.state == ApprovalState.CANCELLED
    assert not [c for c in alpha.calls if c.get("error") == "invalid_auth"]


async def test_an_uninstall_delivered_after_a_reinstall_leaves_the_new_installation(
    harness: Harness, beta: Sandbox, sandbox_clock: ShiftedClock
) -> None:
    """Slack retries an uninstall's events the app missed; by then the admin has
    installed the app again: the events are older than the installation and change
    nothing (finding 1 of issue 12's review)."""
    alpha = harness.sandbox
    installations = InstallationStore(harness.store.db)
    assert (await install(harness, alpha, REQUESTER))[0] == 200
    # The app is removed while the web process cannot be reached: nothing is heard.
    url = alpha.request_url
    alpha.request_url = None
    sandbox_clock.shift = -UNINSTALL_AGO_S  # event times are whole seconds: one earlier
    missed = await alpha.uninstall()
    sandbox_clock.shift = 0.0
    alpha.request_url = url
    assert [status for status, _, _ in missed] == [0, 0]
    # The admin installs it again, and a run posts its cards with the new token.
    assert (await install(harness, alpha, REQUESTER))[0] == 200
    run = await start_run(alpha, harness, user_id=REQUESTER, channel=CHANNEL)
    write, sql = await harness.requests(run, count=2)

    # Slack's retries of the missed events arrive now: the app acks them and keeps all.
    for _, _, event_id in missed:
        assert (await alpha.retry_event(event_id))[0] == 200
    assert harness.server is not None
    assert await harness.server.acked.drain(10.0) == []  # their listeners have ended
    assert await installations.teams() == [ALPHA]
    for request in (write, sql):
        still = await harness.store.get_request(request.request_id)
        assert still is not None and still.state == ApprovalState.PENDING
    assert (await approve(alpha, write, REVIEWER))[0] == 200
    assert (await approve(alpha, sql, REVIEWER))[0] == 200
    done = await harness.finished(run)
    assert done.state == RunState.DONE


async def test_a_redirect_from_another_browser_or_replayed_installs_nothing(
    harness: Harness, beta: Sandbox
) -> None:
    assert harness.server is not None
    jar = aiohttp.CookieJar(unsafe=True, treat_as_secure_origin=[harness.server.url])
    name, value = beta.browser_cookie(BETA_REQUESTER)
    jar.update_cookies({name: value}, URL(beta.base_url))
    installations = InstallationStore(harness.store.db)
    async with aiohttp.ClientSession(cookie_jar=jar) as browser:
        async with browser.get(harness.server.url + INSTALL_PATH, allow_redirects=False) as start:
            assert start.status == 302  # to Slack's authorize page, the state in a cookie
            authorize_url = start.headers["Location"]
        assert authorize_url.startswith(beta.base_url + "oauth/v2/authorize?")
        async with browser.get(authorize_url, allow_redirects=False) as allowed:
            assert allowed.status == 302
            back = allowed.headers["Location"]
        assert back.startswith(harness.server.url + OAUTH_REDIRECT_PATH + "?code=")
        # Another browser (no state cookie: a link sent to a victim) installs nothing.
        async with aiohttp.ClientSession() as other, other.get(back) as page:
            assert page.status == 400
        assert await installations.teams() == []
        async with browser.get(back) as page:
            assert page.status == 200
        assert await installations.teams() == [BETA]
        async with browser.get(back) as page:  # the success page cleared the state cookie
            assert page.status == 400
        state = parse_qs(urlsplit(back).query)["state"][0]
        jar.update_cookies({OAuthStateUtils.default_cookie_name: state}, URL(harness.server.url))
        async with browser.get(back) as page:  # with it put back: the state was consumed
            assert page.status == 401
    assert beta.installs == [(BETA, BETA_REQUESTER)]


async def test_an_install_granting_fewer_scopes_than_the_manifest_is_refused(
    harness: Harness, beta: Sandbox, caplog: pytest.LogCaptureFixture
) -> None:
    """OAuth mode asks no auth.test at start: the install is the one moment a
    workspace's token can be checked. One granted only chat:write and commands (the
    authorize link trimmed, an app's scopes edited by hand) is not kept: the installer
    sees Bolt's failure page, the log names the missing scopes."""
    assert harness.server is not None
    jar = aiohttp.CookieJar(unsafe=True, treat_as_secure_origin=[harness.server.url])
    name, value = beta.browser_cookie(BETA_REQUESTER)
    jar.update_cookies({name: value}, URL(beta.base_url))
    async with aiohttp.ClientSession(cookie_jar=jar) as browser:
        async with browser.get(harness.server.url + INSTALL_PATH, allow_redirects=False) as start:
            authorize = urlsplit(start.headers["Location"])
        query = dict(parse_qsl(authorize.query)) | {"scope": "chat:write,commands"}
        trimmed = urlunsplit(authorize._replace(query=urlencode(query)))
        with caplog.at_level(logging.WARNING, logger="bot.installations"):
            async with browser.get(trimmed) as page:
                status = page.status
    assert status >= 400
    assert await InstallationStore(harness.store.db).teams() == []
    (refused,) = [r.getMessage() for r in caplog.records if r.name == "bot.installations"]
    assert f"install in team {BETA} refused" in refused and "channels:history" in refused


async def test_the_oauth_web_is_ready_and_serves_metrics_beside_the_install_routes(
    harness: Harness, beta: Sandbox
) -> None:
    """OAuth mode has no one bot token: ``/readyz`` checks the rest (no ``auth.test``
    without a token), and ``/metrics`` and ``/slack/install`` are served together."""
    assert harness.server is not None
    async with aiohttp.ClientSession() as session:
        async with session.get(harness.server.url + "/readyz") as ready:
            assert ready.status == 200, await ready.text()
            assert (await ready.json())["checks"]["slack"] == "ok"
        async with session.get(harness.server.url + "/metrics") as metrics:
            assert metrics.status == 200
        async with session.get(harness.server.url + INSTALL_PATH, allow_redirects=False) as start:
            assert start.status == 302
    assert not [c for c in harness.sandbox.calls if c["method"] == "auth.test" and not c["ok"]]


async def test_a_click_is_acked_in_time_while_the_installations_table_is_locked(
    harness: Harness, beta: Sandbox
) -> None:
    """A migration, ``VACUUM FULL`` or ``REINDEX`` holds ``ACCESS EXCLUSIVE`` on the
    installations table, which every request reads before its ack
    (``StoreAuthorize``): the read is bounded, the installation last read answers for
    it, and the Approve click is acked and recorded."""
    assert (await install(harness, harness.sandbox, REQUESTER))[0] == 200
    run = await start_run(harness.sandbox, harness, user_id=REQUESTER, channel=CHANNEL)
    write, _ = await harness.requests(run, count=2)
    url = harness.settings.database_url
    async with await psycopg.AsyncConnection.connect(url) as holder:
        await holder.execute("LOCK TABLE slack_installations IN ACCESS EXCLUSIVE MODE")
        clicked = time.monotonic()
        status, _ = await harness.click(write, "approve")
        acked_s = time.monotonic() - clicked
        decided = await harness.decided(write)  # recorded, the lock still held
        await holder.rollback()
    assert status == 200 and acked_s < ACK_DEADLINE_S, acked_s
    assert decided.decided_by == REVIEWER
    assert harness.sandbox.violations == []  # nothing answered after Slack's 3 s

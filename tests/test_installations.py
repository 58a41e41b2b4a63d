"""The OAuth stores' contract (installations, one-time states) and closing a workspace,
run against PostgreSQL and SQLite (same SQL, both real)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest
from slack_bolt.error import BoltError
from slack_sdk.oauth.installation_store.models.installation import Installation

from agent_bridge.audit import AuditKind, read_events
from agent_bridge.backend import open_backend
from agent_bridge.errors import StoreUnavailableError
from agent_bridge.models import ApprovalRequest, ApprovalState, Run, RunState
from agent_bridge.store import ApprovalStore
from bot.errors import SlackRefusedError
from bot.installations import InstallationStore
from bot.oauth_install import (
    AUTHORIZE_DB_S,
    LAST_READ_MAX_S,
    StoreAuthorize,
    authorize_url_of,
)
from bot.oauth_states import OAuthStateStore
from bot.uninstalls import UninstallListeners, predates
from bot.workspaces import NOT_INSTALLED, TeamClients
from tests.harness import Harness
from tests.test_faults import waiting_on_lock

NOW = 1_000.0


@pytest.fixture(params=["postgres", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ApprovalStore]:
    url = (
        request.getfixturevalue("pg_url")
        if request.param == "postgres"
        else (f"sqlite:///{tmp_path / 'store.db'}")
    )
    backend = await open_backend(url)
    await backend.release()
    yield ApprovalStore(backend.db, clock=lambda: NOW)
    await backend.close()


def installation(team_id: str, token: str, **changes: object) -> Installation:
    fields: dict[str, object] = {
        "app_id": "A1",
        "team_id": team_id,
        "team_name": team_id.lower(),
        "bot_token": token,
        "bot_id": "B1",
        "bot_user_id": "U0BOT",
        "bot_scopes": ["chat:write", "commands"],
        "user_id": "U0ADMIN",
    }
    return Installation(**(fields | changes))  # type: ignore[arg-type]


async def test_an_installation_is_kept_per_workspace_replaced_and_deleted(
    store: ApprovalStore,
) -> None:
    installations = InstallationStore(store.db, clock=store.clock)
    await installations.async_save(installation("T1", "xoxb-1"))
    await installations.async_save(installation("T2", "xoxb-2", enterprise_id="E1"))
    bot = await installations.async_find_bot(enterprise_id=None, team_id="T1")
    assert bot is not None
    assert (bot.team_id, bot.bot_token, bot.bot_user_id, bot.bot_scopes) == (
        "T1",
        "xoxb-1",
        "U0BOT",
        ["chat:write", "commands"],
    )
    found = await installations.async_find_installation(enterprise_id="E1", team_id="T2")
    assert found is not None and found.user_id == "U0ADMIN" and found.bot_token == "xoxb-2"
    # another org's ID finds nothing; no team finds nothing
    assert await installations.async_find_bot(enterprise_id="E9", team_id="T2") is None
    assert await installations.async_find_bot(enterprise_id=None, team_id=None) is None

    await installations.async_save(installation("T1", "xoxb-1b"))  # reinstalled: new token
    bot = await installations.async_find_bot(enterprise_id=None, team_id="T1")
    assert bot is not None and bot.bot_token == "xoxb-1b"
    assert await installations.teams() == ["T2", "T1"]  # the latest install last

    await installations.async_delete_installation(enterprise_id=None, team_id="T1", user_id="U1")
    assert await installations.teams() == ["T2", "T1"]  # a user's token alone: none kept
    await installations.async_delete_bot(enterprise_id=None, team_id="T1")
    assert await installations.async_find_bot(enterprise_id=None, team_id="T1") is None
    await installations.async_delete_all(enterprise_id="E1", team_id="T2")
    assert await installations.teams() == []


async def test_an_org_wide_or_tokenless_install_is_refused(store: ApprovalStore) -> None:
    installations = InstallationStore(store.db)
    with pytest.raises(BoltError, match="org-wide"):
        await installations.async_save(
            installation("T1", "xoxb-1", is_enterprise_install=True, enterprise_id="E1")
        )
    with pytest.raises(BoltError, match="no bot token"):
        await installations.async_save(installation("T1", ""))
    assert await installations.teams() == []


async def test_an_oauth_state_is_consumed_once_and_expires(store: ApprovalStore) -> None:
    now = [NOW]
    states = OAuthStateStore(store.db, ttl_s=60, clock=lambda: now[0])
    first, second = await states.async_issue(), await states.async_issue()
    assert first != second and len(first) >= 40
    assert not await states.async_consume("never-issued")
    # two redirects carrying the same state at once: one install
    assert sorted(await asyncio.gather(*(states.async_consume(first) for _ in range(2)))) == [
        False,
        True,
    ]
    assert not await states.async_consume(first)
    now[0] += 61
    assert not await states.async_consume(second)  # expired
    await states.async_issue()  # deletes expired states on the way
    rows = await store.db.fetch_all("SELECT state FROM slack_oauth_states")
    assert second not in {r["state"] for r in rows} and len(rows) == 1


async def test_each_workspace_gets_its_own_token_and_an_uninstalled_one_none(
    store: ApprovalStore,
) -> None:
    installations = InstallationStore(store.db)
    await installations.async_save(installation("T1", "xoxb-1"))
    await installations.async_save(installation("T2", "xoxb-2"))
    teams = TeamClients(installations, base_url="http://127.0.0.1:9/api/")
    assert (await teams.client_for("T1")).token == "xoxb-1"
    assert (await teams.client_for("T2")).token == "xoxb-2"
    assert await teams.client_for("T1") is await teams.client_for("T1")  # one client a token
    await installations.async_delete_all(enterprise_id=None, team_id="T1")
    with pytest.raises(SlackRefusedError) as refused:
        await teams.client_for("T1")
    assert refused.value.code == NOT_INSTALLED and not refused.value.retryable
    authorize = StoreAuthorize(installations)
    result = await authorize(context={}, enterprise_id=None, team_id="T2", user_id="U9")
    assert result is not None
    assert (result.team_id, result.bot_token, result.bot_user_id, result.user_id) == (
        "T2",
        "xoxb-2",
        "U0BOT",
        "U9",
    )
    assert await authorize(context={}, enterprise_id=None, team_id="T1", user_id="U9") is None


async def test_authorize_is_bounded_and_answers_from_the_last_read_when_the_table_is_locked(
    pg_url: str,
) -> None:
    """The installation last read answers for a database that cannot, for
    ``LAST_READ_MAX_S`` and until the workspace leaves; the read is bounded either way."""
    backend = await open_backend(pg_url)
    await backend.release()
    installations = InstallationStore(backend.db)
    for team_id in ("T1", "T2", "T3"):
        await installations.async_save(installation(team_id, f"xoxb-{team_id}"))
    now = [0.0]
    authorize = StoreAuthorize(installations, clock=lambda: now[0])

    async def token(team_id: str) -> str | None:
        found = await authorize(context={}, enterprise_id=None, team_id=team_id, user_id="U9")
        return found.bot_token if found else None

    assert [await token(t) for t in ("T1", "T3")] == ["xoxb-T1", "xoxb-T3"]  # read now
    try:
        async with await psycopg.AsyncConnection.connect(pg_url) as holder:
            await holder.execute("LOCK TABLE slack_installations IN ACCESS EXCLUSIVE MODE")
            started = time.monotonic()
            assert await token("T1") == "xoxb-T1"  # the last read, the lock still held
            with pytest.raises(StoreUnavailableError):  # never read here: no answer to give
                await token("T2")
            authorize.forget("T3")  # T3 left (bot.uninstalls)
            with pytest.raises(StoreUnavailableError):
                await token("T3")
            now[0] = LAST_READ_MAX_S + 1  # T1's read is too old to answer for it now
            with pytest.raises(StoreUnavailableError):
                await token("T1")
            assert time.monotonic() - started < 4 * AUTHORIZE_DB_S + 1.0  # each bounded
            await holder.rollback()
        await installations.async_delete_all(enterprise_id=None, team_id="T1")
        assert await token("T1") is None
    finally:
        await backend.close()


async def test_a_read_in_flight_when_its_workspace_leaves_never_answers_for_it_later(
    pg_url: str,
) -> None:
    """A request's read of the installation is held up (a lock) while the workspace
    leaves (``StoreAuthorize.forget``); the read then returns the row as it was: it must
    not become the installation that answers for the database later."""
    backend = await open_backend(pg_url)
    await backend.release()
    installations = InstallationStore(backend.db)
    await installations.async_save(installation("T1", "xoxb-T1"))
    authorize = StoreAuthorize(installations)

    async def token() -> str | None:
        found = await authorize(context={}, enterprise_id=None, team_id="T1", user_id="U9")
        return found.bot_token if found else None

    try:
        async with await psycopg.AsyncConnection.connect(pg_url) as holder:
            await holder.execute("LOCK TABLE slack_installations IN ACCESS EXCLUSIVE MODE")
            in_flight = asyncio.create_task(token())
            await Harness.wait_for(lambda: waiting_on_lock(pg_url, "SELECT"))  # it waits
            authorize.forget("T1")  # T1 left meanwhile
            await holder.rollback()
            assert await in_flight == "xoxb-T1"  # that one request, read before it left
            await holder.execute("LOCK TABLE slack_installations IN ACCESS EXCLUSIVE MODE")
            with pytest.raises(StoreUnavailableError):  # nothing answers for T1 now
                await token()
            await holder.rollback()
    finally:
        await backend.close()


def test_the_authorize_page_is_beside_the_web_api() -> None:
    assert authorize_url_of("https://slack.com/api/") == "https://slack.com/oauth/v2/authorize"
    assert authorize_url_of("http://127.0.0.1:5/api/") == "http://127.0.0.1:5/oauth/v2/authorize"


async def test_closing_a_workspace_cancels_its_open_requests_and_fails_its_runs_only(
    store: ApprovalStore,
) -> None:
    for run_id, team_id in (("r1", "T1"), ("r2", "T1"), ("r3", "T2")):
        await store.create_run(
            Run(
                run_id=run_id,
                thread_id=f"th-{run_id}",
                task="t",
                channel_id="C1",
                user_id="U1",
                team_id=team_id,
            )
        )
        await store.add_requests(
            [
                ApprovalRequest(
                    request_id=f"q-{run_id}",
                    run_id=run_id,
                    thread_id=f"th-{run_id}",
                    interrupt_id=f"i-{run_id}",
                    index=0,
                    batch_size=1,
                    tool_name="write_file",
                    args={"path": "a"},
                    allowed_decisions=["approve"],
                    args_schema={"type": "object"},
                    channel_id="C1",
                )
            ]
        )
    assert await store.claim_run("r1", owner="w0", lease_s=30, from_state=RunState.QUEUED)
    await store.release_run("r1", owner="w0", state=RunState.WAITING)  # paused, no lease
    claimed = await store.claim_run("r2", owner="w1", lease_s=30, from_state=RunState.QUEUED)
    assert claimed is not None  # r2 is being driven

    closed = await store.close_workspace("T1", note="gone from T1")

    assert {r.request_id for r in closed} == {"q-r1", "q-r2"}
    assert {r.state for r in closed} == {ApprovalState.CANCELLED}
    assert all(r.drawn_revision == r.revision for r in closed)  # no redraw will be tried
    other = await store.get_request("q-r3")
    assert other is not None and other.state == ApprovalState.PENDING
    states = {r: (await store.get_run(r)).state for r in ("r1", "r2", "r3")}
    assert states == {"r1": RunState.FAILED, "r2": RunState.FAILED, "r3": RunState.QUEUED}
    # r2's worker finds its lease gone and stops; its release changes nothing
    assert await store.renew_leases(["r2"], owner="w1", lease_s=30) == set()
    await store.release_run("r2", owner="w1", state=RunState.WAITING)
    assert (await store.get_run("r2")).state == RunState.FAILED
    audit = [e for e in await read_events(store.db) if e.kind == AuditKind.CANCELLED]
    assert {(e.request_id, e.reason) for e in audit} == {
        ("q-r1", "gone from T1"),
        ("q-r2", "gone from T1"),
    }


@pytest.mark.parametrize(
    ("event_time", "older"), [(99, True), (100, False), (101, False), (None, False)]
)
def test_only_an_event_of_an_earlier_second_than_the_install_predates_it(
    event_time: int | None, older: bool
) -> None:
    """``event_time`` is whole seconds: one of the install's own second may be after it,
    and is taken as current (the uninstall applies)."""
    assert predates(event_time, 100.5) is older


@pytest.mark.parametrize("event_time", ["soon", 1.5, [], None])
async def test_an_uninstall_with_a_time_that_is_not_whole_seconds_still_leaves(
    store: ApprovalStore, event_time: object
) -> None:
    """A missing or unreadable ``event_time`` is no time: the event is taken as current
    and the app leaves (``bot.uninstalls``), rather than the whole event being dropped
    as malformed with the tokens kept."""
    installations = InstallationStore(store.db, clock=store.clock)
    await installations.async_save(installation("T1", "xoxb-1"))
    forgotten: list[str] = []
    listeners = UninstallListeners(
        store=store, installations=installations, forget=forgotten.append
    )
    acked: list[object] = []

    async def ack(*args: object, **kwargs: object) -> None:
        acked.append(args)

    body = {
        "type": "event_callback",
        "team_id": "T1",
        "event_time": event_time,
        "event": {"type": "app_uninstalled"},
    }
    await listeners.on_leaving(ack, body)
    assert acked
    assert await installations.async_find_bot(enterprise_id=None, team_id="T1") is None
    assert forgotten == ["T1"]  # StoreAuthorize answers for it from no earlier read

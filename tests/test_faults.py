"""Faults: concurrency, Redis and PostgreSQL outages, Slack API failures, duplicate
deliveries and signature edge cases. Real PostgreSQL, Redis, sandbox Slack, web, workers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
import pytest
import redis
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg.conninfo import conninfo_to_dict
from slack_sdk.signature import SignatureVerifier

from agent_bridge import wording
from agent_bridge import worker as worker_module
from agent_bridge.backend import open_backend
from agent_bridge.deadline import within
from agent_bridge.errors import StoreRejectedError, StoreTooSlowError, StoreUnavailableError
from agent_bridge.models import DEFAULT_AGENT, ApprovalState, Run, RunState
from agent_bridge.postgres_db import (
    CONNECT_TIMEOUT_MIN_S,
    POOL_MAX_SIZE,
    PostgresDatabase,
    _on,
    connect_timeout,
    open_pool,
)
from agent_bridge.repeated_lines import FIRST_NOTE, REPEAT_INTERVAL_S, RepeatedLines
from agent_bridge.scripted_model import DEMO_TASK
from agent_bridge.settings import WorkerConfig
from agent_bridge.store import ApprovalStore
from agent_bridge.store_sql import SELECT_RUN
from agent_bridge.worker import CHECKPOINT_RETRIES
from bot import ids
from bot.actions import DECISION_DB_S
from bot.dedupe import KEY_PREFIX as EVENT_KEY_PREFIX
from bot.processes import WEB_DB_TIMEOUT_S
from bot.slack_gateway import message_key
from slack_sandbox.delivery import ACK_DEADLINE_S, form_body, payload_body
from slack_sandbox.modals import TRIGGER_TTL_S
from tests import services
from tests.harness import CHANNEL, DBA, REQUESTER, REVIEWER, Harness
from tests.slack_bodies import (
    JSON,
    card_click,
    changed,
    command_fields,
    json_body,
    mention_payload,
    only,
    sample_click,
    sample_submission,
)

REASON = "Archive the rows before deleting them."
DEAD_REDIS = "redis://127.0.0.1:1/0"
RUN_TASKS = "SELECT task FROM runs"
REVIEWERS = {f"U0R{i:02d}": f"reviewer{i}" for i in range(20)}


async def finish_demo(harness: Harness) -> Any:
    """Run the documentation scenario; return the finished run."""
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    await harness.click(write, "approve")
    await harness.reject(sql, REASON)
    return await harness.finished(run)


async def tool_names(harness: Harness, run: Any) -> list[str]:
    return sorted(m.name for m in await harness.tool_messages(run))


class TestConcurrency:
    @pytest.fixture
    def harness_options(self) -> dict[str, Any]:
        return {
            "workers": 2,
            "users": {**REVIEWERS, DBA: "dba", REVIEWER: "reviewer", "U0ALICE": "alice"},
        }

    async def test_twenty_mixed_clicks_record_one_decision(self, harness: Harness) -> None:
        run = await harness.start_run(DEMO_TASK)
        write, sql = await harness.requests(run, count=2)
        approvers, rejecters = list(REVIEWERS)[:10], list(REVIEWERS)[10:]
        views = {  # each opens the Reject modal first
            u: (await harness.open_modal(write, "reject", user_id=u))["id"] for u in rejecters
        }
        answers = await asyncio.gather(
            *(harness.click(write, "approve", user_id=u) for u in approvers),
            *(
                harness.sandbox.submit_view(
                    view_id=views[u], user_id=u, values={ids.REASON_BLOCK: f"no, says {u}"}
                )
                for u in rejecters
            ),
        )
        assert all(status == 200 for status, _ in answers)
        stored = await harness.store.get_request(write.request_id)
        assert stored is not None and stored.state == ApprovalState.DECIDED
        winner = stored.decided_by
        assert winner is not None
        modal_losers = [u for u, (_, body) in zip(rejecters, answers[10:], strict=True) if body]
        assert all(
            "already decided" in harness.top_view(u)["errors"][ids.REASON_BLOCK]
            for u in modal_losers
        )

        async def told() -> list[str] | None:  # click losers are told after the ack
            notes = harness.sandbox.ephemerals()
            users = [n["user"] for n in notes if "already decided" in n.get("text", "")]
            return users if len(users) + len(modal_losers) + 1 >= len(REVIEWERS) else None

        click_losers = await harness.wait_for(told)
        assert sorted([*modal_losers, *click_losers, winner]) == sorted(REVIEWERS)
        await harness.reject(sql, REASON)
        await harness.finished(run)
        # Approved or rejected, the call has exactly one result in the checkpoint.
        assert (await tool_names(harness, run)).count("write_file") == 1

    async def test_two_workers_apply_each_decision_once(self, harness: Harness) -> None:
        done = await finish_demo(harness)
        await harness.settled()  # the other worker, had it a second go, has had it now
        assert len(harness.workers) == 2
        assert await tool_names(harness, done) == ["execute_sql", "read_data", "write_file"]
        texts = harness.slack_thread_texts(done)
        assert sum(" returned: " in t for t in texts) == 1, texts  # the approved write
        assert sum(t == "execute_sql rejected" for t in texts) == 1, texts
        assert sum(t == "read_data ran" for t in texts) == 1, texts  # ungated: no output
        assert sum(t.startswith("Done.") for t in texts) == 1


class TestRedisDown:
    @pytest.fixture
    def harness_options(self) -> dict[str, Any]:
        return {"web_redis_url": DEAD_REDIS, "worker_redis_url": DEAD_REDIS}

    async def test_decisions_are_recorded_and_applied_by_the_sweep(self, harness: Harness) -> None:
        started = time.monotonic()
        done = await finish_demo(harness)
        assert done.state == RunState.DONE
        assert time.monotonic() - started < 15  # polling every 0.5 s, not stuck


async def test_a_flushed_redis_loses_nothing(harness: Harness) -> None:
    """Flushed while it holds the dedupe key of the event that started the run, and
    between the run's two decisions: the database has everything the run needs."""
    run = await mentioned_run(harness, "Ev0042")
    write, sql = await harness.requests(run, count=2)
    await harness.click(write, "approve")
    assert (await harness.decided(write)).decided_by == REVIEWER
    client = redis.Redis.from_url(services.redis_url())
    assert client.ttl(EVENT_KEY_PREFIX + "Ev0042") > 0  # Redis holds something to flush
    client.flushdb()
    assert client.dbsize() == 0
    await harness.reject(sql, REASON)
    done = await harness.finished(run)
    assert done.state == RunState.DONE
    # The approval given before the flush was applied after it: the file was written.
    written = harness.settings.workspace_dir / "files/archive/old_orders.csv"
    assert written.read_text().startswith("id,customer")
    assert await tool_names(harness, done) == ["execute_sql", "read_data", "write_file"]
    stored = await harness.store.requests_for_run(run.run_id)
    assert [(r.decided_by, r.state) for r in stored] == [
        (REVIEWER, ApprovalState.APPLIED),
        (DBA, ApprovalState.APPLIED),
    ]


async def test_no_server_side_prepared_statements(pg_backend: Any) -> None:
    """Safe behind a transaction-pooling proxy (PgBouncer): by default (every process,
    the worker without ``DATABASE_PREPARED_STATEMENTS``) no statement is prepared, the
    checkpointer's included, however often it runs (psycopg would prepare after 5)."""
    pool = pg_backend.db.pool
    async with pool.connection() as conn:
        saver = AsyncPostgresSaver(conn=conn)
        for _ in range(10):
            await conn.execute("SELECT run_id FROM runs WHERE run_id = %s", ("x",))
            await saver.aget_tuple({"configurable": {"thread_id": "x", "checkpoint_ns": ""}})
        cursor = await conn.execute("SELECT count(*) AS n FROM pg_prepared_statements")
        assert (await cursor.fetchone())["n"] == 0


async def test_the_worker_prepares_the_checkpointers_statements_never_the_stores(
    pg_url: str,
) -> None:
    """With prepared statements (``DATABASE_PREPARED_STATEMENTS=true``), the saver's are
    prepared at their first use and the store's never are: a release adding a column
    while the worker runs would otherwise fail its next ``SELECT *`` ("cached plan must
    not change result type", SQLSTATE 0A000)."""
    backend = await open_backend(pg_url, prepared_statements=True)
    assert isinstance(backend.db, PostgresDatabase)
    try:
        run = await ApprovalStore(backend.db).create_run(
            Run(run_id="run-p", thread_id="t-p", task="t", channel_id=CHANNEL, user_id=REQUESTER)
        )
        async with backend.db.pool.connection() as conn:
            saver = AsyncPostgresSaver(conn=conn)
            await saver.aget_tuple({"configurable": {"thread_id": "x", "checkpoint_ns": ""}})
            for _ in range(3):
                await _on(conn, SELECT_RUN, {"run_id": run.run_id})
            cursor = await conn.execute(
                "SELECT statement FROM pg_prepared_statements", prepare=False
            )
            prepared = [row["statement"] for row in await cursor.fetchall()]
            assert any("from checkpoints" in text.lower() for text in prepared)
            assert not any("from runs" in text.lower() for text in prepared)
            async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as other:
                await other.execute("ALTER TABLE runs ADD COLUMN released_later text")
            rows, _ = await _on(conn, SELECT_RUN, {"run_id": run.run_id})
            assert rows[0]["released_later"] is None
    finally:
        await backend.close()


async def test_a_bounded_transaction_ends_by_its_deadline_not_each_statement(
    pg_backend: Any,
) -> None:
    """Under a deadline, a later statement of a transaction gets only the time left then
    (each one getting the whole deadline would let two slow statements run past it), and
    the transaction is rolled back: nothing of it is recorded."""
    db = pg_backend.db
    await db.execute("CREATE TABLE bounded_marks (n int)")
    with pytest.raises(StoreTooSlowError), within(1.0):
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO bounded_marks VALUES (1)")
            await tx.execute("SELECT pg_sleep(0.6)")  # within the deadline alone...
            await tx.execute("SELECT pg_sleep(0.6)")  # ...and so is this one: not both
    assert await db.fetch_all("SELECT n FROM bounded_marks") == []


@pytest.mark.parametrize(
    ("sqlstate", "raised"),
    [
        ("54000", StoreRejectedError),  # a row too big for an index: fails again
        ("53100", StoreUnavailableError),  # disk full: may pass once it is freed
        ("25006", StoreUnavailableError),  # a standby after a failover
    ],
)
async def test_a_store_statement_refused_for_itself_is_not_an_outage(
    pg_backend: Any, sqlstate: str, raised: type[Exception]
) -> None:
    """Both are psycopg's ``OperationalError``: only the server's (``is_outage``) is
    ``StoreUnavailableError``, retried; the statement's own is ``StoreRejectedError``,
    which fails the run instead of sending it back for good."""
    refuse = f"DO $$ BEGIN RAISE EXCEPTION 'refused' USING ERRCODE = '{sqlstate}'; END $$"
    with pytest.raises(raised) as caught:
        await pg_backend.db.execute(refuse)
    assert type(caught.value) is raised


async def test_a_checkpoint_write_cut_off_mid_statement_is_an_outage(
    pg_backend: Any, pg_url: str
) -> None:
    """The checkpointer's write loses its connection while the statement runs: raised as
    ``StoreUnavailableError`` (the worker retries the run), not psycopg's own error (which
    the worker would take for the graph's and fail the run); a write after it works."""
    saver = pg_backend.checkpointer
    config = {"configurable": {"thread_id": "cut-off", "checkpoint_ns": ""}}
    name = pg_url.rsplit("/", 1)[1]
    async with table_locked(pg_url, "checkpoints"):
        writing = asyncio.ensure_future(saver.aput(config, empty_checkpoint(), {}, {}))
        waiting = None
        while waiting is None and not writing.done():
            waiting = await _lock_waiters(name)
            await asyncio.sleep(0.01)
        terminate_backends(waiting or [])
        with pytest.raises(StoreUnavailableError, match="checkpoint"):
            await writing
    saved = await saver.aput(config, empty_checkpoint(), {}, {})
    assert (await saver.aget_tuple(saved)) is not None


async def test_the_first_statement_after_a_ten_second_outage_connects(pg_url: str) -> None:
    """Statements asked for during an outage leave the pool retrying its connections with
    psycopg_pool's backoff (1 s, then doubling): by default for 5 minutes, so after a
    10 s outage the next attempts came at about 15 s (after a minute's, up to a minute
    later), and a click after the database was back was still told it is unreachable.
    The pool now gives an attempt up after its wait (``reconnect_timeout``, here the web
    process's), and the next statement after the outage connects within that wait.

    The pool warns at each failed attempt; as the processes log (``logs.REPEATING_LOGGERS``)
    that is one line for the outage, not one per attempt."""
    pool = await open_pool(pg_url, timeout_s=WEB_DB_TIMEOUT_S)
    db = PostgresDatabase(pool)
    name = pg_url.rsplit("/", 1)[1]
    attempts, written = Seen(), Seen()
    pool_logger = logging.getLogger("psycopg.pool")
    configured = pool_logger.filters[:]  # a test of logs.configure_logging may have left one
    # Filters run in order until one refuses: attempts sees every warning, written those
    # the pacing lets through.
    pool_logger.filters[:] = [attempts, RepeatedLines(), written]
    set_connections(name, allowed=False)
    try:
        ends = time.monotonic() + OUTAGE_S  # the scenario: how long the database is down
        while time.monotonic() < ends:  # a click every 0.3 s meanwhile, each told
            with pytest.raises(StoreUnavailableError), within(0.3):
                await db.fetch_one("SELECT 1 AS one")
    finally:
        set_connections(name, allowed=True)
        pool_logger.filters[:] = configured
    failed = [line for line in attempts.lines if line.startswith("error connecting")]
    assert len(failed) > 3, attempts.lines  # the pool's own: a line per attempt
    assert [line for line in written.lines if line.startswith("error connecting")] == [
        failed[0] + FIRST_NOTE.format(interval=REPEAT_INTERVAL_S)
    ]
    try:
        with within(WEB_DB_TIMEOUT_S):
            assert await db.fetch_one("SELECT 1 AS one") == {"one": 1}
    finally:
        await pool.close()


class Seen(logging.Filter):
    """A filter keeping the message of every record it sees (and passing each)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        self.lines.append(record.getMessage())
        return True


OUTAGE_S = 10.0
"""Long enough that, by default, every connection attempt begun in its first 3 s is
waiting out an 8 s backoff when it ends (attempts at 0, 1, 3, 7 and 15 s)."""


async def test_a_server_that_takes_the_connection_and_never_answers_is_given_up() -> None:
    """A blackholed failover: the TCP connection is taken, the startup never answered.
    The pool's connections give up after ``connect_timeout`` (its wait, at least 10 s),
    not psycopg's 130 s, which held back the pool's growth meanwhile."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel takes connections; nothing ever answers them
        url = f"postgresql://postgres@127.0.0.1:{silent.getsockname()[1]}/app"
        keywords = connect_timeout(url, WEB_DB_TIMEOUT_S)
        connecting = psycopg.AsyncConnection.connect(url, **keywords)
        with pytest.raises(psycopg.errors.ConnectionTimeout):
            await asyncio.wait_for(connecting, timeout=3 * CONNECT_TIMEOUT_MIN_S)
    assert connect_timeout(url + "?connect_timeout=30", WEB_DB_TIMEOUT_S) == {}


async def test_a_pool_cancelled_while_it_connects_leaves_no_task_behind() -> None:
    """A Ctrl-C while a process still connects to a server that never answers cancels
    ``open_pool``: the pool is closed, its workers with it. They take a cancellation for
    a failed attempt and waited on, so the process never ended (found by a review: one
    Ctrl-C did not stop a worker starting against a blackholed database)."""
    loop = asyncio.get_running_loop()
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        silent.setblocking(False)
        url = f"postgresql://postgres@127.0.0.1:{silent.getsockname()[1]}/app"
        opening = asyncio.create_task(open_pool(url, timeout_s=CONNECT_TIMEOUT_MIN_S))
        taken, _ = await loop.sock_accept(silent)  # the pool is connecting: never answered
        with taken:
            opening.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(opening, CONNECT_TIMEOUT_MIN_S)
            left = [t for t in asyncio.all_tasks() if "psycopg_pool" in repr(t.get_coro())]
            assert not [t for t in left if not t.done()], left


async def test_no_connection_in_time_is_an_outage_only_while_connecting_fails(
    pg_url: str,
) -> None:
    """A ``PoolTimeout`` reads as the database unreachable only when the pool's attempts
    to connect fail (``PostgresPool.connect_failing``): a pool grown to its size by a
    burst, every connection then ended and the database closed to new ones, is an outage
    (found by a review: read from the pool's size alone it was "did not answer in
    time"); the same pool with every connection merely checked out is too slow."""
    pool = await open_pool(pg_url, timeout_s=WEB_DB_TIMEOUT_S)
    db = PostgresDatabase(pool)
    name = pg_url.rsplit("/", 1)[1]
    try:
        async with contextlib.AsyncExitStack() as held:  # a burst: the pool at its size
            for _ in range(pool.max_size):
                await held.enter_async_context(pool.connection())
            with pytest.raises(StoreTooSlowError), within(0.5):
                await db.fetch_one("SELECT 1 AS one")
        set_connections(name, allowed=False)
        with pytest.raises(StoreUnavailableError) as raised, within(WEB_DB_TIMEOUT_S):
            await db.fetch_one("SELECT 1 AS one")
        assert not isinstance(raised.value, StoreTooSlowError), raised.value
    finally:
        set_connections(name, allowed=True)
        await pool.close()


async def test_a_pooled_connection_is_handed_out_without_a_round_trip(pg_backend: Any) -> None:
    """The pool's check before each checkout reads the socket only (no ``SELECT 1`` or
    empty query per statement), and still sees a connection the server ended."""
    db = pg_backend.db
    with psycopg.connect(services.admin_url(), autocommit=True) as admin:

        def last_statement(pid: int) -> str:
            row = admin.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", (pid,))
            return str(row.fetchone()[0])  # type: ignore[index]

        pids = set()
        for _ in range(db.pool.max_size):
            async with db.pool.connection() as conn:
                await conn.execute("SELECT 'marker'")
                pids.add(conn.info.backend_pid)
        for _ in range(db.pool.max_size):  # checkouts with no statement of ours
            async with db.pool.connection():
                pass
        assert {last_statement(pid) for pid in pids} == {"SELECT 'marker'"}
        for each in pids:
            admin.execute("SELECT pg_terminate_backend(%s)", (each,))
    rows = await db.fetch_all("SELECT pg_backend_pid() AS pid")  # replaced, not an error
    assert rows[0]["pid"] not in pids


class TestPostgresOutage:
    async def test_a_click_while_the_database_is_down_is_told_and_can_be_retried(
        self, harness: Harness
    ) -> None:
        run = await harness.start_run(DEMO_TASK)
        write, sql = await harness.requests(run, count=2)
        view = await harness.open_modal(sql, "reject", user_id=DBA)  # open before the outage
        name = harness.settings.database_url.rsplit("/", 1)[1]
        set_connections(name, allowed=False)
        try:
            status, _ = await harness.click(write, "approve")
            assert status == 200
            note = await harness.wait_for(lambda: harness.ephemeral("not* recorded"))
            assert note["user"] == REVIEWER
            status, body = await harness.sandbox.submit_view(
                view_id=view["id"], user_id=DBA, values={ids.REASON_BLOCK: REASON}
            )
            assert body is not None and "database is unreachable" in str(body["errors"])
        finally:
            set_connections(name, allowed=True)
        stored = await harness.store.get_request(write.request_id)
        assert stored is not None and stored.state == ApprovalState.PENDING
        await harness.wait_for(lambda: _answers(harness.web_store))  # the pool reconnected
        await harness.click(write, "approve")
        status, body = await harness.sandbox.submit_view(
            view_id=view["id"], user_id=DBA, values={ids.REASON_BLOCK: REASON}
        )
        assert not body, body
        assert (await harness.finished(run)).state == RunState.DONE

    async def test_a_command_while_the_database_is_down_is_told_privately(
        self, harness: Harness
    ) -> None:
        name = harness.settings.database_url.rsplit("/", 1)[1]
        set_connections(name, allowed=False)
        try:
            status, body = await harness.sandbox.slash_command(
                command="/agent", text=DEMO_TASK, user_id=REVIEWER, channel_id=CHANNEL
            )
            assert status == 200 and "Starting a run" in body  # the ack comes first
            note = await harness.wait_for(lambda: harness.ephemeral("was not started"))
        finally:
            set_connections(name, allowed=True)
        assert note["user"] == REVIEWER and note["text"] == wording.RUN_NOT_STARTED_TEXT
        assert await harness.store.latest_run() is None  # nothing was queued

    async def test_a_resume_after_all_connections_died_works(self, harness: Harness) -> None:
        run = await harness.start_run(DEMO_TASK)
        write, sql = await harness.requests(run, count=2)
        terminate_connections(harness.settings.database_url.rsplit("/", 1)[1])
        await harness.click(write, "approve")
        await harness.reject(sql, REASON)
        assert (await harness.finished(run)).state == RunState.DONE

    async def test_a_checkpoint_read_cut_off_mid_statement_is_retried_not_failed(
        self, harness: Harness
    ) -> None:
        """The worker's checkpoint read loses its connection while the statement runs (a
        failover, a killed session): the checkpoint is intact, so the run waits for its
        lease to end and a later drive finishes it; it does not fail. (A tool's own
        exception still fails its run: ``test_approval_loop``.)"""
        run = await harness.start_run(DEMO_TASK)
        write, sql = await harness.requests(run, count=2)
        name = harness.settings.database_url.rsplit("/", 1)[1]
        async with table_locked(harness.settings.database_url, "checkpoints"):
            await harness.click(write, "approve")
            await harness.reject(sql, REASON)
            waiting = await harness.wait_for(lambda: _lock_waiters(name))
            terminate_backends(waiting)
        done = await harness.finished(run)
        assert done.state == RunState.DONE, done.error
        decided = await harness.store.requests_for_run(run.run_id)
        assert {r.state for r in decided} == {ApprovalState.APPLIED}

    @pytest.mark.parametrize(
        ("sqlstate", "failed_as", "drives"),
        [
            ("54000", "ProgramLimitExceeded", 1),  # a row too big for an index
            ("57014", "CheckpointUnavailableError", CHECKPOINT_RETRIES),  # statement_timeout
        ],
    )
    async def test_a_checkpoint_write_refused_every_time_fails_the_run(
        self, harness: Harness, sqlstate: str, failed_as: str, drives: int
    ) -> None:
        """A checkpoint write that fails every time, as a trigger makes it: each drive
        that retries it runs the approved tool again. A failure of the statement itself
        (54000) fails the run at the first; one read as an outage (57014, a
        ``statement_timeout``: a lock may be held) sends it back to the queue, up to
        ``CHECKPOINT_RETRIES`` drives in a row, then fails it. No later sweep writes
        again."""
        run = await harness.start_run(DEMO_TASK)
        write, sql = await harness.requests(run, count=2)
        async with await psycopg.AsyncConnection.connect(
            harness.settings.database_url, autocommit=True
        ) as conn:
            await conn.execute(REFUSE_CHECKPOINT_WRITES.replace("SQLSTATE", sqlstate))
            await harness.click(write, "approve")
            await harness.reject(sql, REASON)
            failed = await harness.finished(run)
            assert failed.state == RunState.FAILED, failed
            assert (failed.error or "").startswith(failed_as), failed.error
            assert ("drives in a row" in (failed.error or "")) is (drives > 1)
            tried = await _refused_writes(conn)
            assert tried >= drives  # each drive's first write, and any beside it
            await harness.settled()  # a sweep, which would drive a requeued run again
            assert await _refused_writes(conn) == tried


async def test_a_failure_slack_did_not_take_is_told_by_time_keeping(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run fails while Slack refuses its failure note (a 500, not posted): the run is
    failed at once, its thread still saying it works; a later time-keeping pass, Slack
    back, posts the note and marks the run's first message failed."""
    monkeypatch.setattr(worker_module, "FAILURE_TELL_GRACE_S", 0.0)
    lost = harness.sandbox.stall_next("chat.postMessage", key_contains="/failed", applied=False)
    lost.released.set()
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    async with await psycopg.AsyncConnection.connect(
        harness.settings.database_url, autocommit=True
    ) as conn:
        await conn.execute(REFUSE_CHECKPOINT_WRITES.replace("SQLSTATE", "54000"))
        await harness.click(write, "approve")
        await harness.reject(sql, REASON)
        failed = await harness.finished(run)
    assert failed.state == RunState.FAILED

    async def told() -> list[dict[str, Any]] | None:
        notes = [
            m
            for m in harness.sandbox.thread(failed.channel_id, failed.thread_ts or "")
            if (message_key(m) or "").endswith("/failed")
        ]
        return notes or None

    assert len(await harness.wait_for(told)) == 1
    attempts = [c for c in harness.sandbox.calls if c["method"] == "chat.postMessage"]
    assert [c["ok"] for c in attempts if "/failed" in json.dumps(c)].count(False) == 1


REFUSE_CHECKPOINT_WRITES = """
CREATE SEQUENCE refused_writes;
CREATE FUNCTION refuse_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM nextval('refused_writes');  -- outside the transaction: counts every attempt
    RAISE EXCEPTION 'refused on purpose' USING ERRCODE = 'SQLSTATE';
END $$;
CREATE TRIGGER refuse BEFORE INSERT ON checkpoint_writes
    FOR EACH ROW EXECUTE FUNCTION refuse_write();
CREATE TRIGGER refuse BEFORE INSERT ON checkpoints
    FOR EACH ROW EXECUTE FUNCTION refuse_write();
"""
"""Every checkpoint write from now on refused with the SQLSTATE put in its place; the
attempts counted by a sequence (not rolled back)."""


async def _refused_writes(conn: psycopg.AsyncConnection[Any]) -> int:
    cur = await conn.execute("SELECT last_value FROM refused_writes")
    row = await cur.fetchone()
    assert row is not None
    return int(row[0])


class TestSlowDatabase:
    """The database made slow on purpose: another connection holds a lock on the
    requests' rows (as a competing transaction would) until the test lets go."""

    async def test_a_held_row_lock_opens_forms_and_a_submission_is_told_in_time(
        self, harness: Harness
    ) -> None:
        run = await harness.start_run(DEMO_TASK)
        write, sql = await harness.requests(run, count=2)
        rows = [write.request_id, sql.request_id]
        async with rows_locked(harness.settings.database_url, rows, "FOR NO KEY UPDATE"):
            edit = await harness.open_modal(write, "edit")  # the trigger did not expire
            assert edit["callback_id"] == ids.EDIT_CALLBACK
            view = await harness.open_modal(sql, "reject", user_id=DBA)
            status, body = await harness.sandbox.submit_view(
                view_id=view["id"], user_id=DBA, values={ids.REASON_BLOCK: REASON}
            )
            assert status == 200  # answered within Slack's 3 s (a later one is a violation)
            assert body is not None and body["errors"] == {
                ids.REASON_BLOCK: wording.STORE_SLOW_PLAIN
            }
            stored = await harness.store.get_request(sql.request_id)
            assert stored is not None and stored.state == ApprovalState.PENDING
            assert stored.decision is None
        status, body = await harness.sandbox.submit_view(
            view_id=view["id"], user_id=DBA, values={ids.REASON_BLOCK: REASON}
        )
        assert status == 200 and not body, body
        decided = await harness.decided(sql)  # recorded before the answer
        assert decided.decision is not None and decided.decision.type == "reject"
        assert decided.decided_by == DBA
        assert harness.sandbox.violations == []

    async def test_approve_clicks_behind_a_held_row_lock_are_told_in_time_and_free_the_pool(
        self, harness: Harness
    ) -> None:
        """As many Approve clicks as the web process has connections, on a card whose row
        another transaction holds: each is told it was not recorded, by the click's
        deadline (``DECISION_DB_S``), and gives its connection back, so another request's
        form opens while the lock is still held."""
        run = await harness.start_run(DEMO_TASK)
        write, sql = await harness.requests(run, count=2)
        async with rows_locked(
            harness.settings.database_url, [write.request_id], "FOR NO KEY UPDATE"
        ):
            clicked = time.monotonic()
            for _ in range(POOL_MAX_SIZE):
                status, _ = await harness.click(write, "approve")
                assert status == 200  # acked before the listener ran

            async def all_told() -> list[dict[str, Any]] | None:
                told = harness.sandbox.ephemerals(user_id=REVIEWER)
                return told if len(told) >= POOL_MAX_SIZE else None

            told = await harness.wait_for(all_told)
            assert time.monotonic() - clicked < DECISION_DB_S + 3.0  # not for the lock's life
            assert {m["text"] for m in told} == {wording.STORE_SLOW_DECISION_TEXT}
            view = await harness.open_modal(sql, "reject", user_id=DBA)  # the pool is free
            assert view["callback_id"] == ids.REJECT_CALLBACK
            stored = await harness.store.get_request(write.request_id)
            assert stored is not None and stored.state == ApprovalState.PENDING
            assert stored.approved_by == []  # nothing half-recorded
        await harness.click(write, "approve")  # once the lock is gone, a click records
        assert (await harness.decided(write)).decided_by == REVIEWER
        assert harness.sandbox.violations == []

    async def test_a_click_waiting_for_a_busy_pool_is_told_too_slow_not_unreachable(
        self, harness: Harness
    ) -> None:
        """Every connection of the web process's pool is busy past the click's deadline (a
        burst of clicks): the reviewer is told the database did not answer in time, not
        that it is unreachable (it answers every statement it is sent); once a connection
        is free, a click records."""
        run = await harness.start_run(DEMO_TASK)
        write, _ = await harness.requests(run, count=2)
        assert harness.web_backend is not None
        pool = harness.web_backend.db.pool  # type: ignore[attr-defined]
        async with contextlib.AsyncExitStack() as held:
            for _ in range(pool.max_size):
                await held.enter_async_context(pool.connection())
            clicked = time.monotonic()
            status, _ = await harness.click(write, "approve")
            assert status == 200
            note = await harness.wait_for(lambda: harness.ephemeral("not* recorded"))
            assert time.monotonic() - clicked < DECISION_DB_S + 3.0
            assert note["text"] == wording.STORE_SLOW_DECISION_TEXT
            stored = await harness.store.get_request(write.request_id)
            assert stored is not None and stored.state == ApprovalState.PENDING
        await harness.click(write, "approve")
        assert (await harness.decided(write)).decided_by == REVIEWER

    async def test_a_form_is_not_opened_past_its_trigger_when_the_database_cannot_answer(
        self, harness: Harness
    ) -> None:
        run = await harness.start_run(DEMO_TASK)
        write, _ = await harness.requests(run, count=2)
        # FOR UPDATE also blocks the opened view's foreign-key check: the form's record
        # cannot be written, so the form must not be opened.
        async with rows_locked(harness.settings.database_url, [write.request_id], "FOR UPDATE"):
            clicked = time.monotonic()
            status, _ = await harness.click(write, "edit")
            assert status == 200
            note = await harness.wait_for(lambda: harness.ephemeral("did not answer in time"))
            assert time.monotonic() - clicked < TRIGGER_TTL_S  # told while a form could open
            assert note["user"] == REVIEWER and note["text"] == wording.STORE_SLOW_TEXT
            assert harness.sandbox.open_views(REVIEWER) == []
        view = await harness.open_modal(write, "edit")  # once it answers, a click works
        assert view["callback_id"] == ids.EDIT_CALLBACK
        assert harness.sandbox.violations == []  # no views.open with an expired trigger


@pytest.fixture
def stalled_redis() -> Iterator[str]:
    """A Redis URL whose server takes connections and never answers (a Redis stalled by a
    long script, or a half-dead network path): the kernel completes the handshake."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)  # never accepted, never answered
    try:
        yield f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
    finally:
        listener.close()


class TestStalledRedis:
    """The web process's Redis never answers; the workers' does."""

    @pytest.fixture
    def harness_options(self, stalled_redis: str) -> dict[str, Any]:
        return {"web_redis_url": stalled_redis}

    async def test_a_submission_is_answered_in_time_and_its_run_resumes_by_the_sweep(
        self, harness: Harness
    ) -> None:
        """The database is slow for 1.2 s too, inside the submission's 2 s budget: the
        workers' signal (Redis: its own 2 s timeout) must come after the ack, or the
        ack is late while the decision is recorded (issue 11's "acked after Slack's 3 s,
        recorded anyway")."""
        run = await harness.start_run(DEMO_TASK)
        write, sql = await harness.requests(run, count=2)
        view = await harness.open_modal(sql, "reject", user_id=DBA)
        url = harness.settings.database_url
        async with await psycopg.AsyncConnection.connect(url) as holder:
            await holder.execute(
                "SELECT 1 FROM approval_requests WHERE request_id = %s FOR NO KEY UPDATE",
                (sql.request_id,),
            )

            async def release_once_the_submission_waits() -> None:
                await harness.wait_for(lambda: waiting_on_lock(url, ""), timeout_s=5.0)
                await asyncio.sleep(1.2)  # the injected fault: how long the lock is held
                await holder.rollback()

            releaser = asyncio.create_task(release_once_the_submission_waits())
            submitted = time.monotonic()
            status, body = await harness.sandbox.submit_view(
                view_id=view["id"], user_id=DBA, values={ids.REASON_BLOCK: REASON}
            )
            answered_s = time.monotonic() - submitted
            await releaser
        assert status == 200 and not body, body  # the form closed: recorded
        assert answered_s < ACK_DEADLINE_S, answered_s
        assert harness.sandbox.violations == []  # nothing answered after Slack's 3 s
        decided = await harness.decided(sql)
        assert decided.decided_by == DBA and decided.decision is not None
        await harness.click(write, "approve")  # no signal reaches a worker: the sweep does
        assert (await harness.finished(run)).state == RunState.DONE


async def test_no_request_waits_for_auth_test(harness: Harness) -> None:
    asked = [c for c in harness.sandbox.calls if c["method"] == "auth.test"]
    assert len(asked) == 1  # at the web process's start, before it served
    harness.sandbox.fail_next("auth.test", status=500, times=10)  # Slack's auth.test down
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    await harness.click(write, "approve")
    await harness.reject(sql, REASON)
    assert (await harness.finished(run)).state == RunState.DONE
    assert [c for c in harness.sandbox.calls if c["method"] == "auth.test"] == asked


class TestSlackFailures:
    @pytest.fixture
    def agent_settings(self, settings: WorkerConfig) -> WorkerConfig:
        return settings.model_copy(update={"lease_s": 3.0})

    async def test_429_is_retried_after_retry_after(self, harness: Harness) -> None:
        harness.sandbox.fail_next("chat.postMessage", status=429, retry_after_s=1, times=2)
        done = await finish_demo(harness)
        posts = [c for c in harness.sandbox.calls if c["method"] == "chat.postMessage"]
        assert [c["ok"] for c in posts[:3]] == [False, False, True]
        assert done.state == RunState.DONE

    async def test_a_message_slack_would_not_take_is_posted_by_a_later_sweep(
        self, harness: Harness
    ) -> None:
        harness.sandbox.fail_next("chat.postMessage", status=500, times=3)  # 3 posts fail
        run = await harness.start_run(
            {"tool_calls": [{"name": "write_file", "args": {"path": "a.txt", "content": "x"}}]}
        )
        (card,) = await harness.requests(run, count=1)
        failed = [c for c in harness.sandbox.calls if not c["ok"]]
        assert [c["method"] for c in failed] == ["chat.postMessage"] * 3
        assert await _slack_thread_started(harness, run)
        await harness.click(card, "approve")
        assert (await harness.finished(run)).state == RunState.DONE

    async def test_a_deleted_pending_card_is_posted_again(self, harness: Harness) -> None:
        run = await harness.start_run(DEMO_TASK)
        write, sql = await harness.requests(run, count=2)
        client = harness.client
        assert sql.channel_id is not None and sql.message_ts is not None
        await client.chat_delete(channel=sql.channel_id, ts=sql.message_ts)
        await harness.click(write, "approve")

        sql = await harness.reposted(sql)
        await harness.reject(sql, REASON)
        assert (await harness.finished(run)).state == RunState.DONE


class TestDeliveries:
    async def test_a_retried_event_starts_one_run(self, harness: Harness) -> None:
        body = mention_body("Ev0001")
        first = await harness.sandbox.post_signed(body, content_type=JSON)
        retry = await harness.sandbox.post_signed(
            body,
            content_type=JSON,
            headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"},
        )
        assert first[0] == retry[0] == 200
        # Both answered: a listener asks for its run before its delivery is answered.
        assert harness.web_store.runs_asked == 1

        async def runs() -> list[str] | None:
            return [r["task"] for r in await harness.store.db.fetch_all(RUN_TASKS)]

        assert await harness.wait_for(runs) == [DEMO_TASK]

    async def test_an_unsigned_ssl_check_reaches_no_listener(self, harness: Harness) -> None:
        command = command_fields(
            command="/agent", text=DEMO_TASK, user_id=REQUESTER, channel_id=CHANNEL
        )
        body = form_body(command | {"ssl_check": "1"})
        answer = await harness.sandbox.post_signed(body, signature="v0=" + "0" * 64)
        assert answer == (200, "")  # not the command's ack ("Starting a run for: ...")
        # Answered: a listener asks for its run before its delivery is answered.
        assert harness.web_store.runs_asked == 0
        assert await harness.store.db.fetch_all(RUN_TASKS) == []

    @pytest.mark.parametrize(
        "body",
        [
            form_body({"payload": "{not"}),
            form_body({"payload": "[]"}),
            form_body({"payload": "null"}),
            form_body({"payload": '"just text"'}),
            payload_body(changed(only(sample_click(), "type"), actions=[])),
            payload_body(changed(sample_click(), actions=[])),
            payload_body(changed(sample_click(), actions=[{}])),
            payload_body(changed(sample_click(), actions=["approval:approve"])),
            payload_body(changed(sample_click(), actions={"action_id": "approval:approve"})),
            payload_body(changed(sample_click(), actions=[{"action_id": 7, "value": "r.1"}])),
            payload_body(changed(only(sample_submission(), "type"), view={})),
            payload_body(changed(sample_submission(), view={})),
        ],
    )
    async def test_malformed_signed_bodies_are_answered_without_a_crash(
        self, harness: Harness, body: bytes
    ) -> None:
        status, _ = await harness.sandbox.post_signed(body)
        assert status in (200, 400, 404)
        unsigned, _ = await harness.sandbox.post_signed(body, signature="v0=bad")
        assert unsigned == 401
        junk, _ = await harness.sandbox.post_signed(b"\xff\xfe\x00junk", signature="v0=bad")
        assert junk == 401

    async def test_a_body_changed_after_signing_is_refused(self, harness: Harness) -> None:
        run = await harness.start_run(DEMO_TASK)
        write, _ = await harness.requests(run, count=2)
        click = card_click(
            harness.sandbox, write, ids.decision_action_id("approve"), user_id=REVIEWER
        )
        body = payload_body(click)
        stamp = str(int(time.time()))
        signature = SignatureVerifier(harness.web_settings.slack_signing_secret).generate_signature(
            timestamp=stamp, body=body
        )
        tampered = body.replace(REVIEWER.encode(), b"U0MALLORY")
        status, _ = await harness.sandbox.post_signed(
            tampered, timestamp=int(stamp), signature=signature
        )
        assert status == 401
        stored = await harness.store.get_request(write.request_id)
        assert stored is not None and stored.state == ApprovalState.PENDING


async def mentioned_run(harness: Harness, event_id: str) -> Run:
    """Start the documentation scenario with an ``@agent`` mention; return its run."""
    status, _ = await harness.sandbox.post_signed(mention_body(event_id), content_type=JSON)
    assert status == 200

    async def queued() -> str | None:
        rows = await harness.store.db.fetch_all("SELECT run_id FROM runs")
        return rows[0]["run_id"] if rows else None

    return await harness.store.get_run(await harness.wait_for(queued))


def mention_body(event_id: str) -> bytes:
    """An Events API ``app_mention`` delivery asking for the documentation scenario."""
    return json_body(
        mention_payload(event_id=event_id, task=DEMO_TASK, user_id=REQUESTER, channel_id=CHANNEL)
    )


def set_connections(name: str, *, allowed: bool) -> None:
    """Open or close database ``name`` to new connections (closing, also end current ones)."""
    with psycopg.connect(services.admin_url(), autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS {str(allowed).lower()}')
    if not allowed:
        terminate_connections(name)


@asynccontextmanager
async def rows_locked(url: str, request_ids: list[str], strength: str) -> AsyncIterator[None]:
    """Hold a row lock of ``strength`` (``FOR UPDATE``, ``FOR NO KEY UPDATE``) on the
    requests' rows from another connection until the block ends."""
    async with await psycopg.AsyncConnection.connect(url) as conn, conn.transaction():
        locked = await conn.execute(
            f"SELECT request_id FROM approval_requests WHERE request_id = ANY(%s) {strength}",
            (request_ids,),
        )
        assert len(await locked.fetchall()) == len(request_ids)
        yield


WAITING_ON_LOCK = """SELECT count(*) AS waiting FROM pg_stat_activity
    WHERE datname = %(db)s AND wait_event_type = 'Lock' AND query ILIKE %(query)s"""


async def waiting_on_lock(url: str, query_start: str) -> bool:
    """Whether a session of ``url``'s database waits on a lock in a statement beginning
    with ``query_start``."""
    db = conninfo_to_dict(url)["dbname"]
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute(WAITING_ON_LOCK, {"db": db, "query": f"{query_start}%"})
        row = await cur.fetchone()
        return bool(row and row[0])


@asynccontextmanager
async def table_locked(url: str, table: str) -> AsyncIterator[None]:
    """Hold ``table`` locked against every other connection's reads and writes
    (``ACCESS EXCLUSIVE``) until the block ends."""
    async with await psycopg.AsyncConnection.connect(url) as conn, conn.transaction():
        await conn.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        yield


async def _lock_waiters(name: str) -> list[int] | None:
    """The backends of database ``name`` waiting on a lock, if any."""
    with psycopg.connect(services.admin_url(), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'",
            (name,),
        ).fetchall()
    return [row[0] for row in rows] or None


def terminate_backends(pids: list[int]) -> None:
    """End these backends' connections, each in the middle of what it runs."""
    with psycopg.connect(services.admin_url(), autocommit=True) as conn:
        for pid in pids:
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))


def terminate_connections(name: str) -> None:
    """End every connection to database ``name`` (as a restart or an idle timeout would)."""
    with psycopg.connect(services.admin_url(), autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        )


async def _slack_thread_started(harness: Harness, run: Any) -> bool:
    return (await harness.store.get_run(run.run_id)).thread_ts is not None


async def _answers(store: ApprovalStore) -> bool:
    """Whether ``store``'s pool has a working connection again (it reconnects by itself)."""
    try:
        await store.db.fetch_one("SELECT 1 AS one")
    except StoreUnavailableError:
        return False
    return True


async def test_one_worker_takes_each_untold_failure_s_turn(pg_backend: Any) -> None:
    """Every worker of the agent keeps time: a failed run has no lease to say whose its
    untold note is, so one compare-and-set gives the turn to one, and the next turn comes
    a grace later (a note Slack keeps refusing is not asked for every pass)."""
    store = ApprovalStore(pg_backend.db, clock=lambda: 1000.0)
    await store.create_run(
        Run(run_id="r1", thread_id="t1", task="t", channel_id="C1", user_id="U1")
    )
    await store.intend_notice("r1", "failed")
    assert await store.claim_run("r1", owner="w", lease_s=3.0, from_state=RunState.QUEUED)
    await store.release_run("r1", owner="w", state=RunState.FAILED)
    [(failed, meant_at)] = await store.untold_failures(
        DEFAULT_AGENT, key="failed", meant_before=2000.0, limit=10
    )
    assert failed.state == RunState.FAILED
    later = ApprovalStore(pg_backend.db, clock=lambda: 1040.0)
    takes = await asyncio.gather(
        *(later.take_untold("r1", "failed", meant_at=meant_at) for _ in range(3))
    )
    assert sorted(takes) == [False, False, True]
    # its next turn (should this post fail too) is a grace after the one taken
    assert (
        await later.untold_failures(DEFAULT_AGENT, key="failed", meant_before=1030.0, limit=10)
        == []
    )

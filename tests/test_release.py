"""``agent-bridge release`` as real processes: several at once, one killed half-way.

Each test gets an empty PostgreSQL database of its own (no template: the release is
what is tested). A migration is one transaction with its version row, and every
release holds the database's release lock (``agent_bridge.release_lock``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psycopg
import pytest
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg.conninfo import conninfo_to_dict

from agent_bridge import migrations
from agent_bridge.backend import open_backend
from agent_bridge.db import Database
from agent_bridge.errors import BridgeError
from agent_bridge.migrations import BACKFILL_REQUEST_TEAMS, CREATE_VERSION_TABLE, LATEST_VERSION
from agent_bridge.release_lock import RELEASE_LOCK_KEY, ReleaseBusyError, release_lock
from agent_bridge.store import ApprovalStore
from tests import services
from tests.harness import Harness
from tests.test_store import make_run

REPO = Path(__file__).resolve().parent.parent
EXIT_TIMEOUT_S = 60.0
RELEASES = 3
OTHER_SESSIONS = """SELECT count(*) AS sessions FROM pg_stat_activity
    WHERE datname = %(db)s AND pid <> pg_backend_pid()"""
VALID_INDEX = """SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    WHERE c.relname = 'checkpoints_thread_id_idx' AND i.indisvalid
    AND current_database() = %(db)s"""
WAITING_INSERT = """SELECT count(*) AS waiting FROM pg_stat_activity
    WHERE datname = %(db)s AND wait_event_type = 'Lock'
    AND query ILIKE 'INSERT INTO bridge_schema_version%%'"""


@pytest.fixture
def empty_url(template_db: str) -> Iterator[str]:
    """URL of an empty PostgreSQL database (never migrated) for this test only."""
    name = services.unique_name("agent_bridge_release")
    yield services.recreate_database(name)
    services.drop_database(name)


async def start_release(url: str, log: Path) -> asyncio.subprocess.Process:
    """Start ``python -m bot.cli release`` on ``url``, its output appended to ``log``."""
    with log.open("ab") as out:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli",
            "release",
            cwd=REPO,
            env={**os.environ, "DATABASE_URL": url},
            stdout=out,
            stderr=out,
        )


async def versions(url: str) -> list[int]:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute("SELECT version FROM bridge_schema_version ORDER BY version")
        return [row[0] for row in await cur.fetchall()]


async def count(url: str, sql: str) -> int:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute(sql, {"db": conninfo_to_dict(url)["dbname"]})
        row = await cur.fetchone()
        return int(row[0]) if row else 0


async def test_three_releases_started_together_on_an_empty_database_all_succeed(
    empty_url: str, tmp_path: Path
) -> None:
    logs = [tmp_path / f"release-{i}.log" for i in range(RELEASES)]
    processes = [await start_release(empty_url, log) for log in logs]
    codes = await asyncio.wait_for(asyncio.gather(*(p.wait() for p in processes)), EXIT_TIMEOUT_S)
    assert codes == [0] * RELEASES, "\n".join(log.read_text() for log in logs)
    for log in logs:
        assert f"schema version {LATEST_VERSION}" in log.read_text()
    assert await versions(empty_url) == list(range(1, LATEST_VERSION + 1))  # each once
    checkpoints = await count(empty_url, "SELECT count(*) FROM checkpoint_migrations")
    assert checkpoints == len(AsyncPostgresSaver.MIGRATIONS)
    backend = await open_backend(empty_url)
    try:
        await migrations.check_version(backend.db)
    finally:
        await backend.close()


async def test_a_release_killed_between_a_migration_and_its_version_row_is_run_again(
    empty_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "release.log"
    # The version row's INSERT is held: another session locks the version table
    # against writes (reads still pass), so the release stops right there.
    async with await psycopg.AsyncConnection.connect(empty_url) as holder:
        await holder.execute(CREATE_VERSION_TABLE)
        await holder.commit()
        await holder.execute("LOCK TABLE bridge_schema_version IN EXCLUSIVE MODE")
        release = await start_release(empty_url, log)
        await Harness.wait_for(lambda: _waiting(empty_url), timeout_s=EXIT_TIMEOUT_S)
        release.send_signal(signal.SIGKILL)
        assert await asyncio.wait_for(release.wait(), EXIT_TIMEOUT_S) == -signal.SIGKILL
        await holder.rollback()  # the held INSERT runs, finds its client gone, rolls back
    await Harness.wait_for(lambda: _alone(empty_url), timeout_s=EXIT_TIMEOUT_S)
    assert await versions(empty_url) == []
    assert await count(empty_url, "SELECT count(*) FROM pg_tables WHERE tablename = 'runs'") == 0

    again = await start_release(empty_url, log)
    assert await asyncio.wait_for(again.wait(), EXIT_TIMEOUT_S) == 0, log.read_text()
    assert await versions(empty_url) == list(range(1, LATEST_VERSION + 1))


async def _waiting(url: str) -> bool:
    return await count(url, WAITING_INSERT) > 0


async def _alone(url: str) -> bool:
    return await count(url, OTHER_SESSIONS) == 0


@pytest.fixture(params=["postgres", "sqlite"])
async def any_db(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Database]:
    url = (
        request.getfixturevalue("empty_url")
        if request.param == "postgres"
        else f"sqlite:///{tmp_path / 'store.db'}"
    )
    backend = await open_backend(url)
    yield backend.db
    await backend.close()


async def test_a_failing_migration_leaves_nothing_of_itself(any_db: Database) -> None:
    good = ("CREATE TABLE first_table (x INTEGER)",)
    bad = ("CREATE TABLE second_table (x INTEGER)", "NOT A STATEMENT")
    with pytest.raises(BridgeError):  # PostgreSQL: refused; SQLite: its OperationalError
        await migrations.setup(any_db, (good, bad))
    assert await migrations.current_version(any_db) == 1
    await any_db.execute("SELECT x FROM first_table")
    await any_db.execute("CREATE TABLE second_table (y INTEGER)")  # it was never made
    await any_db.execute("DROP TABLE second_table")
    fixed = ("CREATE TABLE second_table (x INTEGER)", "SELECT 1")
    assert await migrations.setup(any_db, (good, fixed)) == 2
    assert await migrations.setup(any_db, (good, fixed)) == 2  # twice: a no-op
    await any_db.execute("SELECT x FROM second_table")


async def test_a_release_waits_for_the_one_holding_the_lock(empty_url: str) -> None:
    async with await psycopg.AsyncConnection.connect(empty_url, autocommit=True) as other:
        await other.execute("SELECT pg_advisory_lock(%s)", (RELEASE_LOCK_KEY,))
        backend = await open_backend(empty_url)
        try:
            with pytest.raises(ReleaseBusyError, match="let it finish"):
                async with release_lock(backend.db, wait_s=0.5):
                    raise AssertionError("the lock was held by another session")
            await other.execute("SELECT pg_advisory_unlock(%s)", (RELEASE_LOCK_KEY,))
            async with release_lock(backend.db, wait_s=0.5):
                pass
        finally:
            await backend.close()


async def test_an_index_an_interrupted_setup_left_invalid_is_built_again(pg_url: str) -> None:
    # As a release killed inside the checkpointer's CREATE INDEX CONCURRENTLY leaves it:
    # the index exists but is invalid, and its migration's version row was never written.
    first_index = next(
        v
        for v, sql in enumerate(AsyncPostgresSaver.MIGRATIONS)
        if "checkpoints_thread_id_idx" in sql
    )
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute("DROP INDEX checkpoints_thread_id_idx")
        await conn.execute("DELETE FROM checkpoint_migrations WHERE v >= %s", (first_index,))
        for checkpoint_id in ("a", "b"):  # a unique build over duplicates fails half-way
            await conn.execute(
                "INSERT INTO checkpoints (thread_id, checkpoint_id, checkpoint) "
                "VALUES ('t', %s, '{}')",
                (checkpoint_id,),
            )
        with pytest.raises(psycopg.errors.UniqueViolation):
            await conn.execute(
                "CREATE UNIQUE INDEX CONCURRENTLY checkpoints_thread_id_idx "
                "ON checkpoints (thread_id)"
            )
    assert await count(pg_url, VALID_INDEX) == 0  # left invalid
    backend = await open_backend(pg_url)
    try:
        assert await backend.release() == LATEST_VERSION
    finally:
        await backend.close()
    assert await count(pg_url, VALID_INDEX) == 1
    assert await count(pg_url, "SELECT count(*) FROM checkpoint_migrations") == len(
        AsyncPostgresSaver.MIGRATIONS
    )


LEGACY_REQUEST = """INSERT INTO approval_requests (request_id, run_id, thread_id,
    interrupt_id, idx, mode, batch_size, tool_name, args, description, allowed_decisions,
    args_schema, state, created_at)
    VALUES (:id, :run_id, 'thread', :id, 0, 'batched', 1, 'write_file', '{}', '',
    '["approve"]', '{}', 'pending', 0)"""
"""A request as the schema before ``BACKFILL_REQUEST_TEAMS`` stored it (written in that
schema's columns: the store's own statements write today's)."""


async def test_requests_from_before_their_workspace_was_kept_take_their_runs(
    any_db: Database,
) -> None:
    """Requests stored before ``approval_requests.team_id`` existed are given their run's
    workspace by the migration after it; one whose run has none keeps none (and is
    refused: ``bot.authorization``)."""
    before = migrations.MIGRATIONS.index((BACKFILL_REQUEST_TEAMS,))
    assert await migrations.setup(any_db, migrations.MIGRATIONS[:before]) == before
    store = ApprovalStore(any_db)
    legacy_runs = {"run-1": "T1", "run-2": None}
    for run_id, team_id in legacy_runs.items():
        run = make_run(run_id).model_copy(update={"team_id": team_id})
        await store.create_run(run)
        await any_db.execute(LEGACY_REQUEST, {"id": f"r-{run_id}", "run_id": run_id})
    assert await migrations.setup(any_db) == LATEST_VERSION
    teams = {
        r["request_id"]: r["team_id"]
        for r in await any_db.fetch_all("SELECT request_id, team_id FROM approval_requests")
    }
    assert teams == {"r-run-1": "T1", "r-run-2": None}

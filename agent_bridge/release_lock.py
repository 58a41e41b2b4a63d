"""One ``release`` at a time per database: a PostgreSQL session advisory lock.

Several ``release`` processes may start together (a deploy on many machines, a
platform that retries its release phase). Each holds ``RELEASE_LOCK_KEY`` for the
whole step (LangGraph's checkpointer ``setup()`` and the store's migrations), so they
run one after the other and the later ones find nothing to do. The lock is a session
lock on one connection of its own: PostgreSQL frees it when that session ends, so a
release killed half-way never leaves it held
(https://www.postgresql.org/docs/current/explicit-locking.html#ADVISORY-LOCKS).

A waiting release asks with ``pg_try_advisory_lock`` every ``LOCK_POLL_S`` rather than
blocking in ``pg_advisory_lock``: a session blocked in a statement holds a snapshot, and
the checkpointer's ``CREATE INDEX CONCURRENTLY`` in the release that holds the lock
waits for every older snapshot to end, which would be a deadlock.

SQLite (the embedded demo: one process, one file) needs no lock; each migration is
its own ``BEGIN IMMEDIATE`` transaction (``agent_bridge.migrations``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg

from agent_bridge.db import Database
from agent_bridge.errors import StoreUnavailableError
from agent_bridge.postgres_db import PostgresDatabase

logger = logging.getLogger(__name__)

RELEASE_LOCK_KEY = 0x6167_656E_7462_7267
"""The advisory lock's key (a bigint: ``agentbrg`` in ASCII), one per database."""
TRY_LOCK = "SELECT pg_try_advisory_lock(%(key)s) AS locked"
UNLOCK = "SELECT pg_advisory_unlock(%(key)s) AS unlocked"
LOCK_POLL_S = 0.2
"""How often a waiting release asks for the lock again, seconds."""
LOCK_WAIT_S = 600.0
"""How long a release waits for another to finish before giving up, seconds."""


class ReleaseBusyError(StoreUnavailableError):
    """Another ``release`` held the database's release lock for ``LOCK_WAIT_S``.

    Find the process still running ``agent-bridge release`` against this database (or a
    session holding the advisory lock in ``pg_locks``), let it finish, and run again.
    """


@asynccontextmanager
async def release_lock(db: Database, *, wait_s: float = LOCK_WAIT_S) -> AsyncIterator[None]:
    """Hold the database's release lock while the block runs.

    Args:
        db: The process's database (PostgreSQL: a connection of its pool is kept for
            the block; SQLite: nothing is locked).
        wait_s: How long to wait for another release, seconds.

    Raises:
        ReleaseBusyError: Another release held the lock for ``wait_s``.
        StoreUnavailableError: PostgreSQL could not be reached.
    """
    if not isinstance(db, PostgresDatabase):
        yield
        return
    try:
        async with db.pool.connection() as conn:
            await _acquire(conn, wait_s)
            try:
                yield
            finally:
                if not conn.closed:
                    await conn.execute(UNLOCK, {"key": RELEASE_LOCK_KEY})
    except psycopg.OperationalError as exc:
        raise StoreUnavailableError(f"PostgreSQL is unavailable: {exc}") from exc


async def _acquire(conn: Any, wait_s: float) -> None:
    """Take the lock on ``conn``'s session, asking every ``LOCK_POLL_S``."""
    give_up = time.monotonic() + wait_s
    told = False
    while True:
        row = await (await conn.execute(TRY_LOCK, {"key": RELEASE_LOCK_KEY})).fetchone()
        if row and row["locked"]:
            if told:
                logger.info("the other release has finished; this one goes on")
            return
        if time.monotonic() >= give_up:
            raise ReleaseBusyError(
                f"another `agent-bridge release` held the release lock for {wait_s:.0f} s; "
                "let it finish, then run again"
            )
        if not told:
            logger.info("another release is running on this database; waiting for it")
            told = True
        await asyncio.sleep(LOCK_POLL_S)

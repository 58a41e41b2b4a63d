"""Repairing what an interrupted checkpointer ``setup()`` can leave behind.

LangGraph's ``AsyncPostgresSaver.setup()`` builds its ``thread_id`` indexes with
``CREATE INDEX CONCURRENTLY IF NOT EXISTS``, which cannot run in a transaction. A
release killed while one is being built leaves the index *invalid*: PostgreSQL keeps it
(and keeps updating it) but never uses it, and the next ``setup()``'s ``IF NOT EXISTS``
sees the name and skips it, so the rerun "succeeds" with the index missing for good
(https://www.postgresql.org/docs/current/sql-createindex.html#SQL-CREATEINDEX-CONCURRENTLY).
``drop_invalid`` drops such indexes of the checkpoint tables before ``setup()``, which
then builds them again (their migration's version row was never written).
"""

from __future__ import annotations

import logging

from agent_bridge.db import Database

logger = logging.getLogger(__name__)

CHECKPOINT_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
INVALID = """SELECT c.relname AS name FROM pg_index i
    JOIN pg_class c ON c.oid = i.indexrelid
    JOIN pg_class t ON t.oid = i.indrelid
    WHERE NOT i.indisvalid AND t.relnamespace = current_schema()::regnamespace
    AND t.relname IN ('checkpoints', 'checkpoint_blobs', 'checkpoint_writes')"""
DROP_INVALID = """DO $$ DECLARE r record; BEGIN
    FOR r IN SELECT c.relname FROM pg_index i
        JOIN pg_class c ON c.oid = i.indexrelid
        JOIN pg_class t ON t.oid = i.indrelid
        WHERE NOT i.indisvalid AND t.relnamespace = current_schema()::regnamespace
        AND t.relname IN ('checkpoints', 'checkpoint_blobs', 'checkpoint_writes')
    LOOP EXECUTE format('DROP INDEX %I', r.relname); END LOOP;
    END $$"""


async def drop_invalid(db: Database) -> list[str]:
    """Drop the invalid indexes of LangGraph's checkpoint tables (PostgreSQL only; run
    under the release lock, before the checkpointer's ``setup()``).

    Returns:
        The names of the indexes dropped (each also logged).

    Raises:
        StoreUnavailableError: The database failed.
    """
    if db.dialect != "postgres":
        return []
    names = sorted(row["name"] for row in await db.fetch_all(INVALID))
    if names:
        await db.execute(DROP_INVALID)
        for name in names:
            logger.warning("index %s was left invalid by an interrupted release; rebuilt", name)
    return names

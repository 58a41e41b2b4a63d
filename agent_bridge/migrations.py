"""The approval store's schema: an ordered list of migrations, index = version.

Run by ``setup()`` from the ``release`` step (as LangGraph's ``AsyncPostgresSaver.setup()``
is). Applying twice is a no-op. Each process calls ``check_version`` at start and is told
to run ``agent-bridge release`` if the database is behind. DDL is the portable subset
PostgreSQL and SQLite share.
"""

from __future__ import annotations

from agent_bridge.db import Database
from agent_bridge.errors import SchemaOutdatedError

CREATE_VERSION_TABLE = "CREATE TABLE IF NOT EXISTS bridge_schema_version (version INTEGER NOT NULL)"
SELECT_VERSION = "SELECT MAX(version) AS version FROM bridge_schema_version"
INSERT_VERSION = "INSERT INTO bridge_schema_version (version) VALUES (:version)"

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            thread_id TEXT NOT NULL UNIQUE,
            task TEXT NOT NULL,
            channel_id TEXT NOT NULL,
            user_id TEXT NOT NULL,
            team_id TEXT,
            thread_ts TEXT,
            state TEXT NOT NULL,
            final_answer TEXT,
            error TEXT,
            lease_owner TEXT,
            lease_until DOUBLE PRECISION,
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL
        )""",
        "CREATE INDEX runs_state ON runs (state)",
        """CREATE TABLE approval_requests (
            request_id TEXT PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES runs (run_id),
            thread_id TEXT NOT NULL,
            interrupt_id TEXT NOT NULL,
            idx INTEGER NOT NULL,
            mode TEXT NOT NULL,
            batch_size INTEGER NOT NULL,
            tool_call_id TEXT,
            tool_name TEXT NOT NULL,
            args TEXT NOT NULL,
            description TEXT NOT NULL,
            allowed_decisions TEXT NOT NULL,
            args_schema TEXT NOT NULL,
            state TEXT NOT NULL,
            decision TEXT,
            decided_by TEXT,
            decided_at DOUBLE PRECISION,
            channel_id TEXT,
            message_ts TEXT,
            thread_ts TEXT,
            created_at DOUBLE PRECISION NOT NULL,
            applied_at DOUBLE PRECISION,
            UNIQUE (interrupt_id, idx)
        )""",
        "CREATE INDEX approval_requests_state ON approval_requests (state)",
        "CREATE INDEX approval_requests_run ON approval_requests (run_id)",
    ),
    (
        """CREATE TABLE run_notices (
            run_id TEXT NOT NULL REFERENCES runs (run_id),
            notice_key TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (run_id, notice_key)
        )""",
        "ALTER TABLE approval_requests ADD COLUMN note TEXT",
    ),
    (
        "ALTER TABLE approval_requests ADD COLUMN expires_at DOUBLE PRECISION",
        "ALTER TABLE approval_requests ADD COLUMN timeout_decision TEXT",
        "ALTER TABLE approval_requests ADD COLUMN reminded_at DOUBLE PRECISION",
        """CREATE INDEX approval_requests_expiry ON approval_requests (expires_at)
            WHERE state = 'pending'""",
    ),
    (
        "ALTER TABLE runs ADD COLUMN agent TEXT NOT NULL DEFAULT 'default'",
        "ALTER TABLE approval_requests ADD COLUMN review_timeout_s DOUBLE PRECISION",
        "CREATE INDEX runs_agent_state ON runs (agent, state)",
    ),
    (
        # issue 9: every message an intention with its Slack ts; cards drawn in order
        "ALTER TABLE run_notices ADD COLUMN message_ts TEXT",
        "ALTER TABLE approval_requests ADD COLUMN version INTEGER NOT NULL DEFAULT 1",
        "ALTER TABLE approval_requests ADD COLUMN drawn_version INTEGER NOT NULL DEFAULT 1",
        "ALTER TABLE approval_requests ADD COLUMN changed_at DOUBLE PRECISION",
        """CREATE INDEX approval_requests_undrawn ON approval_requests (changed_at)
            WHERE drawn_version < version""",
    ),
)
"""Migration ``i`` brings the schema to version ``i + 1``."""

LATEST_VERSION = len(MIGRATIONS)


async def current_version(db: Database) -> int:
    """Return the schema version of ``db`` (0 for an empty database)."""
    await db.execute(CREATE_VERSION_TABLE)
    row = await db.fetch_one(SELECT_VERSION)
    return int(row["version"]) if row and row["version"] is not None else 0


async def setup(db: Database) -> int:
    """Apply every migration ``db`` lacks; return the resulting version.

    Each migration's statements run one by one, then its version is recorded; two
    ``release`` steps started together may race, so run one at a time.
    """
    version = await current_version(db)
    for number, statements in enumerate(MIGRATIONS[version:], start=version + 1):
        for statement in statements:
            await db.execute(statement)
        await db.execute(INSERT_VERSION, {"version": number})
    return max(version, LATEST_VERSION)


async def check_version(db: Database) -> None:
    """Refuse to run against a database this code cannot use.

    Raises:
        SchemaOutdatedError: If migrations are missing; run ``agent-bridge release``.
        StoreUnavailableError: If the database cannot be reached.
    """
    version = await current_version(db)
    if version < LATEST_VERSION:
        raise SchemaOutdatedError(
            f"The approval store is at schema version {version}, this code needs "
            f"{LATEST_VERSION}. Run `agent-bridge release` first."
        )

"""The approval store's schema: an ordered list of migrations, index = version.

Run by ``setup()`` from the ``release`` step (as LangGraph's ``AsyncPostgresSaver.setup()``
is), one release at a time (``agent_bridge.release_lock``). Each migration is one
transaction with its version row. Applying twice is a no-op. Each process calls
``check_version`` at start and is told to run ``agent-bridge release`` if the database
is behind. DDL is the portable subset PostgreSQL and SQLite share, except the triggers
that keep ``audit_events`` append-only (one text per dialect).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agent_bridge.db import Database, Dialect
from agent_bridge.errors import SchemaOutdatedError

CREATE_VERSION_TABLE = "CREATE TABLE IF NOT EXISTS bridge_schema_version (version INTEGER NOT NULL)"
SELECT_VERSION = "SELECT MAX(version) AS version FROM bridge_schema_version"
INSERT_VERSION = "INSERT INTO bridge_schema_version (version) VALUES (:version)"

AUDIT_COLUMNS = """event_id TEXT NOT NULL UNIQUE,
            at DOUBLE PRECISION NOT NULL,
            kind TEXT NOT NULL,
            run_id TEXT NOT NULL,
            thread_id TEXT NOT NULL,
            request_id TEXT,
            interrupt_id TEXT,
            tool_call_id TEXT,
            tool_name TEXT,
            call_hash TEXT,
            proposed_args TEXT,
            edited_args TEXT,
            decision TEXT,
            reason TEXT,
            user_id TEXT,
            team_id TEXT,
            requester_id TEXT,
            requested_at DOUBLE PRECISION,
            detail TEXT
        )"""
"""``audit_events``' columns after ``seq``, whose type differs by dialect."""

BACKFILL_REQUEST_TEAMS = """UPDATE approval_requests SET team_id = (SELECT runs.team_id
    FROM runs WHERE runs.run_id = approval_requests.run_id) WHERE team_id IS NULL"""
"""Legacy requests (stored before ``approval_requests.team_id``) take their run's workspace."""

Statement = str | Mapping[Dialect, str]
"""One DDL statement: portable text, or one text per dialect (triggers)."""

MIGRATIONS: tuple[tuple[Statement, ...], ...] = (
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
        # Who decides (issue "Only the right people decide"): rules copied from the
        # policy, the call's hash, quorum state and escalation.
        "ALTER TABLE approval_requests ADD COLUMN requester_id TEXT",
        "ALTER TABLE approval_requests ADD COLUMN team_id TEXT",
        "ALTER TABLE approval_requests ADD COLUMN rules TEXT",
        "ALTER TABLE approval_requests ADD COLUMN call_hash TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE approval_requests ADD COLUMN version TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE approval_requests ADD COLUMN pending_edit TEXT",
        "ALTER TABLE approval_requests ADD COLUMN approved_by TEXT NOT NULL DEFAULT '[]'",
        "ALTER TABLE approval_requests ADD COLUMN revision INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE approval_requests ADD COLUMN escalate_after_s DOUBLE PRECISION",
        "ALTER TABLE approval_requests ADD COLUMN escalates_at DOUBLE PRECISION",
        "ALTER TABLE approval_requests ADD COLUMN escalated_at DOUBLE PRECISION",
        "ALTER TABLE approval_requests ADD COLUMN pointer_ts TEXT",
        "ALTER TABLE approval_requests ADD COLUMN card_link TEXT",
        """CREATE INDEX approval_requests_escalation ON approval_requests (escalates_at)
            WHERE state = 'pending' AND escalated_at IS NULL""",
        "CREATE INDEX runs_user_state ON runs (user_id, state)",
        """CREATE TABLE opened_views (
            view_key TEXT PRIMARY KEY,
            request_id TEXT NOT NULL REFERENCES approval_requests (request_id),
            user_id TEXT NOT NULL,
            team_id TEXT,
            decision_type TEXT NOT NULL,
            version TEXT NOT NULL,
            view_id TEXT,
            created_at DOUBLE PRECISION NOT NULL
        )""",
        """CREATE TABLE agent_policies (
            agent TEXT PRIMARY KEY,
            requesters TEXT,
            max_active_runs_per_user INTEGER NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL
        )""",
        {  # seq: the order events were written in (times can tie)
            "postgres": "CREATE TABLE audit_events (seq BIGINT GENERATED ALWAYS AS IDENTITY "
            f"PRIMARY KEY, {AUDIT_COLUMNS}",
            "sqlite": f"CREATE TABLE audit_events (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
            f"{AUDIT_COLUMNS}",
        },
        "CREATE INDEX audit_events_at ON audit_events (at)",
        {
            "postgres": """CREATE FUNCTION audit_events_append_only() RETURNS trigger
                LANGUAGE plpgsql AS $$ BEGIN
                RAISE EXCEPTION 'audit_events is append-only';
                END $$""",
            "sqlite": "SELECT 1",
        },
        {
            "postgres": """CREATE TRIGGER audit_events_append_only
                BEFORE UPDATE OR DELETE ON audit_events
                FOR EACH ROW EXECUTE FUNCTION audit_events_append_only()""",
            "sqlite": """CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
                BEGIN SELECT RAISE(ABORT, 'audit_events is append-only'); END""",
        },
        {
            "postgres": """CREATE TRIGGER audit_events_no_truncate
                BEFORE TRUNCATE ON audit_events
                FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only()""",
            "sqlite": """CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events
                BEGIN SELECT RAISE(ABORT, 'audit_events is append-only'); END""",
        },
    ),
    (
        # issue 9: every message an intention with its Slack ts; cards drawn in order
        # (a card shows its request at ``revision``; ``drawn_revision`` is what it shows)
        "ALTER TABLE run_notices ADD COLUMN message_ts TEXT",
        "ALTER TABLE approval_requests ADD COLUMN drawn_revision INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE approval_requests ADD COLUMN changed_at DOUBLE PRECISION",
        """CREATE INDEX approval_requests_undrawn ON approval_requests (changed_at)
            WHERE drawn_revision < revision""",
    ),
    (
        # issue 10: the card's context (who asked, the run's Slack thread, the model's
        # reason), the call's result once it has run, and the SQL risk of a call
        # (``ApprovalRequest.risk``, JSON like ``rules``)
        "ALTER TABLE runs ADD COLUMN requester_name TEXT",
        "ALTER TABLE runs ADD COLUMN thread_link TEXT",
        "ALTER TABLE approval_requests ADD COLUMN reason TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE approval_requests ADD COLUMN result TEXT",
        "ALTER TABLE approval_requests ADD COLUMN risk TEXT",
        # the policy's redact rules stored with each request, so the web process masks
        # secrets without the policy file (NULL: the defaults)
        "ALTER TABLE approval_requests ADD COLUMN redact TEXT",
    ),
    (
        # issue 11: the sweep reads only requests with work (a decision to apply, a card
        # to post) and only reminders that are due, however many runs are paused
        """CREATE INDEX approval_requests_work ON approval_requests (run_id)
            WHERE state = 'decided' OR (state = 'pending' AND message_ts IS NULL)""",
        """CREATE INDEX approval_requests_reminder
            ON approval_requests ((expires_at - review_timeout_s / 2))
            WHERE state = 'pending' AND expires_at IS NOT NULL AND reminded_at IS NULL""",
    ),
    (
        # issue 12: finished runs' checkpoints are deleted after a retention period
        # (agent_bridge/pruning.py); the runs still to prune, oldest first, by index
        "ALTER TABLE runs ADD COLUMN checkpoint_pruned_at DOUBLE PRECISION",
        """CREATE INDEX runs_checkpoints_to_prune ON runs (updated_at)
            WHERE state IN ('done', 'failed') AND checkpoint_pruned_at IS NULL""",
    ),
    (
        # issue 12: the app installed in many workspaces (OAuth): each workspace's bot
        # token, and the OAuth flow's one-time states (bot.installations)
        """CREATE TABLE slack_installations (
            team_id TEXT PRIMARY KEY,
            enterprise_id TEXT,
            team_name TEXT,
            app_id TEXT,
            bot_id TEXT,
            bot_user_id TEXT NOT NULL,
            bot_token TEXT NOT NULL,
            bot_scopes TEXT NOT NULL,
            installer_id TEXT,
            installed_at DOUBLE PRECISION NOT NULL
        )""",
        """CREATE TABLE slack_oauth_states (
            state TEXT PRIMARY KEY,
            expires_at DOUBLE PRECISION NOT NULL
        )""",
        "CREATE INDEX runs_team ON runs (team_id)",
    ),
    (
        # issue 12 review: a request from before approval_requests.team_id existed takes
        # its run's workspace, so bot.authorization can require the installation's (one
        # whose run has none keeps none, and nobody may decide it)
        BACKFILL_REQUEST_TEAMS,
    ),
    (
        # issue 11: a reviewer's inbox (its workspace's newest posted pending requests)
        # and a reply in a Slack thread (the run of that thread) are read by index, so
        # neither costs more with every run paused (agent_bridge/inbox.py)
        """CREATE INDEX approval_requests_inbox
            ON approval_requests ((COALESCE(team_id, '')), created_at DESC, idx)
            WHERE state = 'pending' AND message_ts IS NOT NULL""",
        "CREATE INDEX runs_slack_thread ON runs (channel_id, thread_ts)",
    ),
    (
        # issue 11: the run's drives in a row that did not go through, kept with the run so
        # that every worker, and a restarted one, counts the same drives toward
        # worker.CHECKPOINT_RETRIES (models.Run.drives_in_a_row)
        "ALTER TABLE runs ADD COLUMN drives_in_a_row INTEGER NOT NULL DEFAULT 0",
    ),
    (
        # a review of the run's call IDs: why a batched card offers no Edit (its call's
        # tool call ID is empty, or shared in its turn: models.EditWithheld)
        "ALTER TABLE approval_requests ADD COLUMN edit_withheld TEXT",
    ),
    (
        # a chaos review: a failed run whose failure note Slack did not take is told again
        # by time keeping (store.untold_failures): the intentions not posted, by index
        """CREATE INDEX run_notices_untold_failures ON run_notices (created_at)
            WHERE notice_key = 'failed' AND message_ts IS NULL""",
    ),
)
"""Migration ``i`` brings the schema to version ``i + 1``."""

LATEST_VERSION = len(MIGRATIONS)


async def current_version(db: Database) -> int:
    """Return the schema version of ``db`` (0 for an empty database)."""
    await db.execute(CREATE_VERSION_TABLE)
    row = await db.fetch_one(SELECT_VERSION)
    return int(row["version"]) if row and row["version"] is not None else 0


async def setup(db: Database, migrations: Sequence[Sequence[Statement]] = MIGRATIONS) -> int:
    """Apply every migration ``db`` lacks; return the resulting version.

    Each migration runs in one transaction with its version row, and the version is
    read again inside it: a migration is applied whole or not at all, so a release
    interrupted anywhere (killed, the database gone) is simply run again. Run it under
    ``agent_bridge.release_lock`` (``Backend.release`` does), so two releases started
    together run one after the other.

    Args:
        db: The database.
        migrations: The ordered migrations (``MIGRATIONS``; tests pass their own).

    Raises:
        StoreUnavailableError: The database failed; nothing of that migration is kept.
        StoreRejectedError: A statement was refused; nothing of that migration is kept.
    """
    version = await current_version(db)
    for number, statements in enumerate(migrations[version:], start=version + 1):
        async with db.transaction() as tx:
            row = await tx.fetch_one(SELECT_VERSION)
            if row and row["version"] is not None and int(row["version"]) >= number:
                continue  # applied meanwhile (SQLite has no release lock)
            for statement in statements:
                await tx.execute(statement if isinstance(statement, str) else statement[db.dialect])
            await tx.execute(INSERT_VERSION, {"version": number})
    return max(version, len(migrations))


async def check_version(db: Database) -> None:
    """Refuse to run against a database this code cannot use.

    Raises:
        SchemaOutdatedError: If migrations are missing; run ``agent-bridge release``.
        StoreUnavailableError: If the database cannot be reached.
    """
    version = await current_version(db)
    if version == 0:
        raise SchemaOutdatedError(
            f"This database holds no approval store (schema version 0; this code needs "
            f"{LATEST_VERSION}). If DATABASE_URL names the right database, run "
            "`agent-bridge release` first; if not, correct DATABASE_URL (release would "
            "create the store in the database it names)."
        )
    if version < LATEST_VERSION:
        raise SchemaOutdatedError(
            f"The approval store is at schema version {version}, this code needs "
            f"{LATEST_VERSION}. Run `agent-bridge release` first."
        )

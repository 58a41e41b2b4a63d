"""The approval store's SQL, in named constants (``:name`` placeholders).

One text for PostgreSQL and SQLite; every state transition is a single statement with
its precondition in the ``WHERE`` clause (``... WHERE state = 'pending' RETURNING *``),
so concurrent callers cannot both make it. Values are always bound, never interpolated.
"""

INSERT_RUN = """INSERT INTO runs (run_id, thread_id, task, channel_id, user_id, team_id,
    thread_ts, state, created_at, updated_at, agent, requester_name)
    VALUES (:run_id, :thread_id, :task, :channel_id, :user_id, :team_id, :thread_ts, :state,
    :now, :now, :agent, :requester_name)"""
SELECT_RUN = "SELECT * FROM runs WHERE run_id = :run_id"
SELECT_RUN_OF_THREAD = "SELECT * FROM runs WHERE thread_id = :thread_id"
CLAIM_RUN = """UPDATE runs SET state = 'running', lease_owner = :owner, lease_until = :until,
    drives_in_a_row = drives_in_a_row + 1, updated_at = :now
    WHERE run_id = :run_id AND agent = :agent AND (state = :from_state
        OR (state = 'running' AND lease_until < :now))
    RETURNING *"""
_RENEW_LEASES = """UPDATE runs SET lease_until = :until
    WHERE lease_owner = :owner AND state = 'running' AND run_id IN ({ids})
    RETURNING run_id"""
RENEW_LEASES = {
    "postgres": _RENEW_LEASES.format(
        ids="SELECT jsonb_array_elements_text(CAST(:run_ids AS jsonb))"
    ),
    "sqlite": _RENEW_LEASES.format(ids="SELECT value FROM json_each(:run_ids)"),
}
"""Extend one owner's leases on the runs of a JSON array of IDs, in one statement."""
RELEASE_RUN = """UPDATE runs SET state = :state, lease_owner = NULL, lease_until = NULL,
    final_answer = COALESCE(:final_answer, final_answer), error = COALESCE(:error, error),
    drives_in_a_row = COALESCE(:drives_in_a_row, drives_in_a_row), updated_at = :now
    WHERE run_id = :run_id AND lease_owner = :owner"""
_SET_NOTICES_TS = """UPDATE run_notices SET message_ts = t.message_ts
    FROM {pairs} WHERE run_notices.run_id = :run_id AND run_notices.notice_key = t.notice_key"""
SET_NOTICES_TS = {
    "postgres": _SET_NOTICES_TS.format(
        pairs="jsonb_each_text(CAST(:notices AS jsonb)) AS t(notice_key, message_ts)"
    ),
    "sqlite": _SET_NOTICES_TS.format(
        pairs="(SELECT key AS notice_key, value AS message_ts FROM json_each(:notices)) AS t"
    ),
}
"""Where a run's messages are in Slack, from a JSON object of notice key -> ``ts``."""
RELEASE_RUN_SETTING_NOTICES_TS = f"""WITH notices AS ({SET_NOTICES_TS["postgres"]})
    {RELEASE_RUN}"""
"""``SET_NOTICES_TS`` and ``RELEASE_RUN`` in one PostgreSQL statement (a data-modifying
``WITH``, run whether or not the lease is still held: where a message is, is true
either way); its row count is the release's."""
SELECT_NEXT_LEASE_END = """SELECT MIN(lease_until) AS lease_until FROM runs
    WHERE agent = :agent AND state = 'running' AND lease_owner <> :owner"""
SET_RUN_THREAD_TS = "UPDATE runs SET thread_ts = :thread_ts WHERE run_id = :run_id"
SET_RUN_THREAD_LINK = "UPDATE runs SET thread_link = :thread_link WHERE run_id = :run_id"
SELECT_STARTABLE_RUNS = """SELECT run_id FROM runs
    WHERE agent = :agent AND (state = 'queued' OR (state = 'running' AND lease_until < :now))
    ORDER BY created_at LIMIT :limit"""
"""Reads ``runs_agent_state`` for the queued and the running runs only (never the waiting)."""
SELECT_RUNS_NEEDING_WORK = """SELECT DISTINCT a.run_id FROM approval_requests a
    JOIN runs r ON r.run_id = a.run_id
    WHERE (a.state = 'decided' OR (a.state = 'pending' AND a.message_ts IS NULL))
    AND r.agent = :agent AND r.state = 'waiting'
    AND (a.state = 'pending' OR a.mode = 'per_call' OR NOT EXISTS (
        SELECT 1 FROM approval_requests b
        WHERE b.interrupt_id = a.interrupt_id AND b.state = 'pending'))
    LIMIT :limit"""
"""Its first condition is the predicate of the partial index ``approval_requests_work``
(migration 11): the requests of a run with nothing to do (pending and posted, or
applied) are not in it, so the sweep's cost does not grow with paused runs."""

INSERT_REQUEST = """INSERT INTO approval_requests (request_id, run_id, thread_id, interrupt_id,
    idx, mode, batch_size, tool_call_id, tool_name, args, description, allowed_decisions,
    args_schema, state, channel_id, thread_ts, created_at, review_timeout_s, timeout_decision,
    requester_id, team_id, rules, call_hash, version, escalate_after_s, redact, reason, risk,
    edit_withheld)
    VALUES (:request_id, :run_id, :thread_id, :interrupt_id, :idx, :mode, :batch_size,
    :tool_call_id, :tool_name, :args, :description, :allowed_decisions, :args_schema,
    'pending', :channel_id, :thread_ts, :now, :review_timeout_s, :timeout_decision,
    :requester_id, :team_id, :rules, :call_hash, :version, :escalate_after_s, :redact, :reason,
    :risk, :edit_withheld)
    ON CONFLICT (interrupt_id, idx) DO NOTHING"""
SELECT_REQUEST = "SELECT * FROM approval_requests WHERE request_id = :request_id"
SELECT_REQUEST_BY_KEY = """SELECT * FROM approval_requests
    WHERE interrupt_id = :interrupt_id AND idx = :idx"""
SELECT_RUN_REQUESTS = (
    "SELECT * FROM approval_requests WHERE run_id = :run_id ORDER BY created_at, idx"
)
SELECT_INTERRUPT_REQUESTS = """SELECT * FROM approval_requests
    WHERE interrupt_id = :interrupt_id ORDER BY idx"""
SELECT_INTERRUPT_REVISIONS = """SELECT request_id, revision FROM approval_requests
    WHERE interrupt_id = :interrupt_id"""
SELECT_PENDING_POSTED = """SELECT * FROM approval_requests
    WHERE state = 'pending' AND message_ts IS NOT NULL ORDER BY created_at, idx LIMIT :limit"""
SELECT_LATEST_RUN = "SELECT * FROM runs ORDER BY created_at DESC LIMIT 1"
SET_MESSAGE = """UPDATE approval_requests SET channel_id = :channel_id, message_ts = :message_ts,
        expires_at = COALESCE(expires_at, :now + review_timeout_s),
        escalates_at = COALESCE(escalates_at, :now + escalate_after_s),
        revision = revision + CAST(:adopted AS INTEGER),
        changed_at = CASE WHEN CAST(:adopted AS INTEGER) = 1 THEN :now ELSE changed_at END
    WHERE request_id = :request_id
    RETURNING *"""
"""With ``adopted`` 1, the message is one a worker that died posting it drew, not a
drawing of the request as stored: ``revision`` is bumped, so the card lags (listed by
``SELECT_UNDRAWN_CARDS``) until a redraw of it lands."""
MOVE_MESSAGE = """UPDATE approval_requests SET message_ts = :message_ts
    WHERE request_id = :request_id AND message_ts = :old_ts"""
RECORD_DECISION = """UPDATE approval_requests
    SET state = 'decided', decision = :decision, decided_by = :user_id, decided_at = :now,
        note = NULL, revision = revision + 1, changed_at = :now
    WHERE request_id = :request_id AND state = 'pending'
    AND (CAST(:version AS TEXT) IS NULL OR version = :version)
    RETURNING *"""
"""With ``version`` (else NULL), only while the call is the one the person saw: an edit
proposed meanwhile (a quorum's) changed it."""
MARK_APPLIED = """UPDATE approval_requests SET state = 'applied', applied_at = :now
    WHERE request_id = :request_id AND state = 'decided'
    AND (CAST(:revision AS INTEGER) IS NULL OR revision = :revision)
    RETURNING *"""
"""With ``revision`` (else NULL), only the request as the caller read it (every change of
its decision bumps ``revision``), so its audit event can be drawn from that copy."""
REOPEN_REQUEST = """UPDATE approval_requests
    SET state = 'pending', decision = NULL, decided_by = NULL, decided_at = NULL, note = :note,
        args_schema = COALESCE(:args_schema, args_schema), approved_by = '[]',
        pending_edit = NULL, version = :version, revision = revision + 1, changed_at = :now,
        expires_at = CASE
            WHEN :reissued = 0 THEN
                CASE WHEN expires_at IS NULL THEN NULL ELSE :now + review_timeout_s END
            WHEN message_ts IS NULL OR CAST(:review_timeout_s AS DOUBLE PRECISION) IS NULL
                THEN NULL
            ELSE :now + CAST(:review_timeout_s AS DOUBLE PRECISION) END,
        review_timeout_s = CASE WHEN :reissued = 1
            THEN CAST(:review_timeout_s AS DOUBLE PRECISION) ELSE review_timeout_s END,
        timeout_decision = CASE WHEN :reissued = 1
            THEN :timeout_decision ELSE timeout_decision END,
        reminded_at = NULL,
        args = COALESCE(:args, args), call_hash = COALESCE(:call_hash, call_hash),
        tool_call_id = COALESCE(:tool_call_id, tool_call_id), risk = COALESCE(:risk, risk),
        description = COALESCE(:description, description),
        allowed_decisions = COALESCE(:allowed_decisions, allowed_decisions),
        edit_withheld = CASE WHEN :reissued = 1 THEN :edit_withheld ELSE edit_withheld END
    WHERE request_id = :request_id AND state = 'decided'
    RETURNING *"""
"""A reopened request is a new question (the call changed, or the graph refused the
answer): a posted one's review time limit counts again from the reopen, with its own
reminder, so a timeout decision never applies at once to a call nobody saw. A reissued
one (``reissued`` 1) takes the call's time limit as it is now, with the rest of it."""
INSERT_NOTICE = """INSERT INTO run_notices (run_id, notice_key, created_at)
    VALUES (:run_id, :notice_key, :now) ON CONFLICT (run_id, notice_key) DO NOTHING
    RETURNING *"""
SELECT_DUE_REMINDERS = """SELECT * FROM approval_requests
    WHERE state = 'pending' AND expires_at IS NOT NULL AND reminded_at IS NULL
    AND expires_at - review_timeout_s / 2 <= :now AND expires_at > :now
    ORDER BY expires_at - review_timeout_s / 2 LIMIT :limit"""
"""Uses the expression index ``approval_requests_reminder`` (same expression, same
predicate): only requests whose half-time has come are read."""
MARK_REMINDED = """UPDATE approval_requests
    SET reminded_at = :now, revision = revision + 1, changed_at = :now
    WHERE request_id = :request_id AND state = 'pending' AND reminded_at IS NULL"""
UNMARK_REMINDED = """UPDATE approval_requests
    SET reminded_at = NULL, revision = revision + 1, changed_at = :now
    WHERE request_id = :request_id AND reminded_at IS NOT NULL"""
"""A reminder shows on its card ("Reminder sent"), so marking one (or taking it back)
bumps ``revision`` as every change a card shows does: a card drawn from a copy read
before it is drawn again (``CardOwner.redraw``), and one whose redraw was lost lags.
Only a pending request is marked (one decided meanwhile gets no reminder), and only a
mark is taken back: a request decided just after its mark, whose reminder is then not
posted, has it taken back (``SlackNotifier.reminder``). One reminder per review window:
a reopen starts a new one (``REOPEN_REQUEST``), whose reminder has its own key."""
SELECT_DUE_EXPIRIES = """SELECT * FROM approval_requests
    WHERE state = 'pending' AND expires_at IS NOT NULL AND expires_at <= :now
    ORDER BY expires_at LIMIT :limit"""
EXPIRE_REQUEST = """UPDATE approval_requests
    SET state = 'decided', decision = timeout_decision, decided_by = NULL, decided_at = :now,
        note = :note, revision = revision + 1, changed_at = :now
    WHERE request_id = :request_id AND state = 'pending' AND timeout_decision IS NOT NULL
    RETURNING *"""
CANCEL_OPEN_REQUESTS = """UPDATE approval_requests SET state = 'cancelled', note = :note,
    revision = revision + 1, changed_at = :now
    WHERE run_id = :run_id AND state IN ('pending', 'decided')
    RETURNING *"""
SET_REQUEST_NOTE = """UPDATE approval_requests SET note = :note WHERE request_id = :request_id
    RETURNING *"""
CLOSE_TEAM_REQUESTS = """UPDATE approval_requests SET state = 'cancelled', note = :note,
    revision = revision + 1, drawn_revision = revision + 1, changed_at = :now
    WHERE state IN ('pending', 'decided')
        AND run_id IN (SELECT run_id FROM runs WHERE team_id = :team_id)
    RETURNING *"""
"""The workspace's open requests, cancelled; their cards cannot be redrawn (the app is
gone from the workspace), so they count as drawn."""
FAIL_TEAM_RUNS = """UPDATE runs SET state = 'failed', error = :error, lease_owner = NULL,
    lease_until = NULL, updated_at = :now
    WHERE team_id = :team_id AND state IN ('queued', 'running', 'waiting')"""
"""The workspace's unfinished runs, failed; a worker driving one finds its lease gone at
its next renewal and stops (``agent_bridge.lease.Leases.hold``), and its release changes nothing."""
SELECT_NOTICE = """SELECT * FROM run_notices WHERE run_id = :run_id AND notice_key = :notice_key"""
SELECT_POSTED_NOTICE_KEYS = """SELECT notice_key FROM run_notices
    WHERE run_id = :run_id AND message_ts IS NOT NULL"""
"""The keys of a run's messages known to be in Slack (the primary key's index)."""
SET_NOTICE_TS = """UPDATE run_notices SET message_ts = :message_ts
    WHERE run_id = :run_id AND notice_key = :notice_key"""
MARK_DRAWN = """UPDATE approval_requests SET drawn_revision = :revision
    WHERE request_id = :request_id AND drawn_revision < :revision"""
MARK_DRAWN_READING_REVISIONS = f"""WITH drawn AS ({MARK_DRAWN})
    {SELECT_INTERRUPT_REVISIONS}"""
"""``MARK_DRAWN`` and ``SELECT_INTERRUPT_REVISIONS`` in one PostgreSQL statement (a
data-modifying ``WITH``; SQLite has none): the revisions are read as the statement
starts, after the card was drawn, which is what the reader asks."""
SELECT_UNDRAWN_CARDS = """SELECT * FROM approval_requests
    WHERE drawn_revision < revision AND message_ts IS NOT NULL AND changed_at <= :before
    ORDER BY changed_at LIMIT :limit"""

# -- who decides: quorum, opened views, escalation, who may start runs ----------------

APPROVE_REQUEST = """UPDATE approval_requests
    SET approved_by = :approved_by, revision = revision + 1, changed_at = :now,
        pending_edit = :pending_edit, version = :new_version,
        state = CASE WHEN :decide = 1 THEN 'decided' ELSE state END,
        decision = CASE WHEN :decide = 1 THEN :decision ELSE decision END,
        decided_by = CASE WHEN :decide = 1 THEN :user_id ELSE decided_by END,
        decided_at = CASE WHEN :decide = 1 THEN :now ELSE decided_at END,
        note = CASE WHEN :decide = 1 THEN NULL ELSE note END
    WHERE request_id = :request_id AND state = 'pending' AND revision = :revision
    RETURNING *"""
INSERT_OPENED_VIEW = """INSERT INTO opened_views (view_key, request_id, user_id, team_id,
    decision_type, version, created_at)
    VALUES (:view_key, :request_id, :user_id, :team_id, :decision_type, :version, :now)"""
SET_OPENED_VIEW_ID = "UPDATE opened_views SET view_id = :view_id WHERE view_key = :view_key"
SELECT_OPENED_VIEW = "SELECT * FROM opened_views WHERE view_key = :view_key"
SELECT_DUE_ESCALATIONS = """SELECT * FROM approval_requests
    WHERE state = 'pending' AND escalated_at IS NULL AND escalates_at IS NOT NULL
    AND escalates_at <= :now AND (expires_at IS NULL OR expires_at > :now)
    ORDER BY escalates_at LIMIT :limit"""
ESCALATE_REQUEST = """UPDATE approval_requests
    SET escalated_at = :now, revision = revision + 1, changed_at = :now
    WHERE request_id = :request_id AND state = 'pending' AND escalated_at IS NULL
    RETURNING *"""
UPSERT_AGENT_POLICY = """INSERT INTO agent_policies (agent, requesters, max_active_runs_per_user,
    updated_at) VALUES (:agent, :requesters, :max_active_runs_per_user, :now)
    ON CONFLICT (agent) DO UPDATE SET requesters = excluded.requesters,
        max_active_runs_per_user = excluded.max_active_runs_per_user,
        updated_at = excluded.updated_at"""
SELECT_AGENT_POLICY = "SELECT * FROM agent_policies WHERE agent = :agent"
INSERT_RUN_WITHIN_LIMIT = """INSERT INTO runs (run_id, thread_id, task, channel_id, user_id,
    team_id, thread_ts, state, created_at, updated_at, agent, requester_name)
    SELECT :run_id, :thread_id, :task, :channel_id, :user_id, :team_id, :thread_ts, :state,
        :now, :now, :agent, :requester_name
    WHERE (SELECT COUNT(*) FROM runs WHERE user_id = :user_id
        AND state IN ('queued', 'running', 'waiting')) < :max_active"""
LOCK_USER_RUNS = "SELECT pg_advisory_xact_lock(hashtext('agent_bridge.runs:' || :user_id))"
"""PostgreSQL only: serialise one user's run starts until the transaction ends."""
SET_RESULT = """UPDATE approval_requests SET result = :result, revision = revision + 1,
    changed_at = :now
    WHERE request_id = (SELECT request_id FROM approval_requests
        WHERE run_id = :run_id AND tool_call_id = :tool_call_id
        ORDER BY created_at DESC LIMIT 1)
    AND result IS NULL
    AND (CAST(:request_id AS TEXT) IS NULL
        OR (request_id = :request_id AND revision = :revision))
    RETURNING *"""
"""A reviewed call's result on its request, once: a replayed result, or a call that was
not reviewed (no request), changes nothing. With ``request_id`` and ``revision`` (else
NULL), only on that request as the caller read it (every change its card shows bumps
``revision``), so its audit event can be drawn from that copy."""
SET_POINTER = """UPDATE approval_requests SET pointer_ts = :pointer_ts, card_link = :card_link
    WHERE request_id = :request_id AND pointer_ts IS NULL"""
SELECT_UNTOLD_FAILURES = """SELECT r.*, n.created_at AS meant_at
    FROM run_notices n JOIN runs r ON r.run_id = n.run_id
    WHERE n.notice_key = :key AND n.message_ts IS NULL AND n.created_at <= :before
    AND r.state = 'failed' AND r.agent = :agent
    ORDER BY n.created_at LIMIT :limit"""
"""Failed runs of an agent whose failure note was meant (an outbox intention) and not
posted, the oldest first (the partial index ``run_notices_untold_failures``)."""
TAKE_UNTOLD = """UPDATE run_notices SET created_at = :now
    WHERE run_id = :run_id AND notice_key = :key AND message_ts IS NULL
    AND created_at = :meant_at AND created_at < :now"""
"""One worker's turn to post an untold notice: the compare-and-set on when it was meant,
moved to now (the next turn comes a grace after)."""

"""The approval store: runs, approval requests and decisions, in the database.

The database is the source of truth (docs/architecture.md, invariant 5). Every state
transition is one atomic statement; recording a decision is a compare-and-set from ``pending`` to
``decided`` so that of any number of concurrent clicks exactly one wins (invariant 2).
Requests are inserted idempotently on ``(interrupt_id, index)`` (invariant 1).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_bridge.audit import (
    INSERT_EVENT,
    OUTCOME_MAX_CHARS,
    AuditEvent,
    AuditKind,
    event_params,
    event_params_as_change,
    new_event_id,
    with_event,
)
from agent_bridge.binding import version_hash
from agent_bridge.db import Database, Row, Statements
from agent_bridge.deadline import time_left
from agent_bridge.decisions import uncountable
from agent_bridge.errors import StoreUnavailableError
from agent_bridge.models import (
    DEFAULT_AGENT,
    RESULT_MAX_CHARS,
    AlreadyDecided,
    ApprovalRequest,
    ApprovalState,
    CallChanged,
    CallResult,
    Counted,
    Decision,
    Recorded,
    Recording,
    Run,
    RunState,
    StartRules,
    UnknownRequest,
)
from agent_bridge.redaction import redact
from agent_bridge.store_sql import (
    APPROVE_REQUEST,
    CANCEL_OPEN_REQUESTS,
    CLAIM_RUN,
    CLOSE_TEAM_REQUESTS,
    ESCALATE_REQUEST,
    EXPIRE_REQUEST,
    FAIL_TEAM_RUNS,
    INSERT_NOTICE,
    INSERT_REQUEST,
    INSERT_RUN,
    INSERT_RUN_WITHIN_LIMIT,
    LOCK_USER_RUNS,
    MARK_APPLIED,
    MARK_DRAWN,
    MARK_DRAWN_READING_REVISIONS,
    MARK_REMINDED,
    MOVE_MESSAGE,
    RECORD_DECISION,
    RELEASE_RUN,
    RELEASE_RUN_SETTING_NOTICES_TS,
    RENEW_LEASES,
    REOPEN_REQUEST,
    SELECT_AGENT_POLICY,
    SELECT_DUE_ESCALATIONS,
    SELECT_DUE_EXPIRIES,
    SELECT_DUE_REMINDERS,
    SELECT_INTERRUPT_REQUESTS,
    SELECT_INTERRUPT_REVISIONS,
    SELECT_LATEST_RUN,
    SELECT_NEXT_LEASE_END,
    SELECT_NOTICE,
    SELECT_PENDING_POSTED,
    SELECT_POSTED_NOTICE_KEYS,
    SELECT_REQUEST,
    SELECT_REQUEST_BY_KEY,
    SELECT_RUN,
    SELECT_RUN_OF_THREAD,
    SELECT_RUN_REQUESTS,
    SELECT_RUNS_NEEDING_WORK,
    SELECT_STARTABLE_RUNS,
    SELECT_UNDRAWN_CARDS,
    SELECT_UNTOLD_FAILURES,
    SET_MESSAGE,
    SET_NOTICE_TS,
    SET_NOTICES_TS,
    SET_POINTER,
    SET_REQUEST_NOTE,
    SET_RESULT,
    SET_RUN_THREAD_LINK,
    SET_RUN_THREAD_TS,
    TAKE_UNTOLD,
    UNMARK_REMINDED,
    UPSERT_AGENT_POLICY,
)


@dataclass(frozen=True)
class Notice:
    """The intention to post one of a run's messages (``run_notices``).

    Attributes:
        key: The message's key within its run (``header``, ``tool:<tool_call_id>``...).
        fresh: Whether the call that returned it recorded it (so no one posted it yet).
        message_ts: Where it is in Slack, once posted or found; ``None`` before.
        created_at: When the intention was recorded (Unix time, seconds).
    """

    key: str
    fresh: bool
    message_ts: str | None
    created_at: float


Clock = Callable[[], float]
"""Returns Unix time in seconds; tests pass their own."""
APPROVAL_ATTEMPTS = 8
"""Times an approval is retried when other approvals of the same request land first."""
SWEEP_BATCH = 500
"""Most rows one sweep query returns (runs to take up, requests due): a worker's memory
does not grow with the backlog, and the next sweep takes the rest."""


def run_from_row(row: Row) -> Run:
    """Build a ``Run`` from a ``runs`` row."""
    return Run.model_validate({k: v for k, v in row.items() if k in Run.model_fields})


def request_from_row(row: Row) -> ApprovalRequest:
    """Build an ``ApprovalRequest`` from an ``approval_requests`` row (JSON columns parsed)."""
    data: dict[str, Any] = {k: v for k, v in row.items() if k in ApprovalRequest.model_fields}
    data["index"] = row["idx"]
    for column in ("args", "allowed_decisions", "args_schema"):
        data[column] = json.loads(row[column])
    for column in (
        "decision",
        "timeout_decision",
        "pending_edit",
        "rules",
        "redact",
        "result",
        "risk",
    ):
        data[column] = json.loads(row[column]) if row.get(column) else None
    for column in ("rules", "redact"):  # stored before these columns: the defaults
        if data[column] is None:
            del data[column]
    data["approved_by"] = json.loads(row.get("approved_by") or "[]")
    return ApprovalRequest.model_validate(data)


class ApprovalStore:
    """Runs and approval requests in a ``Database`` (PostgreSQL or SQLite, same SQL).

    Args:
        db: The database port.
        clock: Unix time in seconds (``time.time`` unless a test controls time).

    Every method raises ``StoreUnavailableError`` if the database is unreachable.
    """

    def __init__(self, db: Database, *, clock: Clock = time.time) -> None:
        self.db = db
        self.clock = clock
        self._ts_at_release: dict[str, dict[str, str]] = {}
        """Run ID -> notice key -> ``ts``: messages of a drive whose ``ts`` its run's
        release records (``set_notice_ts(..., at_release=True)``)."""

    # -- runs ---------------------------------------------------------------

    async def create_run(self, run: Run) -> Run:
        """Insert a new ``queued`` run and return it as stored."""
        await self.db.execute(INSERT_RUN, self._run_params(run))
        return await self.get_run(run.run_id)

    async def create_run_within(self, run: Run, *, max_active: int) -> Run | None:
        """Insert a new ``queued`` run only while its user has fewer than ``max_active``
        runs queued, running or waiting: counted and inserted in one transaction that
        holds the user's lock (PostgreSQL: a transaction-level advisory lock; SQLite's
        transactions are serial), so concurrent starts cannot all pass the count.

        Returns:
            The stored run, or ``None`` if the user is at ``max_active``.
        """
        params = {**self._run_params(run), "max_active": max_active}
        async with self.db.transaction() as tx:
            if self.db.dialect == "postgres":
                await tx.execute(LOCK_USER_RUNS, {"user_id": run.user_id})
            if not await tx.execute(INSERT_RUN_WITHIN_LIMIT, params):
                return None
        return await self.get_run(run.run_id)

    def _run_params(self, run: Run) -> dict[str, Any]:
        fields = {
            "agent",
            "run_id",
            "thread_id",
            "task",
            "channel_id",
            "user_id",
            "team_id",
            "requester_name",
        }
        return {
            **run.model_dump(include=fields | {"thread_ts"}),
            "state": RunState.QUEUED.value,
            "now": self.clock(),
        }

    async def get_run(self, run_id: str) -> Run:
        """Return the run ``run_id``.

        Raises:
            KeyError: If there is no such run.
        """
        row = await self.db.fetch_one(SELECT_RUN, {"run_id": run_id})
        if row is None:
            raise KeyError(run_id)
        return run_from_row(row)

    async def run_of_thread(self, thread_id: str) -> Run | None:
        """Return the run of LangGraph's ``thread_id`` (one run per thread: the
        ``runs.thread_id`` unique index), if any."""
        row = await self.db.fetch_one(SELECT_RUN_OF_THREAD, {"thread_id": thread_id})
        return run_from_row(row) if row is not None else None

    async def latest_run(self) -> Run | None:
        """Return the most recently requested run, if any (the demo watches it)."""
        row = await self.db.fetch_one(SELECT_LATEST_RUN)
        return run_from_row(row) if row else None

    async def claim_run(
        self,
        run_id: str,
        *,
        owner: str,
        lease_s: float,
        from_state: RunState,
        agent: str = DEFAULT_AGENT,
    ) -> Run | None:
        """Take the run for ``owner`` if it is ``agent``'s and in ``from_state`` or its
        lease expired (a signal may name another agent's run: it is left alone).

        Returns:
            The run, now ``running`` under ``owner`` until ``now + lease_s`` seconds, its
            ``drives_in_a_row`` counting this drive, or ``None`` if another worker holds
            it or it moved on.
        """
        now = self.clock()
        row = await self.db.fetch_one(
            CLAIM_RUN,
            {
                "run_id": run_id,
                "owner": owner,
                "until": now + lease_s,
                "now": now,
                "from_state": from_state.value,
                "agent": agent,
            },
        )
        return run_from_row(row) if row else None

    async def renew_leases(
        self, run_ids: Collection[str], *, owner: str, lease_s: float
    ) -> set[str]:
        """Extend ``owner``'s leases on ``run_ids`` to ``lease_s`` seconds from now, in one
        statement (a worker renews every run it drives at once, ``agent_bridge.lease``).

        Returns:
            The runs renewed; a run missing was lost (another worker took it after its
            lease expired, or it is no longer running).
        """
        if not run_ids:
            return set()
        rows = await self.db.fetch_all(
            RENEW_LEASES[self.db.dialect],
            {
                "run_ids": json.dumps(sorted(run_ids)),
                "owner": owner,
                "until": self.clock() + lease_s,
            },
        )
        return {row["run_id"] for row in rows}

    async def release_run(
        self,
        run_id: str,
        *,
        owner: str,
        state: RunState,
        final_answer: str | None = None,
        error: str | None = None,
        drives_in_a_row: int | None = None,
    ) -> None:
        """Leave the run in ``state`` (``queued``, ``waiting``, ``done`` or ``failed``) and
        drop ``owner``'s lease (nothing if it no longer holds it). ``drives_in_a_row``
        sets ``Run.drives_in_a_row`` (``None`` keeps the claim's count). The ``ts`` of
        the run's messages left for it (``set_notice_ts``) are recorded with it."""
        await self._release(
            self.db,
            run_id,
            owner=owner,
            state=state,
            final_answer=final_answer,
            error=error,
            drives_in_a_row=drives_in_a_row,
        )
        self.forget_notices_ts(run_id)  # recorded

    async def _release(
        self,
        q: Database | Statements,
        run_id: str,
        *,
        owner: str,
        state: RunState,
        final_answer: str | None = None,
        error: str | None = None,
        drives_in_a_row: int | None = None,
    ) -> int:
        """``RELEASE_RUN`` on ``q`` (the database, or a transaction), recording the ``ts``
        of the run's messages left for it (``set_notice_ts(..., at_release=True)``), on
        PostgreSQL in the same statement (on SQLite, one before it); returns the rows it
        changed: 0 if ``owner`` no longer holds the run's lease (the messages' ``ts`` are
        recorded either way). The caller forgets them once that is committed."""
        params = {
            "run_id": run_id,
            "owner": owner,
            "state": state.value,
            "final_answer": final_answer,
            "error": error,
            "drives_in_a_row": drives_in_a_row,
            "now": self.clock(),
        }
        notices = dict(self._ts_at_release.get(run_id, {}))
        # JSON carries a NUL as "\u0000", which jsonb refuses and SQLite's json_each
        # does not match: such a key (a hostile tool call ID) is written on its own, as
        # the statement's parameters are (NULs replaced, postgres_db.without_nul).
        for key in [k for k in notices if "\x00" in k]:
            await q.execute(
                SET_NOTICE_TS,
                {"run_id": run_id, "notice_key": key, "message_ts": notices.pop(key)},
            )
        if not notices:
            return await q.execute(RELEASE_RUN, params)
        pairs = json.dumps(notices, ensure_ascii=False)
        if self.db.dialect == "postgres":
            return await q.execute(RELEASE_RUN_SETTING_NOTICES_TS, {**params, "notices": pairs})
        await q.execute(SET_NOTICES_TS["sqlite"], {"run_id": run_id, "notices": pairs})
        return await q.execute(RELEASE_RUN, params)

    async def publish_start_rules(self, agent: str, rules: StartRules) -> None:
        """Make ``agent``'s start rules (from its policy, which only its workers read) the
        ones the web process applies."""
        requesters = json.dumps(rules.requesters) if rules.requesters is not None else None
        await self.db.execute(
            UPSERT_AGENT_POLICY,
            {
                "agent": agent,
                "requesters": requesters,
                "max_active_runs_per_user": rules.max_active_runs_per_user,
                "now": self.clock(),
            },
        )

    async def start_rules(self, agent: str) -> StartRules | None:
        """Return ``agent``'s start rules, or ``None`` if no worker has published any."""
        row = await self.db.fetch_one(SELECT_AGENT_POLICY, {"agent": agent})
        if row is None:
            return None
        requesters = json.loads(row["requesters"]) if row["requesters"] else None
        return StartRules(
            requesters=tuple(requesters) if requesters is not None else None,
            max_active_runs_per_user=row["max_active_runs_per_user"],
        )

    async def set_run_thread_ts(self, run_id: str, thread_ts: str) -> None:
        """Remember the ``ts`` of the run's first Slack message (its ``thread_ts``)."""
        await self.db.execute(SET_RUN_THREAD_TS, {"run_id": run_id, "thread_ts": thread_ts})

    async def set_run_thread_link(self, run_id: str, thread_link: str) -> None:
        """Remember the permalink of the run's first Slack message (``Run.thread_link``)."""
        await self.db.execute(SET_RUN_THREAD_LINK, {"run_id": run_id, "thread_link": thread_link})

    async def startable_runs(
        self, agent: str = DEFAULT_AGENT, *, limit: int = SWEEP_BATCH
    ) -> list[str]:
        """Return IDs of ``agent``'s queued runs and of its running runs whose lease
        expired, oldest first, at most ``limit`` (the next sweep takes the rest)."""
        rows = await self.db.fetch_all(
            SELECT_STARTABLE_RUNS, {"now": self.clock(), "agent": agent, "limit": limit}
        )
        return [r["run_id"] for r in rows]

    async def next_lease_end(self, agent: str = DEFAULT_AGENT, *, other_than: str) -> float | None:
        """Return when the soonest lease on one of ``agent``'s running runs ends (Unix
        time, seconds), leases of ``other_than`` left out; ``None`` if none is held."""
        row = await self.db.fetch_one(SELECT_NEXT_LEASE_END, {"agent": agent, "owner": other_than})
        value = row["lease_until"] if row else None
        return float(value) if value is not None else None

    async def runs_needing_work(
        self, agent: str = DEFAULT_AGENT, *, limit: int = SWEEP_BATCH
    ) -> list[str]:
        """Return IDs of ``agent``'s waiting runs with something for a worker to do, at
        most ``limit`` (the next sweep takes the rest).

        That is: a decision that can be sent now (per-call, or the last of a batched
        interrupt), or an approval message that was never posted. Read through a partial
        index holding only such requests: paused runs with nothing to do cost nothing.
        """
        rows = await self.db.fetch_all(SELECT_RUNS_NEEDING_WORK, {"agent": agent, "limit": limit})
        return [r["run_id"] for r in rows]

    # -- approval requests ---------------------------------------------------

    async def add_requests(self, requests: Iterable[ApprovalRequest]) -> list[ApprovalRequest]:
        """Insert requests not already stored under their ``(interrupt_id, index)``.

        Returns:
            The stored version of each request, in the given order: an existing row
            wins over the new one, so a replayed interrupt keeps its message.
        """
        stored = []
        for request in requests:
            async with self.db.transaction() as tx:
                if await tx.execute(INSERT_REQUEST, self._request_params(request)):
                    await self._audit(tx, self._event(AuditKind.REQUESTED, request))
                row = await tx.fetch_one(
                    SELECT_REQUEST_BY_KEY,
                    {"interrupt_id": request.interrupt_id, "idx": request.index},
                )
            assert row is not None  # just inserted or already there
            stored.append(request_from_row(row))
        return stored

    async def get_request(self, request_id: str) -> ApprovalRequest | None:
        """Return the request ``request_id``, or ``None`` if there is none."""
        row = await self.db.fetch_one(SELECT_REQUEST, {"request_id": request_id})
        return request_from_row(row) if row else None

    async def requests_for_run(self, run_id: str) -> list[ApprovalRequest]:
        """Return every request of the run, oldest first."""
        rows = await self.db.fetch_all(SELECT_RUN_REQUESTS, {"run_id": run_id})
        return [request_from_row(r) for r in rows]

    async def requests_for_interrupt(self, interrupt_id: str) -> list[ApprovalRequest]:
        """Return the requests of one interrupt in ``action_requests`` order."""
        rows = await self.db.fetch_all(SELECT_INTERRUPT_REQUESTS, {"interrupt_id": interrupt_id})
        return [request_from_row(r) for r in rows]

    async def interrupt_revisions(self, interrupt_id: str) -> dict[str, int]:
        """Return ``request_id -> revision`` of one interrupt's requests: whether any of
        them changed, for two columns of each row rather than the whole requests."""
        return _revisions(
            await self.db.fetch_all(SELECT_INTERRUPT_REVISIONS, {"interrupt_id": interrupt_id})
        )

    async def pending_requests(self, *, limit: int = 100) -> list[ApprovalRequest]:
        """Return up to ``limit`` posted requests waiting for a reviewer, oldest first."""
        rows = await self.db.fetch_all(SELECT_PENDING_POSTED, {"limit": limit})
        return [request_from_row(r) for r in rows]

    async def set_message(
        self,
        request_id: str,
        *,
        channel_id: str,
        message_ts: str,
        posted_at: float | None = None,
        adopted: bool = False,
    ) -> None:
        """Remember where the request's Slack message is; a review time limit starts
        counting at the first post: at ``posted_at`` (Unix time, seconds; ``None``: now),
        the time the card's first drawing counted from (``ApprovalRequest.posted_at``).
        ``adopted``: the message was found in Slack, drawn by a worker that died posting
        it; its card is marked as lagging until redrawn (``SET_MESSAGE``)."""
        params = {
            "request_id": request_id,
            "channel_id": channel_id,
            "message_ts": message_ts,
            "now": self.clock() if posted_at is None else posted_at,
            "adopted": int(adopted),
        }
        async with self.db.transaction() as tx:
            row = await tx.fetch_one(SET_MESSAGE, params)
            if row is not None:
                detail = f"{channel_id} {message_ts}"
                await self._audit(
                    tx, self._event(AuditKind.POSTED, request_from_row(row), detail=detail)
                )

    async def set_pointer(self, request_id: str, *, pointer_ts: str, card_link: str | None) -> bool:
        """Remember the run-thread line pointing to the request's card (once).

        Returns:
            Whether this call set it (``False``: it had one already).
        """
        params = {"request_id": request_id, "pointer_ts": pointer_ts, "card_link": card_link}
        return await self.db.execute(SET_POINTER, params) == 1

    async def move_message(self, request_id: str, *, old_ts: str, message_ts: str) -> bool:
        """Point the request at its re-posted message, if it is still at ``old_ts``: a
        compare-and-set, so of two processes re-posting one deleted card one wins.

        Returns:
            Whether this call moved it (``False``: someone else re-posted it first).
        """
        params = {"request_id": request_id, "old_ts": old_ts, "message_ts": message_ts}
        return await self.db.execute(MOVE_MESSAGE, params) == 1

    async def record_decision(
        self,
        request_id: str,
        decision: Decision,
        *,
        user_id: str,
        team_id: str | None = None,
        version: str | None = None,
    ) -> Recording:
        """Record ``decision`` by ``user_id`` (of workspace ``team_id``) if the request is
        still pending, and still the call's ``version`` if given (the one on the card or
        form the person acted on): one compare-and-set, so the first valid decision wins
        (invariant 2), with its audit event in the same transaction. Approvals and edits
        go through ``approve`` and ``propose_edit`` (quorum); this is for reject, respond
        and ignore.

        Returns:
            ``Recorded`` if this call recorded it; ``CallChanged`` if the call is another
            version now (an edit proposed since, still pending); ``AlreadyDecided`` if it
            was decided before (the request shows by whom, how and when);
            ``UnknownRequest`` if there is no such request.
        """
        params = {
            "request_id": request_id,
            "decision": decision.model_dump_json(),
            "user_id": user_id,
            "now": self.clock(),
            "version": version,
        }
        async with self.db.transaction() as tx:
            row = await tx.fetch_one(RECORD_DECISION, params)
            if row is not None:
                recorded = request_from_row(row)
                await self._audit(
                    tx, self._event(AuditKind.DECIDED, recorded, user_id=user_id, team_id=team_id)
                )
                return Recorded(recorded)
        current = await self.get_request(request_id)
        if current is None:
            return UnknownRequest(request_id)
        if current.state == ApprovalState.PENDING and version is not None:
            return CallChanged(current)  # pending, so the version did not match
        return AlreadyDecided(current)

    async def mark_applied(
        self, request_ids: Sequence[str], *, known: Mapping[str, ApprovalRequest] | None = None
    ) -> None:
        """Mark decided requests as applied to their ``thread_id``, each with its
        ``applied`` audit event.

        Args:
            request_ids: The requests.
            known: Request ID -> the request as the caller last read it. One unchanged
                since (same ``revision``) is marked with its event drawn from that copy,
                in one statement on PostgreSQL (``_change_audited``); any other is read
                as it changes, in a transaction.
        """
        for request_id in request_ids:
            read = (known or {}).get(request_id)
            if read is not None:
                params = {"request_id": request_id, "revision": read.revision, "now": self.clock()}
                event = self._event(AuditKind.APPLIED, read)
                if await self._change_audited(MARK_APPLIED, params, event) is not None:
                    continue
            async with self.db.transaction() as tx:
                row = await tx.fetch_one(
                    MARK_APPLIED, {"request_id": request_id, "revision": None, "now": self.clock()}
                )
                if row is not None:
                    await self._audit(tx, self._event(AuditKind.APPLIED, request_from_row(row)))

    async def reopen(
        self,
        request_id: str,
        *,
        note: str,
        args_schema: dict[str, Any] | None = None,
        reissued: ApprovalRequest | None = None,
    ) -> ApprovalRequest | None:
        """Put a decided request back to pending, saying why, so it can be answered again.
        Its approvals start again.

        Args:
            request_id: The request.
            note: Why (shown on its card).
            args_schema: The tool's current argument schema, if a deploy changed it.
            reissued: The call as the checkpoint now has it, if it changed since the
                decision (its arguments, description, decisions and the Edit they
                withhold, argument schema, tool call ID, ``call_hash``, SQL risk and
                review time limit replace the old).

        Returns:
            The reopened request, or ``None`` if it was not in the ``decided`` state.
        """
        current = await self.get_request(request_id)
        if current is None:
            return None
        call = reissued.call_hash if reissued else current.call_hash
        schema = (
            args_schema if args_schema is not None or reissued is None else reissued.args_schema
        )
        params = {
            "request_id": request_id,
            "note": note,
            "args_schema": json.dumps(schema) if schema is not None else None,
            "version": version_hash(call, None),
            "args": json.dumps(reissued.args) if reissued else None,
            "call_hash": reissued.call_hash if reissued else None,
            "tool_call_id": reissued.tool_call_id if reissued else None,
            "description": reissued.description if reissued else None,
            "allowed_decisions": json.dumps(reissued.allowed_decisions) if reissued else None,
            "risk": reissued.risk.model_dump_json() if reissued and reissued.risk else None,
            "reissued": 1 if reissued else 0,
            "edit_withheld": reissued.edit_withheld if reissued else None,
            "review_timeout_s": reissued.review_timeout_s if reissued else None,
            "timeout_decision": reissued.timeout_decision.model_dump_json()
            if reissued and reissued.timeout_decision
            else None,
            "now": self.clock(),
        }
        async with self.db.transaction() as tx:
            row = await tx.fetch_one(REOPEN_REQUEST, params)
            if row is None:
                return None
            reopened = request_from_row(row)
            await self._audit(tx, self._event(AuditKind.REOPENED, reopened, reason=note))
        return reopened

    async def claim_notice(self, run_id: str, key: str) -> bool:
        """Return ``True`` the first time ``key`` is claimed for the run, ``False`` after.

        The worker posts a tool result, a note or the final answer only after claiming
        it, so a resumed graph that replays earlier results never posts them twice.
        """
        return await self._insert_notice(run_id, key) is not None

    async def _insert_notice(self, run_id: str, key: str) -> Row | None:
        """Insert the notice ``key`` of the run; its row, or ``None`` if it was there."""
        return await self.db.fetch_one(
            INSERT_NOTICE, {"run_id": run_id, "notice_key": key, "now": self.clock()}
        )

    async def due_reminders(self, *, limit: int = SWEEP_BATCH) -> list[ApprovalRequest]:
        """Return posted pending requests past half their review time, not yet reminded,
        the longest due first, at most ``limit``."""
        rows = await self.db.fetch_all(SELECT_DUE_REMINDERS, {"now": self.clock(), "limit": limit})
        return [request_from_row(r) for r in rows]

    async def mark_reminded(self, request_id: str) -> bool:
        """Claim the request's one reminder; ``False`` if another worker already did."""
        return (
            await self.db.execute(MARK_REMINDED, {"request_id": request_id, "now": self.clock()})
            == 1
        )

    async def unmark_reminded(self, request_id: str) -> None:
        """Forget a reminder whose post failed, so the next sweep posts it."""
        await self.db.execute(UNMARK_REMINDED, {"request_id": request_id, "now": self.clock()})

    async def due_expiries(self, *, limit: int = SWEEP_BATCH) -> list[ApprovalRequest]:
        """Return pending requests whose review time is over, the longest over first, at
        most ``limit``."""
        rows = await self.db.fetch_all(SELECT_DUE_EXPIRIES, {"now": self.clock(), "limit": limit})
        return [request_from_row(r) for r in rows]

    async def expire(self, request_id: str, *, note: str) -> ApprovalRequest | None:
        """Record the request's timeout decision if it is still pending (compare-and-set,
        like a reviewer's click: whichever comes first wins).

        Returns:
            The expired request, or ``None`` if someone decided it first.
        """
        async with self.db.transaction() as tx:
            row = await tx.fetch_one(
                EXPIRE_REQUEST, {"request_id": request_id, "now": self.clock(), "note": note}
            )
            if row is None:
                return None
            expired = request_from_row(row)
            await self._audit(tx, self._event(AuditKind.EXPIRED, expired, reason=note))
        return expired

    async def fail_run(
        self,
        run_id: str,
        *,
        owner: str,
        error: str,
        note: str,
        note_for: Callable[[ApprovalRequest], str | None] | None = None,
    ) -> list[ApprovalRequest]:
        """Release the run as ``failed`` with ``error`` (as ``release_run``) and close its
        pending and unapplied requests, each with ``note`` (or the one ``note_for`` gives
        it, as closed, where ``note`` would be untrue for it; ``None``: ``note``) and its
        audit event (``reason``: its note), in one transaction: nobody sees the run ended
        with cards still open, and a crash
        leaves neither done, so the run's lease expires and it is driven again. Only
        ``owner``'s lease is released: a worker that lost it (another took the run, or
        ``close_workspace`` failed it) changes nothing, and leaves the cards to the run's
        holder. It locks the run's row before its requests' rows, as ``close_workspace``
        does, so the two never deadlock.

        Returns:
            The cancelled requests, for their cards to be redrawn; none if ``owner`` no
            longer held the run.
        """
        cancelled: list[ApprovalRequest] = []
        async with self.db.transaction() as tx:
            released = await self._release(
                tx, run_id, owner=owner, state=RunState.FAILED, error=error
            )
            rows = (
                await tx.fetch_all(
                    CANCEL_OPEN_REQUESTS, {"run_id": run_id, "note": note, "now": self.clock()}
                )
                if released
                else []
            )
            for row in rows:
                request = request_from_row(row)
                own = note_for(request) if note_for is not None else None
                if own is not None and own != note:
                    changed = await tx.fetch_one(
                        SET_REQUEST_NOTE, {"request_id": request.request_id, "note": own}
                    )
                    request = request_from_row(changed) if changed is not None else request
                cancelled.append(request)
                await self._audit(
                    tx, self._event(AuditKind.CANCELLED, request, reason=request.note or note)
                )
        self.forget_notices_ts(run_id)  # committed with the release
        return cancelled

    async def close_workspace(self, team_id: str, *, note: str) -> list[ApprovalRequest]:
        """The app left workspace ``team_id`` (uninstalled, or its bot token revoked):
        cancel its open requests, so nobody can decide them, each with its audit event
        (``reason``: ``note``), and fail its unfinished runs (a worker driving one loses
        its lease), in one transaction; return the cancelled requests."""
        now = self.clock()
        async with self.db.transaction() as tx:
            # The runs' rows before their requests' rows, as fail_run: no lock cycle.
            await tx.execute(FAIL_TEAM_RUNS, {"team_id": team_id, "error": note, "now": now})
            rows = await tx.fetch_all(
                CLOSE_TEAM_REQUESTS, {"team_id": team_id, "note": note, "now": now}
            )
            cancelled = [request_from_row(r) for r in rows]
            for request in cancelled:
                await self._audit(tx, self._event(AuditKind.CANCELLED, request, reason=note))
        return cancelled

    # -- who decides: quorum, escalation, refusals, outcomes ---------------------------

    async def approve(
        self,
        request_id: str,
        *,
        user_id: str,
        team_id: str | None,
        version: str,
        still_approvers: frozenset[str] | None = None,
        known: ApprovalRequest | None = None,
    ) -> Recording:
        """Count ``user_id``'s approval of the call's ``version`` (the one on the card they
        clicked); record the decision once ``required_approvals`` distinct people have.
        Earlier approvals by people not in ``still_approvers`` (if given: they left the
        approvers since) are dropped first; with ``known``, only of the approvals it held,
        which ``still_approvers`` was judged from: one counted after that read, by a click
        racing this one, was authorized by its own click and stays.

        A compare-and-set on the request's ``revision``, retried when another approval
        lands first, with its audit event in the same transaction. ``known``, the request
        as the caller just read it, saves the first read: the compare-and-set fails if it
        changed since, and anything it would refuse is read again before refusing.

        Returns:
            ``Recorded`` (the quorum is reached: decided, ``approve`` or the pending
            edit); ``Counted`` (more are needed); ``AlreadyCounted`` (this person already
            approved this version); ``CallChanged`` (the card showed another version);
            ``AlreadyDecided``; ``UnknownRequest``.
        """
        return await self._count(
            request_id,
            user_id=user_id,
            team_id=team_id,
            version=version,
            still_approvers=still_approvers,
            known=known,
        )

    async def propose_edit(
        self,
        request_id: str,
        decision: Decision,
        *,
        user_id: str,
        team_id: str | None,
        version: str,
    ) -> Recording:
        """Replace the call with ``decision``'s arguments; the editor's approval is its
        first, and earlier approvals no longer count (they were for another call). With
        ``required_approvals: 1`` the edit is decided at once.

        Returns:
            As ``approve``.
        """
        return await self._count(
            request_id, user_id=user_id, team_id=team_id, version=version, edit=decision
        )

    async def answer_without_counting(
        self, request_id: str, *, user_id: str, version: str, known: ApprovalRequest
    ) -> Recording | None:
        """What ``approve`` would answer ``user_id``'s approval of ``version`` without
        counting it (``decisions.uncountable``: decided, the call changed, counted
        already; or ``UnknownRequest``), or ``None`` if it would count it. ``known`` is
        the request as the caller read it; only an answer it suggests is read again, as
        ``approve`` does."""
        found = await self._countable(request_id, version=version, user_id=user_id, known=known)
        return None if isinstance(found, ApprovalRequest) else found

    async def _countable(
        self,
        request_id: str,
        *,
        version: str,
        user_id: str,
        edit: Decision | None = None,
        known: ApprovalRequest | None = None,
    ) -> ApprovalRequest | Recording:
        """The request to count ``user_id``'s approval (or ``edit``) of ``version`` on,
        or why it cannot be (``decisions.uncountable``, ``UnknownRequest``). ``known``
        saves the read; it may be old, so it is refused only once read again."""
        current = known or await self.get_request(request_id)
        if current is None:
            return UnknownRequest(request_id)
        refusal = uncountable(current, version=version, user_id=user_id, edit=edit)
        if refusal is not None and current is known:
            current = await self.get_request(request_id)
            if current is None:
                return UnknownRequest(request_id)
            refusal = uncountable(current, version=version, user_id=user_id, edit=edit)
        return refusal or current

    async def _count(
        self,
        request_id: str,
        *,
        user_id: str,
        team_id: str | None,
        version: str,
        edit: Decision | None = None,
        still_approvers: frozenset[str] | None = None,
        known: ApprovalRequest | None = None,
    ) -> Recording:
        judged = frozenset(known.approved_by) if known is not None else None
        for _ in range(APPROVAL_ATTEMPTS):
            current = await self._countable(
                request_id, version=version, user_id=user_id, edit=edit, known=known
            )
            known = None
            if not isinstance(current, ApprovalRequest):
                return current
            pending_edit = edit or current.pending_edit
            earlier = [
                u
                for u in current.approved_by
                if still_approvers is None
                or u in still_approvers
                or (judged is not None and u not in judged)  # not judged: counted since
            ]
            approved_by = [user_id] if edit else [*earlier, user_id]
            decide = len(approved_by) >= current.approvals_required(pending_edit)
            decision = pending_edit or Decision(type="approve")
            params = {
                "request_id": request_id,
                "revision": current.revision,
                "approved_by": json.dumps(approved_by),
                "pending_edit": None
                if decide or not pending_edit
                else pending_edit.model_dump_json(),
                "new_version": version_hash(
                    current.call_hash, pending_edit.edited_args if pending_edit else None
                ),
                "decide": int(decide),
                "decision": decision.model_dump_json(),
                "user_id": user_id,
                "now": self.clock(),
            }
            if decide:
                kind = AuditKind.DECIDED
            else:
                kind = AuditKind.EDITED if edit else AuditKind.APPROVED
            after = current.model_copy(  # what the event reads of the changed row
                update={
                    "pending_edit": None if decide else pending_edit,
                    "decision": decision if decide else current.decision,
                }
            )
            event = self._event(kind, after, user_id=user_id, team_id=team_id)
            row = await self._change_audited(APPROVE_REQUEST, params, event)
            if row is None:
                continue  # someone else changed it first: look again
            counted = request_from_row(row)
            return Recorded(counted) if decide else Counted(counted)
        raise StoreUnavailableError(
            f"request {request_id} changed {APPROVAL_ATTEMPTS} times while an approval was "
            "being counted; try again"
        )

    async def due_escalations(self, *, limit: int = SWEEP_BATCH) -> list[ApprovalRequest]:
        """Return posted pending requests whose ``escalates_at`` has come, not escalated
        and not due to expire (after an outage, a request past both only expires: no one
        is called in to decide a card closed in the same sweep); at most ``limit``, the
        longest due first."""
        rows = await self.db.fetch_all(
            SELECT_DUE_ESCALATIONS, {"now": self.clock(), "limit": limit}
        )
        return [request_from_row(r) for r in rows]

    async def escalate(self, request_id: str) -> ApprovalRequest | None:
        """Mark the request escalated (its ``escalate_to`` may decide from now on) if it is
        still pending and not escalated yet: a compare-and-set, so once.

        Returns:
            The escalated request, or ``None`` if it was decided or escalated already.
        """
        async with self.db.transaction() as tx:
            row = await tx.fetch_one(
                ESCALATE_REQUEST, {"request_id": request_id, "now": self.clock()}
            )
            if row is None:
                return None
            escalated = request_from_row(row)
            detail = " ".join(escalated.rules.escalate_to)
            await self._audit(tx, self._event(AuditKind.ESCALATED, escalated, detail=detail))
        return escalated

    async def record_refusal(
        self,
        request: ApprovalRequest,
        *,
        user_id: str,
        team_id: str | None,
        action: str,
        reason: str,
    ) -> None:
        """Append a ``refused`` audit event: ``user_id`` tried ``action`` and was not
        allowed, for ``reason``. Nothing else changes."""
        async with self.db.transaction() as tx:
            await self._audit(
                tx,
                self._event(
                    AuditKind.REFUSED,
                    request,
                    user_id=user_id,
                    team_id=team_id,
                    reason=reason,
                    detail=action,
                ),
            )

    async def record_outcome(
        self,
        run_id: str,
        tool_call_id: str,
        *,
        ok: bool,
        content: str,
        shown: bool = True,
        known: ApprovalRequest | None = None,
    ) -> ApprovalRequest | None:
        """Keep how a reviewed call went: its ``result`` on the request (for its card,
        once: a bumped ``revision``; its output only if ``shown``, the tool's
        ``post_results`` allowing) and an ``outcome`` audit event (its output or error,
        short). A call that was not reviewed has no request and nothing is kept.

        Args:
            known: The call's latest request as the caller last read it, if it has it.
                If that copy has a result, one was recorded (results are never cleared):
                nothing is read. If the request is unchanged since (same ``revision``), the result
                and the event drawn from that copy are one statement on PostgreSQL
                (``_change_audited``); else the request is read as it changes, in a
                transaction.

        Returns:
            The request with its ``result`` if this recorded it; ``None`` if the call had
            no request or its result was recorded before.
        """
        if known is not None and known.result is not None:
            return None
        now = self.clock()
        text = content[:RESULT_MAX_CHARS] if ok and shown else ""
        params = {
            "run_id": run_id,
            "tool_call_id": tool_call_id,
            "result": CallResult(ok=ok, text=text, at=now).model_dump_json(),
            "now": now,
            "request_id": None,
            "revision": None,
        }
        detail = f"{'ok' if ok else 'error'}: {content[:OUTCOME_MAX_CHARS]}"
        if known is not None:
            row = await self._change_audited(
                SET_RESULT,
                {**params, "request_id": known.request_id, "revision": known.revision},
                self._event(AuditKind.OUTCOME, known, detail=detail),
            )
            if row is not None:
                return request_from_row(row)
        async with self.db.transaction() as tx:
            updated = await tx.fetch_one(SET_RESULT, params)
            if updated is None:
                return None
            request = request_from_row(updated)
            await self._audit(tx, self._event(AuditKind.OUTCOME, request, detail=detail))
        return request

    def _event(
        self,
        kind: AuditKind,
        request: ApprovalRequest,
        *,
        user_id: str | None = None,
        team_id: str | None = None,
        reason: str | None = None,
        detail: str | None = None,
    ) -> AuditEvent:
        """The audit event ``kind`` about ``request`` (as it is after the change), now:
        its arguments redacted by the request's own rules."""
        decision = (
            request.pending_edit
            if kind == AuditKind.EDITED
            else request.decision
            if kind in (AuditKind.DECIDED, AuditKind.EXPIRED, AuditKind.APPLIED)
            else Decision(type="approve")
            if kind == AuditKind.APPROVED
            else None
        )
        return AuditEvent(
            event_id=new_event_id(),
            at=self.clock(),
            kind=kind,
            run_id=request.run_id,
            thread_id=request.thread_id,
            request_id=request.request_id,
            interrupt_id=request.interrupt_id,
            tool_call_id=request.tool_call_id,
            tool_name=request.tool_name,
            call_hash=request.call_hash or None,
            proposed_args=redact(request.args, request.redact),
            edited_args=redact(decision.edited_args, request.redact, before=request.args)
            if decision and decision.edited_args is not None
            else None,
            decision=decision.type if decision else None,
            reason=reason or (decision.message if decision else None),
            user_id=user_id,
            team_id=team_id,
            requester_id=request.requester_id,
            requested_at=request.created_at or self.clock(),
            detail=detail,
        )

    async def _audit(self, tx: Statements, event: AuditEvent) -> None:
        """Append ``event`` (``_event``) inside ``tx``."""
        await tx.execute(INSERT_EVENT, event_params(event))

    async def _change_audited(
        self, sql: str, params: dict[str, Any], event: AuditEvent
    ) -> Row | None:
        """Run ``sql``, a compare-and-set ``UPDATE ... RETURNING *`` of one request, and
        append ``event`` if it changed the row, atomically; return the changed row or
        ``None``. ``event`` is drawn before the change: a compare-and-set on the
        ``revision`` read changes only that row, so the event is the one the changed row
        would give.

        On PostgreSQL one statement (``audit.with_event``): alone, one round trip (an
        Approve click); under a deadline (``agent_bridge.deadline``: a modal's
        submission), inside a transaction, which the server bounds and the client never
        cancels, so a caller told ``StoreTooSlowError`` can trust nothing was recorded (a
        statement alone is cancelled from the client at the deadline, which can come just
        after it committed). Elsewhere a transaction of the change and the event.
        """
        if self.db.dialect == "postgres":
            statement = with_event(sql), {**params, **event_params_as_change(event)}
            if time_left() is None:
                return await self.db.fetch_one(*statement)
            async with self.db.transaction() as tx:
                return await tx.fetch_one(*statement)
        async with self.db.transaction() as tx:
            row = await tx.fetch_one(sql, params)
            if row is not None:
                await self._audit(tx, event)
            return row

    async def intend_notice(self, run_id: str, key: str) -> Notice:
        """Record the intention to post the run's message ``key`` (once; idempotent).

        Returns:
            The intention: ``fresh`` if this call recorded it (no one can have posted
            it yet), and the message's ``ts`` once posted (also one left for the run's
            release, without a statement).
        """
        left = self._ts_at_release.get(run_id, {}).get(key)
        if left is not None:
            return Notice(key=key, fresh=False, message_ts=left, created_at=self.clock())
        row = await self._insert_notice(run_id, key)
        fresh = row is not None
        if row is None:
            row = await self.db.fetch_one(SELECT_NOTICE, {"run_id": run_id, "notice_key": key})
        assert row is not None  # just inserted or already there
        return Notice(
            key=key,
            fresh=fresh,
            message_ts=row.get("message_ts"),
            created_at=float(row["created_at"]),
        )

    async def set_notice_ts(
        self, run_id: str, key: str, message_ts: str, *, at_release: bool = False
    ) -> None:
        """Remember that the run's message ``key`` is in Slack at ``message_ts``.

        Args:
            at_release: Leave it for the run's next release through this store
                (``release_run``, ``fail_run``: the worker that drives the run), which
                records it in the same statement on PostgreSQL: a statement less per
                message of a drive (issue 11). If the drive ends without one (its
                worker died, lost the lease, or the database failed:
                ``forget_notices_ts``), the intention stays without a ``ts`` and the
                next drive finds the message in Slack by its metadata (``bot.outbox``).
        """
        if at_release:
            self._ts_at_release.setdefault(run_id, {})[key] = message_ts
            return
        await self.db.execute(
            SET_NOTICE_TS, {"run_id": run_id, "notice_key": key, "message_ts": message_ts}
        )

    async def posted_notices(self, run_id: str) -> set[str]:
        """The keys of the run's messages known to be in Slack: their ``ts`` recorded, or
        left for the run's release through this store. One statement, for a drive to
        skip the results earlier drives posted instead of asking for each
        (``intend_notice``: two statements a result, every drive)."""
        rows = await self.db.fetch_all(SELECT_POSTED_NOTICE_KEYS, {"run_id": run_id})
        return {row["notice_key"] for row in rows} | set(self._ts_at_release.get(run_id, {}))

    def forget_notices_ts(self, run_id: str) -> None:
        """Drop the ``ts`` left for the run's release (``set_notice_ts``): once the release
        recorded them, or for a drive that ended without one."""
        self._ts_at_release.pop(run_id, None)

    async def mark_drawn(self, request: ApprovalRequest) -> dict[str, int]:
        """Remember that the request's card shows its state at its ``revision`` (or later).

        Returns:
            ``interrupt_revisions`` of its interrupt, read after the mark (whether its batch
            changed while the card was drawn): on PostgreSQL in the same statement, one
            round trip.
        """
        params = {
            "request_id": request.request_id,
            "revision": request.revision,
            "interrupt_id": request.interrupt_id,
        }
        if self.db.dialect == "postgres":
            return _revisions(await self.db.fetch_all(MARK_DRAWN_READING_REVISIONS, params))
        await self.db.execute(MARK_DRAWN, params)
        return await self.interrupt_revisions(request.interrupt_id)

    async def untold_failures(
        self, agent: str, *, key: str, meant_before: float, limit: int
    ) -> list[tuple[Run, float]]:
        """Return ``agent``'s failed runs whose notice ``key`` (their failure note) was
        meant before ``meant_before`` (Unix time, seconds) and never posted: Slack failed
        it when the run failed. Oldest first, at most ``limit``; each with when it was
        meant, for ``take_untold``."""
        rows = await self.db.fetch_all(
            SELECT_UNTOLD_FAILURES,
            {"key": key, "before": meant_before, "agent": agent, "limit": limit},
        )
        return [(run_from_row(r), float(r["meant_at"])) for r in rows]

    async def take_untold(self, run_id: str, key: str, *, meant_at: float) -> bool:
        """Take the turn to post the run's untold notice ``key`` meant at ``meant_at``:
        ``True`` for one caller only (workers' time keeping runs side by side, and the
        run has no lease to say whose it is); it counts as meant now, so the next turn,
        should this post fail too, comes a grace later."""
        params = {"run_id": run_id, "key": key, "meant_at": meant_at, "now": self.clock()}
        return await self.db.execute(TAKE_UNTOLD, params) == 1

    async def undrawn_cards(self, *, changed_before: float, limit: int) -> list[ApprovalRequest]:
        """Return posted requests whose card may not show their latest change, changed
        before ``changed_before`` (Unix time, seconds), oldest change first."""
        rows = await self.db.fetch_all(
            SELECT_UNDRAWN_CARDS, {"before": changed_before, "limit": limit}
        )
        return [request_from_row(r) for r in rows]

    def _request_params(self, request: ApprovalRequest) -> dict[str, Any]:
        return {
            "request_id": request.request_id,
            "run_id": request.run_id,
            "thread_id": request.thread_id,
            "interrupt_id": request.interrupt_id,
            "idx": request.index,
            "mode": request.mode,
            "batch_size": request.batch_size,
            "tool_call_id": request.tool_call_id,
            "tool_name": request.tool_name,
            "args": json.dumps(request.args),
            "description": request.description,
            "allowed_decisions": json.dumps(request.allowed_decisions),
            "args_schema": json.dumps(request.args_schema),
            "channel_id": request.channel_id,
            "thread_ts": request.thread_ts,
            "now": self.clock(),
            "review_timeout_s": request.review_timeout_s,
            "timeout_decision": request.timeout_decision.model_dump_json()
            if request.timeout_decision
            else None,
            "requester_id": request.requester_id,
            "team_id": request.team_id,
            "rules": request.rules.model_dump_json(),
            "risk": request.risk.model_dump_json() if request.risk else None,
            "call_hash": request.call_hash,
            "version": version_hash(request.call_hash, None),
            "escalate_after_s": request.rules.escalate_after_s,
            "redact": json.dumps(request.redact),
            "reason": request.reason,
            "edit_withheld": request.edit_withheld,
        }


def _revisions(rows: Iterable[Row]) -> dict[str, int]:
    """``request_id -> revision`` of ``SELECT_INTERRUPT_REVISIONS``' rows."""
    return {r["request_id"]: int(r["revision"]) for r in rows}

"""The approval store: runs, approval requests and decisions, in the database.

The database is the source of truth (docs/architecture.md, invariant 5). Every state
transition is one atomic statement; recording a decision is a compare-and-set from ``pending`` to
``decided`` so that of any number of concurrent clicks exactly one wins (invariant 2).
Requests are inserted idempotently on ``(interrupt_id, index)`` (invariant 1).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from agent_bridge.db import Database, Row
from agent_bridge.models import (
    DEFAULT_AGENT,
    AlreadyDecided,
    ApprovalRequest,
    Decision,
    Recorded,
    Recording,
    Run,
    RunState,
    UnknownRequest,
)
from agent_bridge.store_sql import (
    CANCEL_OPEN_REQUESTS,
    CLAIM_RUN,
    EXPIRE_REQUEST,
    INSERT_NOTICE,
    INSERT_REQUEST,
    INSERT_RUN,
    MARK_APPLIED,
    MARK_DRAWN,
    MARK_REMINDED,
    MOVE_MESSAGE,
    RECORD_DECISION,
    RELEASE_RUN,
    RENEW_LEASE,
    REOPEN_REQUEST,
    SELECT_DUE_EXPIRIES,
    SELECT_DUE_REMINDERS,
    SELECT_INTERRUPT_REQUESTS,
    SELECT_LATEST_RUN,
    SELECT_NEXT_LEASE_END,
    SELECT_NOTICE,
    SELECT_PENDING_POSTED,
    SELECT_REQUEST,
    SELECT_REQUEST_BY_KEY,
    SELECT_RUN,
    SELECT_RUN_REQUESTS,
    SELECT_RUNS_NEEDING_WORK,
    SELECT_STARTABLE_RUNS,
    SELECT_UNDRAWN_CARDS,
    SET_MESSAGE,
    SET_NOTICE_TS,
    SET_RUN_THREAD_TS,
    UNMARK_REMINDED,
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


def run_from_row(row: Row) -> Run:
    """Build a ``Run`` from a ``runs`` row."""
    return Run.model_validate({k: v for k, v in row.items() if k in Run.model_fields})


def request_from_row(row: Row) -> ApprovalRequest:
    """Build an ``ApprovalRequest`` from an ``approval_requests`` row (JSON columns parsed)."""
    data: dict[str, Any] = {k: v for k, v in row.items() if k in ApprovalRequest.model_fields}
    data["index"] = row["idx"]
    for column in ("args", "allowed_decisions", "args_schema"):
        data[column] = json.loads(row[column])
    data["decision"] = json.loads(row["decision"]) if row.get("decision") else None
    timeout = row.get("timeout_decision")
    data["timeout_decision"] = json.loads(timeout) if timeout else None
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

    # -- runs ---------------------------------------------------------------

    async def create_run(self, run: Run) -> Run:
        """Insert a new ``queued`` run and return it as stored."""
        await self.db.execute(
            INSERT_RUN,
            {
                **run.model_dump(
                    include={
                        "agent",
                        "run_id",
                        "thread_id",
                        "task",
                        "channel_id",
                        "user_id",
                        "team_id",
                        "thread_ts",
                    }
                ),
                "state": RunState.QUEUED.value,
                "now": self.clock(),
            },
        )
        return await self.get_run(run.run_id)

    async def get_run(self, run_id: str) -> Run:
        """Return the run ``run_id``.

        Raises:
            KeyError: If there is no such run.
        """
        row = await self.db.fetch_one(SELECT_RUN, {"run_id": run_id})
        if row is None:
            raise KeyError(run_id)
        return run_from_row(row)

    async def latest_run(self) -> Run | None:
        """Return the most recently requested run, if any (the demo watches it)."""
        row = await self.db.fetch_one(SELECT_LATEST_RUN)
        return run_from_row(row) if row else None

    async def claim_run(
        self, run_id: str, *, owner: str, lease_s: float, from_state: RunState
    ) -> Run | None:
        """Take the run for ``owner`` if it is in ``from_state`` or its lease expired.

        Returns:
            The run, now ``running`` under ``owner`` until ``now + lease_s`` seconds, or
            ``None`` if another worker holds it or it moved on.
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
            },
        )
        return run_from_row(row) if row else None

    async def renew_lease(self, run_id: str, *, owner: str, lease_s: float) -> bool:
        """Extend ``owner``'s lease by ``lease_s`` seconds; ``False`` if it lost the run."""
        changed = await self.db.execute(
            RENEW_LEASE, {"run_id": run_id, "owner": owner, "until": self.clock() + lease_s}
        )
        return changed == 1

    async def release_run(
        self,
        run_id: str,
        *,
        owner: str,
        state: RunState,
        final_answer: str | None = None,
        error: str | None = None,
    ) -> None:
        """Leave the run in ``state`` (``waiting``, ``done`` or ``failed``) and drop the lease."""
        await self.db.execute(
            RELEASE_RUN,
            {
                "run_id": run_id,
                "owner": owner,
                "state": state.value,
                "final_answer": final_answer,
                "error": error,
                "now": self.clock(),
            },
        )

    async def set_run_thread_ts(self, run_id: str, thread_ts: str) -> None:
        """Remember the ``ts`` of the run's first Slack message (its ``thread_ts``)."""
        await self.db.execute(SET_RUN_THREAD_TS, {"run_id": run_id, "thread_ts": thread_ts})

    async def startable_runs(self, agent: str = DEFAULT_AGENT) -> list[str]:
        """Return IDs of ``agent``'s queued runs and of its running runs whose lease
        expired, oldest first."""
        rows = await self.db.fetch_all(SELECT_STARTABLE_RUNS, {"now": self.clock(), "agent": agent})
        return [r["run_id"] for r in rows]

    async def next_lease_end(self, agent: str = DEFAULT_AGENT, *, other_than: str) -> float | None:
        """Return when the soonest lease on one of ``agent``'s running runs ends (Unix
        time, seconds), leases of ``other_than`` left out; ``None`` if none is held."""
        row = await self.db.fetch_one(SELECT_NEXT_LEASE_END, {"agent": agent, "owner": other_than})
        value = row["lease_until"] if row else None
        return float(value) if value is not None else None

    async def runs_needing_work(self, agent: str = DEFAULT_AGENT) -> list[str]:
        """Return IDs of ``agent``'s waiting runs with something for a worker to do.

        That is: a decision that can be sent now (per-call, or the last of a batched
        interrupt), or an approval message that was never posted.
        """
        rows = await self.db.fetch_all(SELECT_RUNS_NEEDING_WORK, {"agent": agent})
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
            await self.db.execute(INSERT_REQUEST, self._request_params(request))
            row = await self.db.fetch_one(
                SELECT_REQUEST_BY_KEY, {"interrupt_id": request.interrupt_id, "idx": request.index}
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

    async def pending_requests(self, *, limit: int = 100) -> list[ApprovalRequest]:
        """Return up to ``limit`` posted requests waiting for a reviewer, oldest first."""
        rows = await self.db.fetch_all(SELECT_PENDING_POSTED, {"limit": limit})
        return [request_from_row(r) for r in rows]

    async def set_message(self, request_id: str, *, channel_id: str, message_ts: str) -> None:
        """Remember where the request's Slack message is; a review time limit starts
        counting at the first post."""
        await self.db.execute(
            SET_MESSAGE,
            {
                "request_id": request_id,
                "channel_id": channel_id,
                "message_ts": message_ts,
                "now": self.clock(),
            },
        )

    async def move_message(self, request_id: str, *, old_ts: str, message_ts: str) -> bool:
        """Point the request at its re-posted message, if it is still at ``old_ts``: a
        compare-and-set, so of two processes re-posting one deleted card one wins.

        Returns:
            Whether this call moved it (``False``: someone else re-posted it first).
        """
        params = {"request_id": request_id, "old_ts": old_ts, "message_ts": message_ts}
        return await self.db.execute(MOVE_MESSAGE, params) == 1

    async def record_decision(
        self, request_id: str, decision: Decision, *, user_id: str
    ) -> Recording:
        """Record ``decision`` by ``user_id`` if the request is still pending: one
        compare-and-set, so the first valid decision wins (invariant 2).

        Returns:
            ``Recorded`` if this call recorded it; ``AlreadyDecided`` if it was decided
            before (the request shows by whom, how and when); ``UnknownRequest`` if
            there is no such request.
        """
        row = await self.db.fetch_one(
            RECORD_DECISION,
            {
                "request_id": request_id,
                "decision": decision.model_dump_json(),
                "user_id": user_id,
                "now": self.clock(),
            },
        )
        if row is not None:
            return Recorded(request_from_row(row))
        current = await self.get_request(request_id)
        return UnknownRequest(request_id) if current is None else AlreadyDecided(current)

    async def mark_applied(self, request_ids: Sequence[str]) -> None:
        """Mark decided requests as applied to their ``thread_id``."""
        now = self.clock()
        for request_id in request_ids:
            await self.db.execute(MARK_APPLIED, {"request_id": request_id, "now": now})

    async def reopen(
        self, request_id: str, *, note: str, args_schema: dict[str, Any] | None = None
    ) -> ApprovalRequest | None:
        """Put a decided request back to pending, saying why, so it can be answered again.

        Args:
            request_id: The request.
            note: Why (shown on its card).
            args_schema: The tool's current argument schema, if a deploy changed it.

        Returns:
            The reopened request, or ``None`` if it was not in the ``decided`` state.
        """
        row = await self.db.fetch_one(
            REOPEN_REQUEST,
            {
                "request_id": request_id,
                "note": note,
                "args_schema": json.dumps(args_schema) if args_schema is not None else None,
                "now": self.clock(),
            },
        )
        return request_from_row(row) if row else None

    async def claim_notice(self, run_id: str, key: str) -> bool:
        """Return ``True`` the first time ``key`` is claimed for the run, ``False`` after.

        The worker posts a tool result, a note or the final answer only after claiming
        it, so a resumed graph that replays earlier results never posts them twice.
        """
        changed = await self.db.execute(
            INSERT_NOTICE, {"run_id": run_id, "notice_key": key, "now": self.clock()}
        )
        return changed == 1

    async def due_reminders(self) -> list[ApprovalRequest]:
        """Return posted pending requests past half their review time, not yet reminded."""
        rows = await self.db.fetch_all(SELECT_DUE_REMINDERS, {"now": self.clock()})
        return [request_from_row(r) for r in rows]

    async def mark_reminded(self, request_id: str) -> bool:
        """Claim the request's one reminder; ``False`` if another worker already did."""
        return (
            await self.db.execute(MARK_REMINDED, {"request_id": request_id, "now": self.clock()})
            == 1
        )

    async def unmark_reminded(self, request_id: str) -> None:
        """Forget a reminder whose post failed, so the next sweep posts it."""
        await self.db.execute(UNMARK_REMINDED, {"request_id": request_id})

    async def due_expiries(self) -> list[ApprovalRequest]:
        """Return pending requests whose review time is over."""
        rows = await self.db.fetch_all(SELECT_DUE_EXPIRIES, {"now": self.clock()})
        return [request_from_row(r) for r in rows]

    async def expire(self, request_id: str, *, note: str) -> ApprovalRequest | None:
        """Record the request's timeout decision if it is still pending (compare-and-set,
        like a reviewer's click: whichever comes first wins).

        Returns:
            The expired request, or ``None`` if someone decided it first.
        """
        row = await self.db.fetch_one(
            EXPIRE_REQUEST, {"request_id": request_id, "now": self.clock(), "note": note}
        )
        return request_from_row(row) if row else None

    async def cancel_open_requests(self, run_id: str, *, note: str) -> list[ApprovalRequest]:
        """Close the run's pending and unapplied requests (the run failed); return them."""
        rows = await self.db.fetch_all(
            CANCEL_OPEN_REQUESTS, {"run_id": run_id, "note": note, "now": self.clock()}
        )
        return [request_from_row(r) for r in rows]

    async def intend_notice(self, run_id: str, key: str) -> Notice:
        """Record the intention to post the run's message ``key`` (once; idempotent).

        Returns:
            The intention: ``fresh`` if this call recorded it (no one can have posted
            it yet), and the message's ``ts`` once posted.
        """
        fresh = await self.claim_notice(run_id, key)
        row = await self.db.fetch_one(SELECT_NOTICE, {"run_id": run_id, "notice_key": key})
        assert row is not None  # just inserted or already there
        return Notice(
            key=key,
            fresh=fresh,
            message_ts=row.get("message_ts"),
            created_at=float(row["created_at"]),
        )

    async def set_notice_ts(self, run_id: str, key: str, message_ts: str) -> None:
        """Remember that the run's message ``key`` is in Slack at ``message_ts``."""
        await self.db.execute(
            SET_NOTICE_TS, {"run_id": run_id, "notice_key": key, "message_ts": message_ts}
        )

    async def mark_drawn(self, request_id: str, version: int) -> None:
        """Remember that the request's card shows its state at ``version`` (or later)."""
        await self.db.execute(MARK_DRAWN, {"request_id": request_id, "version": version})

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
        }

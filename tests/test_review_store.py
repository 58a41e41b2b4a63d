"""The store's side of who decides, on PostgreSQL and SQLite: quorum counted per version
of the call, edits that restart it, escalation once, the run-start limit, start rules,
and an audit trail nothing can change."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest

from agent_bridge.audit import AuditKind, read_events
from agent_bridge.backend import open_backend
from agent_bridge.binding import call_hash, version_hash
from agent_bridge.deadline import within
from agent_bridge.errors import StoreRejectedError, StoreTooSlowError
from agent_bridge.models import (
    AlreadyCounted,
    AlreadyDecided,
    ApprovalRequest,
    CallChanged,
    Counted,
    Decision,
    Recorded,
    ReviewRules,
    StartRules,
)
from agent_bridge.policy import Policy
from agent_bridge.sql_risk import analyse
from agent_bridge.store import ApprovalStore
from tests.clocks import ManualClock
from tests.test_store import make_request, make_run


@pytest.fixture(params=["postgres", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ApprovalStore]:
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    backend = await open_backend(url or f"sqlite:///{tmp_path / 'store.db'}")
    await backend.release()
    yield ApprovalStore(backend.db, clock=ManualClock(1_000.0))
    await backend.close()


def quorum_request(required: int = 2, **rules: object) -> ApprovalRequest:
    request = make_request("q1")
    digest = call_hash(
        tool_name=request.tool_name,
        args=request.args,
        thread_id=request.thread_id,
        interrupt_id=request.interrupt_id,
        tool_call_id=None,
    )
    return request.model_copy(
        update={
            "requester_id": "U1",
            "call_hash": digest,
            "rules": ReviewRules(approvers=("S0DBA",), required_approvals=required, **rules),  # type: ignore[arg-type]
        }
    )


async def stored_quorum(store: ApprovalStore, **kwargs: object) -> ApprovalRequest:
    await store.create_run(make_run())
    (request,) = await store.add_requests([quorum_request(**kwargs)])  # type: ignore[arg-type]
    return request


async def test_two_distinct_approvals_decide_and_repeated_clicks_count_once(
    store: ApprovalStore,
) -> None:
    request = await stored_quorum(store)
    assert request.version == version_hash(request.call_hash, None)
    first = await store.approve("q1", user_id="UA", team_id="T1", version=request.version)
    assert isinstance(first, Counted) and first.request.approved_by == ["UA"]
    again = await store.approve("q1", user_id="UA", team_id="T1", version=request.version)
    assert isinstance(again, AlreadyCounted)
    second = await store.approve("q1", user_id="UB", team_id="T1", version=request.version)
    assert isinstance(second, Recorded)
    assert second.request.decision == Decision(type="approve")
    assert second.request.approved_by == ["UA", "UB"] and second.request.decided_by == "UB"
    late = await store.approve("q1", user_id="UC", team_id="T1", version=request.version)
    assert isinstance(late, AlreadyDecided)


async def test_an_earlier_approver_who_left_the_approvers_no_longer_counts(
    store: ApprovalStore,
) -> None:
    request = await stored_quorum(store)
    await store.approve("q1", user_id="UA", team_id="T1", version=request.version)
    outcome = await store.approve(
        "q1", user_id="UB", team_id="T1", version=request.version, still_approvers=frozenset()
    )
    assert isinstance(outcome, Counted) and outcome.request.approved_by == ["UB"]


async def test_concurrent_approvals_of_distinct_people_all_count(store: ApprovalStore) -> None:
    request = await stored_quorum(store, required=3)
    users = ["UA", "UB", "UC"]
    outcomes = await asyncio.gather(
        *(store.approve("q1", user_id=u, team_id="T1", version=request.version) for u in users)
    )
    assert sum(isinstance(o, Recorded) for o in outcomes) == 1
    stored = await store.get_request("q1")
    assert stored is not None and sorted(stored.approved_by) == users
    # an approval whose compare-and-set lost, and was counted again, left no event
    kinds = [e.kind for e in await read_events(store.db) if e.request_id == "q1"]
    assert kinds.count(AuditKind.APPROVED) == 2 and kinds.count(AuditKind.DECIDED) == 1


async def test_an_edit_replaces_the_call_and_restarts_its_approvals(store: ApprovalStore) -> None:
    request = await stored_quorum(store)
    await store.approve("q1", user_id="UA", team_id="T1", version=request.version)
    edit = Decision(type="edit", edited_args={"path": "b.txt", "content": "y"})
    edited = await store.propose_edit(
        "q1", edit, user_id="UB", team_id="T1", version=request.version
    )
    assert isinstance(edited, Counted)
    assert edited.request.approved_by == ["UB"]  # UA approved another call
    assert edited.request.pending_edit == edit
    assert edited.request.current_args == {"path": "b.txt", "content": "y"}
    assert edited.request.version == version_hash(request.call_hash, edit.edited_args)
    stale = await store.approve("q1", user_id="UA", team_id="T1", version=request.version)
    assert isinstance(stale, CallChanged)  # a click on the card drawn before the edit
    fresh = await store.approve("q1", user_id="UA", team_id="T1", version=edited.request.version)
    assert isinstance(fresh, Recorded) and fresh.request.decision == edit
    events = [e for e in await read_events(store.db) if e.request_id == "q1"]
    assert [(e.kind, e.user_id, e.decision) for e in events] == [
        (AuditKind.REQUESTED, None, None),
        (AuditKind.APPROVED, "UA", "approve"),
        (AuditKind.EDITED, "UB", "edit"),
        (AuditKind.DECIDED, "UA", "edit"),
    ]
    assert events[2].edited_args == {"path": "b.txt", "content": "y"}


async def test_a_racing_approval_is_kept_and_only_one_judged_gone_is_dropped(
    store: ApprovalStore,
) -> None:
    """Three approvals needed; UA and UX approved. UB's and UC's clicks read the card at
    once (approved by UA and UX), and the guard judged UX gone (left the approvers): both
    pass ``still_approvers`` {UA}. UC's compare-and-set lands first; UB's is retried on a
    fresh read, where UC's approval, counted after UB's read and authorized by UC's own
    click, stays, and UX's is still dropped."""
    request = await stored_quorum(store, required=3)
    for user_id in ("UA", "UX"):
        await store.approve("q1", user_id=user_id, team_id="T1", version=request.version)
    seen = await store.get_request("q1")  # what both clicks read
    assert seen is not None and seen.approved_by == ["UA", "UX"]
    still = frozenset({"UA"})
    first = await store.approve(
        "q1", user_id="UC", team_id="T1", version=seen.version, still_approvers=still, known=seen
    )
    assert isinstance(first, Counted) and first.request.approved_by == ["UA", "UC"]
    second = await store.approve(
        "q1", user_id="UB", team_id="T1", version=seen.version, still_approvers=still, known=seen
    )
    assert isinstance(second, Recorded)
    assert second.request.approved_by == ["UA", "UC", "UB"]


async def test_with_one_required_approval_an_edit_is_decided_at_once(
    store: ApprovalStore,
) -> None:
    request = await stored_quorum(store, required=1)
    edit = Decision(type="edit", edited_args={"path": "c.txt"})
    outcome = await store.propose_edit(
        "q1", edit, user_id="UA", team_id="T1", version=request.version
    )
    assert isinstance(outcome, Recorded) and outcome.request.decision == edit


async def test_an_edit_told_not_recorded_in_time_was_not_recorded(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edit submitted under the modal's deadline, its row held by another transaction
    until just as the deadline passes: the statement commits before a cancel from the
    client could land. The reviewer is told it was not recorded, so nothing may be (on
    PostgreSQL an approval and its event are one statement: under a deadline it runs in a
    transaction the server bounds, never cancelled from the client)."""
    backend = await open_backend(pg_url)
    await backend.release()
    store = ApprovalStore(backend.db, clock=ManualClock(1_000.0))
    holder = await psycopg.AsyncConnection.connect(pg_url)
    try:
        request = await stored_quorum(store, required=1)
        await holder.execute(  # a transaction holding the row (a sweep, an outcome)
            "SELECT 1 FROM approval_requests WHERE request_id = 'q1' FOR UPDATE"
        )
        cancel = psycopg.AsyncConnection._try_cancel

        async def late_cancel(conn: psycopg.AsyncConnection, *, timeout: float = 5.0) -> None:
            await holder.commit()  # the row is free just as the deadline passes...
            await asyncio.sleep(0.2)  # ...and the statement ends before the cancel
            await cancel(conn, timeout=timeout)

        monkeypatch.setattr(psycopg.AsyncConnection, "_try_cancel", late_cancel)
        edit = Decision(type="edit", edited_args={"path": "c.txt"})
        with pytest.raises(StoreTooSlowError), within(0.3):
            await store.propose_edit(
                "q1", edit, user_id="UA", team_id="T1", version=request.version
            )
        stored = await store.get_request("q1")
        assert stored is not None and stored.state == "pending"
        assert [e.kind for e in await read_events(store.db)] == [AuditKind.REQUESTED]
    finally:
        await holder.close()
        await backend.close()


async def test_escalation_is_due_after_the_first_post_and_happens_once(
    store: ApprovalStore,
) -> None:
    await stored_quorum(store, escalate_to=("S0BACKUP",), escalate_after_s=600.0)
    assert await store.due_escalations() == []  # never posted: no one saw it yet
    await store.set_message("q1", channel_id="C1", message_ts="1.1")
    clock = store.clock
    assert isinstance(clock, ManualClock)
    clock.now += 599
    assert await store.due_escalations() == []
    clock.now += 2
    (due,) = await store.due_escalations()
    escalated = await store.escalate(due.request_id)
    assert escalated is not None and escalated.escalated_at == clock.now
    assert await store.escalate(due.request_id) is None
    assert await store.due_escalations() == []


async def test_a_request_past_its_expiry_is_not_escalated(store: ApprovalStore) -> None:
    request = quorum_request(escalate_to=("S0BACKUP",), escalate_after_s=600.0)
    request = request.model_copy(
        update={"review_timeout_s": 1800.0, "timeout_decision": Decision(type="reject")}
    )
    await store.create_run(make_run())
    await store.add_requests([request])
    await store.set_message("q1", channel_id="C1", message_ts="1.1")
    clock = store.clock
    assert isinstance(clock, ManualClock)
    clock.now += 3600  # an outage: past the escalation and the expiry
    assert await store.due_escalations() == []
    assert [r.request_id for r in await store.due_expiries()] == ["q1"]


async def test_the_audit_trail_refuses_updates_and_deletes(store: ApprovalStore) -> None:
    await stored_quorum(store)
    (event,) = await read_events(store.db)
    for statement in (
        "UPDATE audit_events SET kind = 'decided'",
        "DELETE FROM audit_events",
    ):
        with pytest.raises(StoreRejectedError, match="append-only"):
            await store.db.execute(statement)
    assert await read_events(store.db) == [event]


async def test_the_audit_trail_cannot_be_truncated(pg_url: str) -> None:
    backend = await open_backend(pg_url)
    try:
        with pytest.raises(StoreRejectedError, match="append-only"):
            await backend.db.execute("TRUNCATE audit_events")
    finally:
        await backend.close()


async def test_concurrent_starts_by_one_user_never_pass_the_limit(store: ApprovalStore) -> None:
    runs = [make_run(f"run-{i}") for i in range(30)]
    started = await asyncio.gather(*(store.create_run_within(r, max_active=3) for r in runs))
    assert sum(r is not None for r in started) == 3


async def test_a_user_at_the_run_limit_queues_nothing(store: ApprovalStore) -> None:
    assert await store.create_run_within(make_run("run-1"), max_active=2) is not None
    assert await store.create_run_within(make_run("run-2"), max_active=2) is not None
    assert await store.create_run_within(make_run("run-3"), max_active=2) is None
    other = make_run("run-4").model_copy(update={"user_id": "U2"})
    assert await store.create_run_within(other, max_active=2) is not None
    with pytest.raises(KeyError):
        await store.get_run("run-3")


async def test_start_rules_are_published_by_agent(store: ApprovalStore) -> None:
    assert await store.start_rules("default") is None
    rules = StartRules(requesters=("S0REQ", "U9"), max_active_runs_per_user=3)
    await store.publish_start_rules("default", rules)
    await store.publish_start_rules("dba", StartRules(max_active_runs_per_user=1))
    assert await store.start_rules("default") == rules
    assert await store.start_rules("dba") == StartRules(max_active_runs_per_user=1)


async def test_an_edit_that_makes_a_statement_destructive_needs_what_destructive_needs(
    store: ApprovalStore,
) -> None:
    # Found by a hostile review: an approver edited a SELECT (one approval) into a DELETE
    # (two by the policy) and it was decided by that one person.
    tool = Policy.model_validate(
        {
            "tools": {
                "execute_sql": {
                    "allowed_decisions": ["approve", "edit", "reject"],
                    "approvers": ["S0DBA"],
                    "sql": {"argument": "query", "dialect": "sqlite"},
                    "required_approvals": {
                        "read_only": 1,
                        "write": 2,
                        "destructive": 3,
                        "unparseable": 3,
                    },
                }
            }
        }
    ).gated("execute_sql")
    assert tool is not None
    args = {"query": "SELECT count(*) FROM orders"}
    risk = analyse(args["query"], dialect="sqlite", argument="query")
    request = quorum_request().model_copy(
        update={"tool_name": "execute_sql", "args": args, "risk": risk, "rules": tool.rules(risk)}
    )
    assert request.approvals_required() == 1
    await store.create_run(make_run())
    (stored,) = await store.add_requests([request])
    edit = Decision(type="edit", edited_args={"query": "DELETE FROM orders"})
    first = await store.propose_edit("q1", edit, user_id="UA", team_id="T1", version=stored.version)
    assert isinstance(first, Counted) and first.request.approvals_needed == 2
    version = first.request.version
    second = await store.approve("q1", user_id="UB", team_id="T1", version=version)
    assert isinstance(second, Counted) and second.request.approvals_needed == 1
    third = await store.approve("q1", user_id="UC", team_id="T1", version=version)
    assert isinstance(third, Recorded) and third.request.decision == edit

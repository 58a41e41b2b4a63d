"""The approval store's contract, run against PostgreSQL and SQLite (same SQL, both real)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from agent_bridge import migrations
from agent_bridge.audit import AuditEvent, AuditKind, read_events
from agent_bridge.backend import open_backend
from agent_bridge.errors import SchemaOutdatedError
from agent_bridge.models import (
    AlreadyDecided,
    ApprovalRequest,
    ApprovalState,
    CallChanged,
    Counted,
    Decision,
    Recorded,
    ReviewRules,
    Run,
    RunState,
    UnknownRequest,
)
from agent_bridge.store import ApprovalStore


@pytest.fixture(params=["postgres", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ApprovalStore]:
    if request.param == "postgres":
        url = request.getfixturevalue("pg_url")
    else:
        url = f"sqlite:///{tmp_path / 'store.db'}"
    backend = await open_backend(url)
    await backend.release()
    yield ApprovalStore(backend.db, clock=lambda: 1_000.0)
    await backend.close()


def make_run(run_id: str = "run-1") -> Run:
    return Run(run_id=run_id, thread_id=f"thread-{run_id}", task="t", channel_id="C1", user_id="U1")


def make_request(request_id: str, *, index: int = 0, interrupt_id: str = "i1") -> ApprovalRequest:
    return ApprovalRequest(
        request_id=request_id,
        run_id="run-1",
        thread_id="thread-run-1",
        interrupt_id=interrupt_id,
        index=index,
        batch_size=2,
        tool_name="write_file",
        args={"path": "a.txt", "content": "x"},
        allowed_decisions=["approve", "reject"],
        args_schema={"type": "object"},
        channel_id="C1",
    )


async def test_migrations_twice_are_a_noop(store: ApprovalStore) -> None:
    assert await migrations.setup(store.db) == migrations.LATEST_VERSION
    assert await migrations.current_version(store.db) == migrations.LATEST_VERSION
    await migrations.check_version(store.db)


async def test_an_unmigrated_database_is_refused_with_the_command_to_run(tmp_path: Path) -> None:
    """An empty database is maybe the wrong one: the answer says to check
    ``DATABASE_URL`` before ``release`` creates a store in it; one behind, to run it."""
    backend = await open_backend(f"sqlite:///{tmp_path / 'empty.db'}")
    with pytest.raises(SchemaOutdatedError, match="agent-bridge release") as empty:
        await migrations.check_version(backend.db)
    assert "holds no approval store" in str(empty.value) and "DATABASE_URL" in str(empty.value)
    await migrations.setup(backend.db, migrations.MIGRATIONS[:3])
    with pytest.raises(SchemaOutdatedError, match="schema version 3") as behind:
        await migrations.check_version(backend.db)
    assert "Run `agent-bridge release` first" in str(behind.value)
    await backend.close()


async def test_requests_are_idempotent_on_interrupt_and_index(store: ApprovalStore) -> None:
    await store.create_run(make_run())
    first = await store.add_requests([make_request("r1"), make_request("r2", index=1)])
    again = await store.add_requests([make_request("other1"), make_request("other2", index=1)])
    assert [r.request_id for r in again] == [r.request_id for r in first] == ["r1", "r2"]
    assert len(await store.requests_for_run("run-1")) == 2


async def test_concurrent_decisions_record_exactly_one(store: ApprovalStore) -> None:
    await store.create_run(make_run())
    await store.add_requests([make_request("r1")])
    decisions = [Decision(type="approve"), Decision(type="reject", message="no")] * 5
    outcomes = await asyncio.gather(
        *(store.record_decision("r1", d, user_id=f"U{i}") for i, d in enumerate(decisions))
    )
    winners = [i for i, outcome in enumerate(outcomes) if isinstance(outcome, Recorded)]
    assert len(winners) == 1
    (index,) = winners
    stored = await store.get_request("r1")
    assert stored is not None and stored.state == ApprovalState.DECIDED
    assert stored.decided_by == f"U{index}" and stored.decision == decisions[index]
    losers = [o for o in outcomes if not isinstance(o, Recorded)]
    assert len(losers) == 9 and all(isinstance(o, AlreadyDecided) for o in losers)
    assert all(
        o.request.decided_by == f"U{index}" for o in outcomes if not isinstance(o, UnknownRequest)
    )


async def test_a_decision_on_a_call_edited_since_is_not_recorded(store: ApprovalStore) -> None:
    """A Reject, Respond or Ignore is recorded only on the call's version its card or
    form showed: an edit proposed meanwhile (quorum: pending, a new version) wins, the
    late click is told the call changed, and nothing of it is recorded."""
    await store.create_run(make_run())
    two = make_request("r1").model_copy(update={"rules": ReviewRules(required_approvals=2)})
    (request,) = await store.add_requests([two])
    edit = Decision(type="edit", edited_args={"path": "b.txt", "content": "y"})
    proposed = await store.propose_edit(
        "r1", edit, user_id="U1", team_id=None, version=request.version
    )
    assert isinstance(proposed, Counted)  # one of two: the edit waits, a new version
    edited = proposed.request
    assert edited.state == ApprovalState.PENDING and edited.version != request.version
    late = await store.record_decision(
        "r1", Decision(type="reject"), user_id="U2", version=request.version
    )
    assert isinstance(late, CallChanged) and late.request.version == edited.version
    assert await store.get_request("r1") == edited  # nothing recorded
    now = await store.record_decision(
        "r1", Decision(type="reject"), user_id="U2", version=edited.version
    )
    assert isinstance(now, Recorded) and now.request.decided_by == "U2"


async def test_unknown_request_is_neither_won_nor_found(store: ApprovalStore) -> None:
    assert await store.record_decision(
        "nope", Decision(type="approve"), user_id="U1"
    ) == UnknownRequest("nope")


async def test_a_run_is_claimed_by_one_worker_until_its_lease_expires(store: ApprovalStore) -> None:
    now = [1_000.0]
    store.clock = lambda: now[0]
    await store.create_run(make_run())
    assert await store.startable_runs() == ["run-1"]
    claimed = await store.claim_run("run-1", owner="a", lease_s=10, from_state=RunState.QUEUED)
    assert claimed is not None and claimed.state == RunState.RUNNING
    assert await store.claim_run("run-1", owner="b", lease_s=10, from_state=RunState.QUEUED) is None
    now[0] += 11
    assert await store.startable_runs() == ["run-1"]
    assert await store.claim_run("run-1", owner="b", lease_s=10, from_state=RunState.QUEUED)
    assert await store.renew_leases(["run-1"], owner="a", lease_s=10) == set()
    assert await store.renew_leases(["run-1", "run-2"], owner="b", lease_s=10) == {"run-1"}


async def test_a_runs_drives_in_a_row_are_counted_by_each_claim_until_set(
    store: ApprovalStore,
) -> None:
    """Each claim counts its drive in ``drives_in_a_row`` (an expired lease's too); a
    release sets it (``drives_in_a_row=n``) or keeps it; only the lease's owner sets it."""
    now = [1_000.0]
    store.clock = lambda: now[0]
    await store.create_run(make_run())
    claimed = await store.claim_run("run-1", owner="a", lease_s=10, from_state=RunState.QUEUED)
    assert claimed is not None and claimed.drives_in_a_row == 1
    now[0] += 11  # a dies holding it
    claimed = await store.claim_run("run-1", owner="b", lease_s=10, from_state=RunState.QUEUED)
    assert claimed is not None and claimed.drives_in_a_row == 2
    await store.release_run("run-1", owner="a", state=RunState.QUEUED, drives_in_a_row=0)
    await store.release_run("run-1", owner="b", state=RunState.QUEUED)  # kept
    claimed = await store.claim_run("run-1", owner="c", lease_s=10, from_state=RunState.QUEUED)
    assert claimed is not None and claimed.drives_in_a_row == 3
    await store.release_run("run-1", owner="c", state=RunState.WAITING, drives_in_a_row=0)
    assert (await store.get_run("run-1")).drives_in_a_row == 0


async def test_a_run_is_found_by_its_thread_id(store: ApprovalStore) -> None:
    """``run_of_thread``: the run of a LangGraph ``thread_id`` (what ``agent-bridge attach``
    and the paused-threads sweep ask), or none."""
    run = await store.create_run(make_run())
    found = await store.run_of_thread(run.thread_id)
    assert found is not None and found.run_id == "run-1"
    assert await store.run_of_thread("no-such-thread") is None


async def test_batched_run_needs_work_only_when_its_interrupt_is_fully_decided(
    store: ApprovalStore,
) -> None:
    await store.create_run(make_run())
    await store.claim_run("run-1", owner="a", lease_s=10, from_state=RunState.QUEUED)
    await store.release_run("run-1", owner="a", state=RunState.WAITING)
    await store.add_requests([make_request("r1"), make_request("r2", index=1)])
    assert await store.runs_needing_work() == ["run-1"]  # messages not posted yet
    for request_id in ("r1", "r2"):
        await store.set_message(request_id, channel_id="C1", message_ts=f"1.{request_id}")
    assert await store.runs_needing_work() == []
    await store.record_decision("r1", Decision(type="approve"), user_id="U1")
    assert await store.runs_needing_work() == []
    states = [r.state for r in await store.requests_for_interrupt("i1")]
    assert states == [ApprovalState.DECIDED, ApprovalState.PENDING]
    await store.record_decision("r2", Decision(type="approve"), user_id="U1")
    assert await store.runs_needing_work() == ["run-1"]
    await store.mark_applied(["r1", "r2"])
    assert await store.runs_needing_work() == []
    assert {r.state for r in await store.requests_for_run("run-1")} == {ApprovalState.APPLIED}


def event_fields(event: AuditEvent) -> dict[str, object]:
    """An audit event without what differs between two writings of it (its ID and time)."""
    return event.model_dump(exclude={"event_id", "at"})


async def decided_call(
    store: ApprovalStore, request_id: str, decision: Decision
) -> ApprovalRequest:
    """A request of tool call ``call-<request_id>`` with a secret argument, decided."""
    request = make_request(request_id, interrupt_id=f"i-{request_id}").model_copy(
        update={"tool_call_id": f"call-{request_id}", "args": {"path": "a", "api_key": "s3"}}
    )
    await store.add_requests([request])
    recorded = await store.record_decision(request_id, decision, user_id="U2")
    assert isinstance(recorded, Recorded)
    return recorded.request


async def test_a_result_and_applied_written_from_a_copy_match_those_written_from_a_read(
    store: ApprovalStore,
) -> None:
    """The worker hands ``record_outcome`` and ``mark_applied`` the requests it read
    (``known``): written from that copy, the rows and audit events are the ones the
    store writes after reading the request itself."""
    await store.create_run(make_run())
    edit = Decision(type="edit", edited_args={"path": "b", "api_key": "s4"})
    events: dict[str, list[AuditEvent]] = {}
    for request_id, as_read in (("r1", True), ("r2", False)):
        read = await decided_call(store, request_id, edit)
        outcome = await store.record_outcome(
            "run-1", f"call-{request_id}", ok=True, content="done", known=read if as_read else None
        )
        assert outcome is not None and outcome.result is not None
        assert outcome.revision == read.revision + 1
        await store.mark_applied([request_id], known={request_id: outcome} if as_read else None)
        events[request_id] = [e for e in await read_events(store.db) if e.request_id == request_id][
            -2:
        ]
    assert [e.kind for e in events["r1"]] == [AuditKind.OUTCOME, AuditKind.APPLIED]
    assert [event_fields(e) for e in events["r1"]] == [
        {**event_fields(e), "request_id": "r1", "interrupt_id": "i-r1", "tool_call_id": "call-r1"}
        for e in events["r2"]
    ]
    assert events["r1"][1].edited_args == {"path": "b", "api_key": "•••• (redacted, changed)"}
    applied = {r.request_id: r for r in await store.requests_for_run("run-1")}
    assert {r.state for r in applied.values()} == {ApprovalState.APPLIED}
    assert applied["r1"].result == applied["r2"].result


@pytest.mark.parametrize("posted", [True, False])
async def test_a_reissued_call_takes_its_time_limit_as_it_is_now(
    store: ApprovalStore, posted: bool
) -> None:
    """A reopen for a reissued call (a deploy changed its decisions) writes the call's
    time limit as the policy now sets it: a posted card's counts from the reopen, an
    unposted one's from its post; a call with no limit now gets none."""
    await store.create_run(make_run())
    request = make_request("r1").model_copy(
        update={"review_timeout_s": 60.0, "timeout_decision": Decision(type="reject")}
    )
    await store.add_requests([request])
    if posted:
        await store.set_message("r1", channel_id="C1", message_ts="1.1")
    assert isinstance(
        await store.record_decision("r1", Decision(type="reject"), user_id="U2"), Recorded
    )
    now = request.model_copy(
        update={
            "allowed_decisions": ["approve", "respond"],
            "review_timeout_s": 120.0,
            "timeout_decision": Decision(type="respond", message="no one answered"),
        }
    )
    reopened = await store.reopen("r1", note="reissued", reissued=now)
    assert reopened is not None
    assert reopened.review_timeout_s == 120.0
    assert reopened.timeout_decision == Decision(type="respond", message="no one answered")
    if posted:
        assert reopened.expires_at is not None
        assert abs(reopened.expires_at - (store.clock() + 120.0)) < 5
    else:
        assert reopened.expires_at is None

    await store.record_decision("r1", Decision(type="approve"), user_id="U2")
    unlimited = now.model_copy(update={"review_timeout_s": None, "timeout_decision": None})
    cleared = await store.reopen("r1", note="reissued", reissued=unlimited)
    assert cleared is not None
    assert (cleared.review_timeout_s, cleared.timeout_decision, cleared.expires_at) == (
        None,
        None,
        None,
    )


async def test_a_stale_copy_is_not_what_the_result_and_applied_events_say(
    store: ApprovalStore,
) -> None:
    """A copy read before the request changed (reopened for a reissued call, then decided
    again by someone else) must not write the old call or decision: the store reads the
    request as it changes instead."""
    await store.create_run(make_run())
    stale = await decided_call(store, "r1", Decision(type="approve"))
    reissued = stale.model_copy(update={"args": {"path": "z", "api_key": "s5"}})
    assert await store.reopen("r1", note="reissued", reissued=reissued) is not None
    again = await store.record_decision("r1", Decision(type="reject", message="no"), user_id="U3")
    assert isinstance(again, Recorded)

    outcome = await store.record_outcome("run-1", "call-r1", ok=False, content="x", known=stale)
    assert outcome is not None and outcome.result is not None
    await store.mark_applied(["r1"], known={"r1": stale})
    *_, result, applied = [e for e in await read_events(store.db) if e.request_id == "r1"]
    assert (result.kind, applied.kind) == (AuditKind.OUTCOME, AuditKind.APPLIED)
    assert (
        result.proposed_args
        == applied.proposed_args
        == {
            "path": "z",
            "api_key": "•••• (redacted)",
        }
    )
    assert (applied.decision, applied.reason) == ("reject", "no")
    (marked,) = await store.requests_for_run("run-1")
    assert marked.state == ApprovalState.APPLIED


async def test_a_copy_with_a_result_records_no_other(store: ApprovalStore) -> None:
    """A result is recorded once: a replayed one, whose copy already has it, changes
    nothing and appends no event, as one whose copy was read before it was recorded."""
    await store.create_run(make_run())
    read = await decided_call(store, "r1", Decision(type="approve"))
    first = await store.record_outcome("run-1", "call-r1", ok=True, content="a", known=read)
    assert first is not None
    before = await read_events(store.db)
    assert await store.record_outcome("run-1", "call-r1", ok=True, content="b", known=first) is None
    assert await store.record_outcome("run-1", "call-r1", ok=True, content="c", known=read) is None
    assert await read_events(store.db) == before
    (request,) = await store.requests_for_run("run-1")
    assert request.result == first.result


async def test_a_review_time_limit_counts_from_the_first_post(store: ApprovalStore) -> None:
    now = [1_000.0]
    store.clock = lambda: now[0]
    await store.create_run(make_run())
    request = make_request("r1").model_copy(
        update={
            "review_timeout_s": 60.0,
            "timeout_decision": Decision(type="reject", message="late"),
        }
    )
    await store.add_requests([request])
    now[0] += 3600  # an hour unposted (Slack down): no one could have decided it
    assert await store.due_expiries() == [] and await store.due_reminders() == []
    await store.set_message("r1", channel_id="C1", message_ts="1.1")
    await store.set_message("r1", channel_id="C1", message_ts="1.2")  # a re-post: same limit
    now[0] += 31
    assert [r.request_id for r in await store.due_reminders()] == ["r1"]
    now[0] += 30
    (due,) = await store.due_expiries()
    assert due.expires_at == 1_000.0 + 3600 + 60
    assert await store.due_reminders() == []  # past its limit: expire it, do not remind
    expired = await store.expire("r1", note="Expired")
    assert expired is not None and expired.decision == Decision(type="reject", message="late")
    assert await store.expire("r1", note="Expired") is None  # once


async def test_only_a_pending_request_is_marked_reminded_and_only_a_mark_is_taken_back(
    store: ApprovalStore,
) -> None:
    """A request decided between ``due_reminders`` and ``mark_reminded`` gets no
    reminder, so it is not marked as having had one (reopened, it would say "Reminder
    sent" and never be reminded); taking back a mark that was never made changes nothing
    (its card would be redrawn for no change)."""
    await store.create_run(make_run())
    request = make_request("r1").model_copy(
        update={"review_timeout_s": 60.0, "timeout_decision": Decision(type="reject")}
    )
    await store.add_requests([request])
    await store.set_message("r1", channel_id="C1", message_ts="1.1")
    await store.unmark_reminded("r1")
    unmarked = await store.get_request("r1")
    assert unmarked is not None and unmarked.revision == 0  # nothing to take back
    await store.record_decision("r1", Decision(type="approve"), user_id="U1")
    assert not await store.mark_reminded("r1")
    decided = await store.get_request("r1")
    assert decided is not None and decided.reminded_at is None and decided.revision == 1


async def test_a_reopened_request_gets_a_new_review_window(store: ApprovalStore) -> None:
    """A request whose time ran out (its timeout decision recorded) is reopened: the
    call changed, or the graph refused the answer. It is a new question, so its time
    limit counts again from the reopen: never expired at once, its timeout decision
    (here an approval) applied to a call nobody saw; and it is reminded in the new
    window."""
    now = [1_000.0]
    store.clock = lambda: now[0]
    await store.create_run(make_run())
    request = make_request("r1").model_copy(
        update={"review_timeout_s": 60.0, "timeout_decision": Decision(type="approve")}
    )
    await store.add_requests([request])
    await store.set_message("r1", channel_id="C1", message_ts="1.1")
    now[0] += 31
    assert await store.mark_reminded("r1")
    now[0] += 30
    assert await store.expire("r1", note="Expired") is not None
    now[0] += 5
    reopened = await store.reopen("r1", note="The call changed")
    assert reopened is not None and reopened.expires_at == now[0] + 60
    assert reopened.reminded_at is None
    assert await store.due_expiries() == []
    now[0] += 31
    assert [r.request_id for r in await store.due_reminders()] == ["r1"]


async def test_an_intention_is_recorded_once_and_keeps_its_ts(store: ApprovalStore) -> None:
    await store.create_run(make_run())
    first = await store.intend_notice("run-1", "tool:c1")
    again = await store.intend_notice("run-1", "tool:c1")
    assert (first.fresh, first.message_ts, again.fresh, again.message_ts) == (
        True,
        None,
        False,
        None,
    )  # again: someone may have posted it and died before saying where
    await store.set_notice_ts("run-1", "tool:c1", "1.000100")
    assert (await store.intend_notice("run-1", "tool:c1")).message_ts == "1.000100"


async def _recorded_ts(store: ApprovalStore, run_id: str) -> dict[str, str | None]:
    """The run's notices as the database has them: key -> ``ts`` (read by another
    store, which knows nothing left for a release)."""
    other = ApprovalStore(store.db)
    return {
        key: (await other.intend_notice(run_id, key)).message_ts
        for key in ("tool:c1", "tool:c2", "answer")
    }


async def test_a_drives_message_ts_is_recorded_by_the_runs_release(store: ApprovalStore) -> None:
    """A drive's messages' ``ts`` wait for the run's release (a statement less each),
    which records them though the lease was lost meanwhile: where a message is, is
    true either way; this store answers from what it holds before that."""
    await store.create_run(make_run())
    await store.claim_run("run-1", owner="a", lease_s=10, from_state=RunState.QUEUED)
    for key in ("tool:c1", "tool:c2", "answer"):
        await store.intend_notice("run-1", key)
    await store.set_notice_ts("run-1", "tool:c1", "1.000100", at_release=True)
    await store.set_notice_ts("run-1", "tool:c2", "1.000200", at_release=True)
    assert await _recorded_ts(store, "run-1") == {"tool:c1": None, "tool:c2": None, "answer": None}
    held = await store.intend_notice("run-1", "tool:c1")
    assert (held.fresh, held.message_ts) == (False, "1.000100")

    await store.release_run("run-1", owner="b", state=RunState.WAITING)  # not b's lease
    assert await _recorded_ts(store, "run-1") == {
        "tool:c1": "1.000100",
        "tool:c2": "1.000200",
        "answer": None,
    }
    assert (await store.get_run("run-1")).state == RunState.RUNNING  # a's still

    trips = REGISTRY.get_sample_value("agent_bridge_database_round_trips_total") or 0.0
    await store.set_notice_ts("run-1", "answer", "1.000300", at_release=True)
    await store.release_run("run-1", owner="a", state=RunState.DONE, final_answer="ok")
    if store.db.dialect == "postgres":  # the ts and the release: one statement
        after = REGISTRY.get_sample_value("agent_bridge_database_round_trips_total") or 0.0
        assert after - trips == 1
    assert (await _recorded_ts(store, "run-1"))["answer"] == "1.000300"
    assert (await store.get_run("run-1")).state == RunState.DONE


async def test_a_failed_runs_release_records_its_drives_message_ts(store: ApprovalStore) -> None:
    await store.create_run(make_run())
    await store.claim_run("run-1", owner="a", lease_s=10, from_state=RunState.QUEUED)
    await store.intend_notice("run-1", "tool:c1")
    await store.set_notice_ts("run-1", "tool:c1", "1.000100", at_release=True)
    await store.fail_run("run-1", owner="a", error="boom", note="The run failed")
    assert (await _recorded_ts(store, "run-1"))["tool:c1"] == "1.000100"
    assert (await store.get_run("run-1")).state == RunState.FAILED


async def test_a_drive_ended_without_a_release_leaves_its_messages_to_be_found(
    store: ApprovalStore,
) -> None:
    """A drive that was not released (lease lost, database down) forgets what it held:
    the intentions stay without a ``ts``, and the next drive looks in Slack first."""
    await store.create_run(make_run())
    await store.claim_run("run-1", owner="a", lease_s=10, from_state=RunState.QUEUED)
    await store.intend_notice("run-1", "tool:c1")
    await store.set_notice_ts("run-1", "tool:c1", "1.000100", at_release=True)
    store.forget_notices_ts("run-1")
    found = await store.intend_notice("run-1", "tool:c1")
    assert (found.fresh, found.message_ts) == (False, None)
    await store.release_run("run-1", owner="a", state=RunState.QUEUED)
    assert (await _recorded_ts(store, "run-1"))["tool:c1"] is None


async def test_a_runs_posted_notices_are_those_whose_ts_is_known(store: ApprovalStore) -> None:
    """Recorded, or left for the release through this store; not an intention alone
    (its message may not be in Slack), nor another run's."""
    await store.create_run(make_run())
    await store.create_run(make_run("run-2"))
    for key in ("tool:c1", "tool:c2", "tool:c3"):
        await store.intend_notice("run-1", key)
    await store.intend_notice("run-2", "tool:c9")
    await store.set_notice_ts("run-1", "tool:c1", "1.000100")
    await store.set_notice_ts("run-1", "tool:c2", "1.000200", at_release=True)
    await store.set_notice_ts("run-2", "tool:c9", "1.000900")
    assert await store.posted_notices("run-1") == {"tool:c1", "tool:c2"}
    assert await ApprovalStore(store.db).posted_notices("run-1") == {"tool:c1"}


NUL_KEY = "tool:call\x00id"
"""A notice key with a NUL: a tool call ID from a hostile model."""


@pytest.mark.parametrize("at_release", [False, True])
async def test_a_nul_in_a_notice_key_does_not_stop_its_ts_or_the_release(
    store: ApprovalStore, at_release: bool
) -> None:
    """JSON carries a NUL as an escape jsonb refuses: the release would fail and the run
    stay leased; such a key is recorded on its own, as its intention was."""
    await store.create_run(make_run())
    await store.claim_run("run-1", owner="a", lease_s=10, from_state=RunState.QUEUED)
    for key in ("tool:ok", NUL_KEY):
        await store.intend_notice("run-1", key)
    await store.set_notice_ts("run-1", "tool:ok", "1.000100", at_release=at_release)
    await store.set_notice_ts("run-1", NUL_KEY, "1.000200", at_release=at_release)
    await store.release_run("run-1", owner="a", state=RunState.DONE, final_answer="ok")
    assert (await store.get_run("run-1")).state == RunState.DONE
    other = ApprovalStore(store.db)
    assert (await other.intend_notice("run-1", "tool:ok")).message_ts == "1.000100"
    assert (await other.intend_notice("run-1", NUL_KEY)).message_ts == "1.000200"


async def test_a_failing_that_rolls_back_keeps_the_drives_ts_for_the_next_release(
    store: ApprovalStore,
) -> None:
    """The ``ts`` left for a release are forgotten only once it is committed."""
    await store.create_run(make_run())
    await store.add_requests([make_request("r1")])
    await store.claim_run("run-1", owner="a", lease_s=10, from_state=RunState.QUEUED)
    await store.intend_notice("run-1", "tool:c1")
    await store.set_notice_ts("run-1", "tool:c1", "1.000100", at_release=True)

    def note_for(request: ApprovalRequest) -> str | None:
        raise RuntimeError("the transaction fails after the release statement")

    with pytest.raises(RuntimeError):
        await store.fail_run("run-1", owner="a", error="e", note="n", note_for=note_for)
    assert (await store.get_run("run-1")).state == RunState.RUNNING  # rolled back
    await store.release_run("run-1", owner="a", state=RunState.QUEUED)
    assert (await _recorded_ts(store, "run-1"))["tool:c1"] == "1.000100"


async def test_a_card_that_lags_its_state_is_listed_until_drawn(store: ApprovalStore) -> None:
    now = [1_000.0]
    store.clock = lambda: now[0]
    await store.create_run(make_run())
    await store.add_requests([make_request("r1")])
    await store.set_message("r1", channel_id="C1", message_ts="1.000001")
    assert await store.undrawn_cards(changed_before=now[0] + 1, limit=10) == []
    await store.record_decision("r1", Decision(type="approve"), user_id="U1")
    assert await store.undrawn_cards(changed_before=now[0] - 1, limit=10) == []  # too recent
    (lagging,) = await store.undrawn_cards(changed_before=now[0] + 1, limit=10)
    assert (lagging.revision, lagging.drawn_revision) == (1, 0)
    await store.add_requests([make_request("r2", index=1)])
    # the mark reads its batch's revisions after it (did the batch change while drawn?)
    assert await store.mark_drawn(lagging) == {"r1": 1, "r2": 0}
    older = lagging.model_copy(update={"revision": 0})
    assert await store.mark_drawn(older) == {"r1": 1, "r2": 0}  # it never lowers the mark
    assert await store.undrawn_cards(changed_before=now[0] + 1, limit=10) == []
    current = await store.get_request("r1")
    assert current is not None and current.drawn_revision == 1


async def test_why_edit_is_withheld_is_stored_and_replaced_by_a_reissued_call(
    store: ApprovalStore,
) -> None:
    await store.create_run(make_run())
    shared = make_request("r1").model_copy(update={"edit_withheld": "shared_call_id"})
    await store.add_requests([shared])
    assert (await store.get_request("r1")).edit_withheld == "shared_call_id"  # type: ignore[union-attr]
    await store.record_decision("r1", Decision(type="approve"), user_id="U2")
    reopened = await store.reopen("r1", note="the reason only")  # not reissued: kept
    assert reopened is not None and reopened.edit_withheld == "shared_call_id"
    await store.record_decision("r1", Decision(type="approve"), user_id="U2")
    own = shared.model_copy(update={"edit_withheld": None, "args": {"path": "b.txt"}})
    reissued = await store.reopen("r1", note="reissued", reissued=own)
    assert reissued is not None and reissued.edit_withheld is None

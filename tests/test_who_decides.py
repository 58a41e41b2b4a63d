"""Only the people the policy names decide, end to end through the sandbox.

For every click and modal submission, someone not allowed (not an approver, the
requester, a user of another workspace, a click naming another request than its card,
a submission for a view not opened for that user and request) changes nothing, is told
why, and the refusal is in the audit trail. Quorum, routing to #approvals with a pointer
in the run's thread, escalation on a clock the test controls, user-group changes and
fail-closed group reads.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from agent_bridge import review_wording
from agent_bridge.audit import AuditKind, read_events
from agent_bridge.models import (
    ApprovalRequest,
    ApprovalState,
    DecisionType,
    Recorded,
    Run,
    RunState,
)
from agent_bridge.scripted_model import DEMO_TASK
from agent_bridge.settings import WorkerConfig
from bot import ids
from bot.actions import DECISION_DB_S
from bot.directory import Directory
from slack_sandbox import BotUnreachable, live_mentions
from tests.clocks import ManualClock
from tests.harness import DBA, REQUESTER, REVIEWER, Harness

FIXTURES = Path(__file__).parent / "fixtures"
APPROVALS = "C0APPROVAL"
SECOND_DBA = "U0DBA2"
OUTSIDER = "U0OUTSIDER"
GUEST = "U0GUEST"
"""A Slack Connect user of another workspace, in the run's channel."""
BACKUP = "U0BACKUP"
TWO_WRITES = {
    "tool_calls": [
        {"name": "write_file", "args": {"path": "a.txt", "content": "A"}},
        {"name": "write_file", "args": {"path": "b.txt", "content": "B"}},
    ]
}
VALUES: dict[str, dict[str, Any]] = {
    "edit": {},  # the prefilled form, untouched
    "reject": {ids.REASON_BLOCK: "no"},
    "respond": {ids.ANSWER_BLOCK: "an answer"},
}


@pytest.fixture
def agent_settings(settings: WorkerConfig) -> WorkerConfig:
    return settings.model_copy(update={"policy": FIXTURES / "dba_policy.yml"})


async def people(harness: Harness, *, dbas: list[str] | None = None) -> None:
    """The sandbox's people: two DBAs in ``S0DBA``, a backup group, an outsider, a guest."""
    sandbox = harness.sandbox
    for user_id in (SECOND_DBA, OUTSIDER, BACKUP):
        sandbox.add_user(user_id, user_id.lower())
    sandbox.add_user(GUEST, "guest", team_id="T0OTHER")
    await sandbox.set_usergroup("S0DBA", "dba-team", [DBA, SECOND_DBA] if dbas is None else dbas)
    await sandbox.set_usergroup("S0BACKUP", "dba-backup", [BACKUP])


async def told(harness: Harness, user_id: str, text: str) -> dict[str, Any]:
    """Wait for a private answer to ``user_id`` containing ``text``."""

    async def found() -> dict[str, Any] | None:
        notes = harness.sandbox.ephemerals(user_id=user_id)
        return next((n for n in notes if text in n.get("text", "")), None)

    return await harness.wait_for(found)


async def current(harness: Harness, request: ApprovalRequest) -> ApprovalRequest:
    stored = await harness.store.get_request(request.request_id)
    assert stored is not None
    return stored


async def refusals(harness: Harness, request: ApprovalRequest) -> list[tuple[str | None, str]]:
    events = await read_events(harness.store.db)
    return [
        (e.user_id, e.detail or "")
        for e in events
        if e.kind == AuditKind.REFUSED and e.request_id == request.request_id
    ]


def card_of(harness: Harness, request: ApprovalRequest) -> dict[str, Any]:
    return harness.sandbox.message(request.channel_id or "", request.message_ts or "")


def button_value(harness: Harness, request: ApprovalRequest, decision: DecisionType) -> str:
    for block in card_of(harness, request)["blocks"]:
        for element in block.get("elements") or []:
            if element.get("action_id") == ids.decision_action_id(decision):
                return str(element["value"])
    raise AssertionError(f"no {decision} button on the card of {request.request_id}")


@pytest.mark.parametrize("decision", ["approve", "edit", "reject", "respond"])
async def test_a_click_by_someone_not_allowed_records_nothing_and_says_why(
    harness: Harness, decision: DecisionType
) -> None:
    await people(harness)
    run = await harness.start_run(TWO_WRITES)
    first, _ = await harness.requests(run, count=2)
    cases = [(OUTSIDER, "not an approver"), (GUEST, "another Slack workspace")]
    if decision != "reject":  # rejecting one's own run stays allowed
        cases.append((REQUESTER, "You started this run"))
    for user_id, why in cases:
        assert (await harness.click(first, decision, user_id=user_id))[0] == 200
        note = await told(harness, user_id, why)
        assert "Nothing was recorded" in note["text"]
    stored = await current(harness, first)
    assert stored.state == ApprovalState.PENDING and stored.approved_by == []
    assert all(harness.sandbox.open_views(u) == [] for u, _ in cases)  # no form was opened
    assert sorted(await refusals(harness, first)) == sorted((u, decision) for u, _ in cases)


async def test_a_request_with_no_workspace_is_decided_by_nobody(harness: Harness) -> None:
    """A legacy request whose run had no workspace for the backfill to copy
    (``migrations.BACKFILL_REQUEST_TEAMS``): every click is refused and says why."""
    await people(harness)
    run = await harness.start_run(TWO_WRITES)
    first, _ = await harness.requests(run, count=2)
    await harness.store.db.execute(
        "UPDATE approval_requests SET team_id = NULL WHERE request_id = :id",
        {"id": first.request_id},
    )
    for decision in ("approve", "reject"):
        assert (await harness.click(first, decision, user_id=DBA))[0] == 200
    note = await told(harness, DBA, "stored before requests kept their Slack workspace")
    assert "Nothing was recorded" in note["text"]
    await harness.wait_for(lambda: _refused_twice(harness, first))
    stored = await current(harness, first)
    assert stored.state == ApprovalState.PENDING and stored.approved_by == []


async def _refused_twice(harness: Harness, request: ApprovalRequest) -> bool:
    return len(await refusals(harness, request)) == 2


@pytest.mark.parametrize("decision", ["approve", "edit", "reject", "respond"])
async def test_a_click_naming_another_request_than_its_card_is_refused(
    harness: Harness, decision: DecisionType
) -> None:
    await people(harness)
    run = await harness.start_run(TWO_WRITES)
    first, second = await harness.requests(run, count=2)
    assert first.channel_id and first.message_ts
    await harness.sandbox.click(
        channel_id=first.channel_id,
        ts=first.message_ts,
        action_id=ids.decision_action_id(decision),
        user_id=DBA,
        forged_value=button_value(harness, second, decision),
    )
    await told(harness, DBA, "does not belong to this request's current card")
    for request in (first, second):
        assert (await current(harness, request)).state == ApprovalState.PENDING
    assert harness.sandbox.open_views(DBA) == []
    assert await refusals(harness, second) == [(DBA, decision)]


@pytest.mark.parametrize("decision", ["edit", "reject", "respond"])
async def test_a_submission_for_a_view_not_opened_for_that_user_and_request_is_refused(
    harness: Harness, decision: DecisionType
) -> None:
    await people(harness)
    run = await harness.start_run(TWO_WRITES)
    first, second = await harness.requests(run, count=2)
    view = await harness.open_modal(first, decision, user_id=DBA)
    other = await harness.open_modal(second, decision, user_id=SECOND_DBA)
    forgeries = [
        (SECOND_DBA, view),  # another approver submits DBA's form
        (GUEST, view),  # so does a user of another workspace
        (REQUESTER, view),  # and the requester
        (DBA, {**view, "id": "V0FORGED"}),  # DBA's form, another view ID
        (DBA, {**view, "private_metadata": other["private_metadata"]}),  # another's key
        (DBA, {**view, "private_metadata": "made-up-key"}),
    ]
    for user_id, forged in forgeries:
        status, body = await harness.sandbox.submit_unopened_view(
            user_id=user_id, view=forged, values=VALUES[decision]
        )
        assert status == 200 and body is not None
        assert "was not opened for you" in json.dumps(body["errors"]), (user_id, body)
    for request in (first, second):
        stored = await current(harness, request)
        assert stored.state == ApprovalState.PENDING and stored.approved_by == []
    refused = await refusals(harness, first) + await refusals(harness, second)
    assert len(refused) == len(forgeries) - 1  # the made-up key names no request
    # DBA's own form, as opened, still works: the refusals were about the binding.
    status, body = await harness.sandbox.submit_view(
        view_id=view["id"], user_id=DBA, values=VALUES[decision]
    )
    assert status == 200 and not body, body
    assert (await harness.decided(first)).decided_by == DBA


@pytest.mark.parametrize("decision", ["edit", "reject", "respond"])
async def test_an_approver_removed_after_opening_a_form_cannot_submit_it(
    harness: Harness, decision: DecisionType
) -> None:
    await people(harness)
    run = await harness.start_run(TWO_WRITES)
    first, _ = await harness.requests(run, count=2)
    view = await harness.open_modal(first, decision, user_id=SECOND_DBA)
    assert await harness.sandbox.set_usergroup("S0DBA", "dba-team", [DBA]) == (200, "")
    status, body = await harness.sandbox.submit_view(
        view_id=view["id"], user_id=SECOND_DBA, values=VALUES[decision]
    )
    assert status == 200 and body is not None and "not an approver" in json.dumps(body)
    assert (await current(harness, first)).state == ApprovalState.PENDING


async def test_the_requester_may_reject_their_own_run(harness: Harness) -> None:
    await people(harness)
    run = await harness.start_run(TWO_WRITES)
    first, second = await harness.requests(run, count=2)
    await harness.reject(first, "changed my mind", user_id=REQUESTER)
    assert (await harness.decided(first)).decided_by == REQUESTER
    await harness.click(second, "approve", user_id=DBA)
    assert (await harness.finished(run)).state == RunState.DONE
    assert not (harness.settings.workspace_dir / "files/a.txt").exists()


async def test_two_dbas_must_approve_and_one_persons_clicks_count_once(
    harness: Harness,
) -> None:
    await people(harness)
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    assert (sql.channel_id, sql.thread_ts) == (APPROVALS, None)  # routed, top level
    card = card_of(harness, sql)
    # The approvers are notified: the card's only live mention is their group (beside the
    # product's own link to the run's Slack thread).
    thread_link = (await harness.store.get_run(run.run_id)).thread_link
    assert live_mentions(card["text"] + json.dumps(card["blocks"])) == [
        "<!subteam^S0DBA>",
        f"<{thread_link}|Open the run's thread>",
        "<!subteam^S0DBA>",
    ]
    await harness.click(write, "approve", user_id=REVIEWER)
    await harness.click(sql, "approve", user_id=DBA)
    await harness.wait_for(lambda: _approved_by(harness, sql, [DBA]))
    await harness.click(sql, "approve", user_id=DBA)  # a second click counts once
    await told(harness, DBA, "You already approved this call")
    await harness.settled()
    assert (await current(harness, sql)).state == ApprovalState.PENDING
    assert (await harness.store.get_run(run.run_id)).state == RunState.WAITING
    shown = json.dumps(card_of(harness, sql)["blocks"])
    assert f"Approved by <@{DBA}>" in shown and "1 more approval needed (of 2)" in shown
    await harness.click(sql, "approve", user_id=SECOND_DBA)
    decided = await harness.decided(sql)
    assert decided.approved_by == [DBA, SECOND_DBA] and decided.decided_by == SECOND_DBA
    done = await harness.finished(run)
    assert "execute_sql: 2 rows affected" in (done.final_answer or "")
    redrawn = json.dumps((await harness.decided_card(sql))["blocks"])
    assert f"Approvals: <@{DBA}>, <@{SECOND_DBA}>" in redrawn


async def test_any_approvers_reject_rejects_however_many_approved(harness: Harness) -> None:
    await people(harness)
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    await harness.click(write, "approve", user_id=REVIEWER)
    await harness.click(sql, "approve", user_id=DBA)
    await harness.wait_for(lambda: _approved_by(harness, sql, [DBA]))
    await harness.reject(sql, "not today", user_id=SECOND_DBA)
    done = await harness.finished(run)
    assert "not today" in (done.final_answer or "")
    assert "rows affected" not in (done.final_answer or "")


async def test_a_routed_card_leaves_a_pointer_in_the_run_thread_then_its_outcome(
    harness: Harness,
) -> None:
    await people(harness)
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    started = await harness.store.get_run(run.run_id)

    async def pointer() -> str | None:
        texts = harness.slack_thread_texts(started)
        return next((t for t in texts if "execute_sql" in t and APPROVALS in t), None)

    waiting = await harness.wait_for(pointer)
    assert "waits for approval in <#C0APPROVAL>" in waiting
    assert f"/archives/{APPROVALS}/p{(sql.message_ts or '').replace('.', '')}" in waiting
    await harness.click(write, "approve", user_id=REVIEWER)
    for dba in (DBA, SECOND_DBA):
        await harness.click(sql, "approve", user_id=dba)
    await harness.finished(run)

    async def outcome() -> str | None:
        found = await pointer()
        return found if found and "Approved" in found else None

    assert (await harness.wait_for(outcome)).startswith("✅ Approved: `execute_sql`")


async def test_a_card_the_bot_cannot_post_is_told_to_the_requester_once(
    harness: Harness,
) -> None:
    await people(harness)
    harness.sandbox.add_channel(APPROVALS, "approvals", private=True, bot_member=False)
    run = await harness.start_run(DEMO_TASK)
    note = await told(harness, REQUESTER, "can't post the approval card for `execute_sql`")
    assert "/invite" in note["text"] and "channel_not_found" in note["text"]
    await harness.settled()
    await harness.settled()  # more sweeps retried the post; the requester was told once
    notes = harness.sandbox.ephemerals(user_id=REQUESTER)
    assert [n["text"] for n in notes if "can't post" in n["text"]] == [note["text"]]
    assert (await harness.store.get_run(run.run_id)).state == RunState.WAITING
    harness.sandbox.invite_bot(APPROVALS)
    _, sql = await harness.requests(run, count=2)  # the next sweep posts it
    assert sql.channel_id == APPROVALS


async def test_escalation_calls_in_the_backup_then_the_time_limit_applies(
    harness: Harness,
) -> None:
    await people(harness)
    clock = ManualClock(time.time())
    harness.store.clock = clock  # the worker's store decides what is due
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    await harness.click(write, "approve", user_id=REVIEWER)
    await harness.click(sql, "approve", user_id=BACKUP)
    await told(harness, BACKUP, "not an approver")  # not before the escalation

    clock.now += 601  # past escalate_after_s, before the reminder (900) and expiry (1800)
    escalation = await harness.wait_for(lambda: _replies(harness, sql, "you may decide it now"))
    assert "<!subteam^S0BACKUP>" in escalation and "10 min" in escalation
    assert "Escalated to <!subteam^S0BACKUP>" in json.dumps(card_of(harness, sql)["blocks"])
    await harness.click(sql, "approve", user_id=BACKUP)
    await harness.wait_for(lambda: _approved_by(harness, sql, [BACKUP]))

    clock.now += 300  # half of review_timeout_s: the reminder, mentioning the approvers
    reminder = await harness.wait_for(lambda: _replies(harness, sql, "Reminder"))
    assert "<!subteam^S0DBA>" in reminder
    shown = json.dumps(card_of(harness, sql)["blocks"])
    assert "Reminder sent. If no one decides by <!date^" in shown and "rejected" in shown
    started = await harness.store.get_run(run.run_id)
    await harness.wait_for(lambda: _pointer(harness, started, "still waits for approval"))
    clock.now += 900  # past review_timeout_s: the default decision
    done = await harness.finished(run)
    await harness.wait_for(lambda: _pointer(harness, started, "no one decided in time"))
    expired = await current(harness, sql)
    assert expired.decision is not None and expired.decision.type == "reject"
    assert "rows affected" not in (done.final_answer or "")
    kinds = [e.kind for e in await read_events(harness.store.db) if e.request_id == sql.request_id]
    assert kinds.index(AuditKind.ESCALATED) < kinds.index(AuditKind.EXPIRED)


TICKS = ManualClock()
"""Monotonic seconds for the web app's group cache, moved by the test."""


class TestGroupCacheTtl:
    @pytest.fixture
    def harness_options(self) -> dict[str, Any]:
        TICKS.now = 0.0
        return {"directory": lambda slack: Directory(slack=slack, ttl_s=60, clock=TICKS)}

    async def test_a_change_slack_did_not_report_is_picked_up_after_the_ttl(
        self, harness: Harness
    ) -> None:
        await people(harness, dbas=[DBA])
        run = await harness.start_run(DEMO_TASK)
        _, sql = await harness.requests(run, count=2)
        await harness.click(sql, "approve", user_id=SECOND_DBA)
        await told(harness, SECOND_DBA, "not an approver")  # S0DBA is cached now
        url, harness.sandbox.request_url = harness.sandbox.request_url, None
        try:  # the change's event is lost (or went to another web process)
            with pytest.raises(BotUnreachable):
                await harness.sandbox.set_usergroup("S0DBA", "dba-team", [DBA, SECOND_DBA])
        finally:
            harness.sandbox.request_url = url
        TICKS.now = 59  # within the TTL: still the cached members
        await harness.click(sql, "approve", user_id=SECOND_DBA)
        notes = await harness.wait_for(lambda: _notes(harness, SECOND_DBA, 2))
        assert "not an approver" in notes[-1]["text"]
        TICKS.now = 61  # past it: read again
        await harness.click(sql, "approve", user_id=SECOND_DBA)
        await harness.wait_for(lambda: _approved_by(harness, sql, [SECOND_DBA]))

    async def test_a_submission_whose_group_slack_lists_too_slowly_is_answered_in_time(
        self, harness: Harness
    ) -> None:
        await people(harness, dbas=[DBA])
        run = await harness.start_run(DEMO_TASK)
        _, sql = await harness.requests(run, count=2)
        view = await harness.open_modal(sql, "reject", user_id=DBA)  # S0DBA is cached now
        TICKS.now = 61  # past the TTL: the submission must read the group again...
        stall = harness.sandbox.stall_next("usergroups.users.list")  # ...and Slack hangs
        try:
            status, body = await harness.sandbox.submit_view(
                view_id=view["id"], user_id=DBA, values={ids.REASON_BLOCK: "no"}
            )
        finally:
            stall.released.set()
        assert stall.reached.is_set()
        assert status == 200 and body is not None and body["response_action"] == "errors", body
        assert "(S0DBA) could not be read from Slack" in json.dumps(body["errors"])
        assert harness.sandbox.violations == []  # answered within Slack's 3 s
        assert (await current(harness, sql)).state == ApprovalState.PENDING

    async def test_an_approve_click_waits_for_a_slow_group_and_keeps_earlier_approvals(
        self, harness: Harness
    ) -> None:
        """Slack lists the group past a click's record deadline (``DECISION_DB_S``, which
        bounds only the record): the click is authorized once the list comes, and the
        earlier approval of the group's other member still counts towards the quorum."""
        await people(harness)
        run = await harness.start_run(DEMO_TASK)
        _, sql = await harness.requests(run, count=2)
        await harness.click(sql, "approve", user_id=DBA)
        await harness.wait_for(lambda: _approved_by(harness, sql, [DBA]))
        TICKS.now = 61  # past the cache's TTL: the next click reads the group again...
        stall = harness.sandbox.stall_next("usergroups.users.list")  # ...and Slack is slow
        await harness.click(sql, "approve", user_id=SECOND_DBA)
        await harness.wait_for(lambda: _reached(stall))
        await asyncio.sleep(DECISION_DB_S)  # the injected fault: how long Slack holds it
        stall.released.set()
        decided = await harness.decided(sql)
        assert decided.decided_by == SECOND_DBA and decided.approved_by == [DBA, SECOND_DBA]


async def _reached(stall: Any) -> bool:
    return bool(stall.reached.is_set())


async def _notes(harness: Harness, user_id: str, count: int) -> list[dict[str, Any]] | None:
    notes = [n for n in harness.sandbox.ephemerals(user_id=user_id) if "Nothing" in n["text"]]
    return notes if len(notes) >= count else None


async def test_a_user_group_change_reported_by_slack_applies_at_once(harness: Harness) -> None:
    await people(harness, dbas=[DBA])
    run = await harness.start_run(DEMO_TASK)
    _, sql = await harness.requests(run, count=2)
    await harness.click(sql, "approve", user_id=SECOND_DBA)
    await told(harness, SECOND_DBA, "not an approver")  # the group is now cached
    # Slack reports the change (subteam_members_changed); the app forgets the cache.
    assert await harness.sandbox.set_usergroup("S0DBA", "dba-team", [DBA, SECOND_DBA]) == (200, "")
    await harness.click(sql, "approve", user_id=SECOND_DBA)
    await harness.wait_for(lambda: _approved_by(harness, sql, [SECOND_DBA]))


async def test_an_approval_by_someone_who_left_the_group_no_longer_counts(
    harness: Harness,
) -> None:
    await people(harness)
    run = await harness.start_run(DEMO_TASK)
    _, sql = await harness.requests(run, count=2)
    await harness.click(sql, "approve", user_id=DBA)
    await harness.wait_for(lambda: _approved_by(harness, sql, [DBA]))
    await harness.sandbox.set_usergroup("S0DBA", "dba-team", [SECOND_DBA, BACKUP])
    await harness.click(sql, "approve", user_id=SECOND_DBA)
    stored = await harness.wait_for(lambda: _approved_by(harness, sql, [SECOND_DBA]))
    assert stored.state == ApprovalState.PENDING  # still one more: DBA's no longer counts


async def test_approvers_slack_cannot_list_authorize_nobody(harness: Harness) -> None:
    # No S0DBA group exists: usergroups.users.list answers no_such_subteam.
    harness.sandbox.add_user(SECOND_DBA, "dba2")
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    await harness.click(sql, "approve", user_id=DBA)
    await told(harness, DBA, "the policy names approver groups Slack does not know (S0DBA)")
    # Slack down (5xx past slack_sdk's retries): the same, and the reviewer too is refused.
    await people(harness)
    harness.sandbox.fail_next("usergroups.users.list", status=500, times=50)
    await harness.click(write, "approve", user_id=REVIEWER)
    await told(harness, REVIEWER, "could not be read")
    for request in (write, sql):
        stored = await current(harness, request)
        assert stored.state == ApprovalState.PENDING and stored.approved_by == []


async def test_approvers_slack_refuses_to_list_send_the_reviewer_to_the_admin(
    harness: Harness,
) -> None:
    """The app's token lacks ``usergroups:read`` (a careless admin): the DBA is refused,
    told an admin must act (trying again will not help), and nothing is recorded."""
    await people(harness)
    run = await harness.start_run(DEMO_TASK)
    _, sql = await harness.requests(run, count=2)
    harness.sandbox.fail_next("usergroups.users.list", status=200, error="missing_scope", times=9)
    await harness.click(sql, "approve", user_id=DBA)
    note = await told(harness, DBA, "Slack refuses to list the approver groups")
    assert "S0DBA (`missing_scope`)" in note["text"] and "tell the app's admin" in note["text"]
    assert "try again shortly" not in note["text"]
    stored = await current(harness, sql)
    assert stored.state == ApprovalState.PENDING and stored.approved_by == []


@pytest.mark.parametrize("code", ["fatal_error", "team_added_to_org"])
async def test_a_passing_slack_error_never_sends_the_reviewer_to_the_admin(
    harness: Harness, code: str
) -> None:
    """Slack answers ``usergroups.users.list`` with one of its own passing errors
    (``ok: false``, HTTP 200, retried by nothing in slack_sdk): no admin could help, so
    the DBA is told the group could not be read and to try again; nothing is recorded."""
    await people(harness)
    run = await harness.start_run(DEMO_TASK)
    _, sql = await harness.requests(run, count=2)
    harness.sandbox.fail_next("usergroups.users.list", status=200, error=code, times=9)
    await harness.click(sql, "approve", user_id=DBA)
    note = await told(harness, DBA, "Nothing was recorded")
    assert "(S0DBA) could not be read" in note["text"] and "try again" in note["text"]
    assert "tell the app's admin" not in note["text"]
    stored = await current(harness, sql)
    assert stored.state == ApprovalState.PENDING and stored.approved_by == []


async def test_an_approval_whose_group_slack_cannot_list_is_kept_and_the_click_refused(
    harness: Harness,
) -> None:
    """A backup approver clicks Approve on an escalated card while Slack fails to list
    the approvers' group (the backup group is cached): whether the DBA who approved
    earlier is still in it cannot be told, so the click is refused, saying so, and the
    DBA's approval stays; once Slack lists the group again, the click counts."""
    sql = await _escalated_after_a_dba_approved(harness)
    # Slack reports a change to S0DBA, which keeps DBA (the app forgets the group), and
    # then cannot list it.
    assert await harness.sandbox.set_usergroup("S0DBA", "dba-team", [DBA]) == (200, "")
    harness.sandbox.fail_next("usergroups.users.list", status=500, times=50)
    await harness.click(sql, "approve", user_id=BACKUP)  # authorized through S0BACKUP
    note = await told(harness, BACKUP, "earlier approvals")
    assert "(S0DBA) could not be read" in note["text"] and "Nothing was recorded" in note["text"]
    stored = await current(harness, sql)
    assert stored.state == ApprovalState.PENDING and stored.approved_by == [DBA]
    refused = [
        e
        for e in await read_events(harness.store.db, user_id=BACKUP)
        if e.kind == AuditKind.REFUSED and e.request_id == sql.request_id
    ]
    assert refused and "earlier approvals" in (refused[-1].reason or "")
    harness.sandbox.fail_next("usergroups.users.list", times=0)  # Slack answers again
    await harness.click(sql, "approve", user_id=BACKUP)
    decided = await harness.decided(sql)
    assert decided.decided_by == BACKUP and decided.approved_by == [DBA, BACKUP]


async def _escalated_after_a_dba_approved(harness: Harness) -> ApprovalRequest:
    """The execute_sql card escalated to the backup group (on a clock the test moves),
    with DBA's approval counted and both approver groups read and cached."""
    await people(harness)
    clock = ManualClock(time.time())
    harness.store.clock = clock  # the worker's store decides what is due
    run = await harness.start_run(DEMO_TASK)
    _, sql = await harness.requests(run, count=2)
    clock.now += 601  # past escalate_after_s: the backup group may decide too
    await harness.wait_for(lambda: _replies(harness, sql, "you may decide it now"))
    await harness.click(sql, "approve", user_id=DBA)  # both groups read, and cached
    return await harness.wait_for(lambda: _approved_by(harness, sql, [DBA]))


class TestAnApprovalCountedAlready:
    """A second Approve by someone whose approval of this version is counted changes
    nothing, so it is told so, whatever Slack can list of the approvers' groups."""

    @pytest.fixture
    def agent_settings(self, settings: WorkerConfig, tmp_path: Path) -> WorkerConfig:
        three = (FIXTURES / "dba_policy.yml").read_text()
        three = three.replace("required_approvals: 2", "required_approvals: 3")
        assert "required_approvals: 3" in three
        (tmp_path / "policy.yml").write_text(three)
        return settings.model_copy(update={"policy": tmp_path / "policy.yml"})

    async def test_a_second_click_is_told_it_counted_though_a_group_is_unread(
        self, harness: Harness
    ) -> None:
        sql = await _escalated_after_a_dba_approved(harness)
        await harness.click(sql, "approve", user_id=BACKUP)
        await harness.wait_for(lambda: _approved_by(harness, sql, [DBA, BACKUP]))
        # The app forgets S0DBA, which Slack then cannot list: DBA's approval cannot be
        # judged, but BACKUP's second click has nothing to judge.
        assert await harness.sandbox.set_usergroup("S0DBA", "dba-team", [DBA]) == (200, "")
        harness.sandbox.fail_next("usergroups.users.list", status=500, times=50)
        await harness.click(sql, "approve", user_id=BACKUP)
        await told(harness, BACKUP, "You already approved this call")
        assert not [n for n in harness.sandbox.ephemerals(user_id=BACKUP) if "Nothing" in n["text"]]
        stored = await current(harness, sql)
        assert stored.state == ApprovalState.PENDING and stored.approved_by == [DBA, BACKUP]
        assert [who for who, _ in await refusals(harness, sql) if who == BACKUP] == []

    async def test_a_second_approve_is_answered_from_the_request_as_it_is_after_authorizing(
        self, harness: Harness
    ) -> None:
        """The card is decided while Slack lists the backup group for BACKUP's second
        click: BACKUP is told it was decided, not that their approval counted."""
        sql = await _escalated_after_a_dba_approved(harness)
        await harness.click(sql, "approve", user_id=BACKUP)
        counted = await harness.wait_for(lambda: _approved_by(harness, sql, [DBA, BACKUP]))
        # Slack reports a change to the backup group, which keeps BACKUP (the app forgets it)
        changed = await harness.sandbox.set_usergroup("S0BACKUP", "b", [BACKUP, OUTSIDER])
        assert changed == (200, "")
        stall = harness.sandbox.stall_next("usergroups.users.list")
        await harness.click(sql, "approve", user_id=BACKUP)
        await harness.wait_for(lambda: _reached(stall))
        third = await harness.store.approve(
            sql.request_id, user_id=SECOND_DBA, team_id=counted.team_id, version=sql.version
        )
        assert isinstance(third, Recorded)
        stall.released.set()
        await told(harness, BACKUP, "This request was already decided")
        assert "You already approved" not in json.dumps(harness.sandbox.ephemerals(user_id=BACKUP))


async def test_an_approve_on_a_decided_card_is_told_so_though_a_group_is_unread(
    harness: Harness,
) -> None:
    """The card was decided before the backup approver's Approve, and Slack cannot list
    the approvers' group: nothing is left to judge, so the click is told who decided,
    not refused for the group."""
    sql = await _escalated_after_a_dba_approved(harness)
    await harness.wait_for(lambda: _drawn(harness, sql))
    # The decided card's redraw is lost in Slack, so BACKUP still sees its buttons (else
    # the worker's sweep could redraw it before the click: there would be nothing to click).
    redraw = harness.sandbox.stall_next("chat.update", ts=sql.message_ts, applied=False)
    second = await harness.store.approve(
        sql.request_id, user_id=SECOND_DBA, team_id=sql.team_id, version=sql.version
    )
    assert isinstance(second, Recorded)
    assert await harness.sandbox.set_usergroup("S0DBA", "dba-team", [DBA]) == (200, "")
    harness.sandbox.fail_next("usergroups.users.list", status=500, times=50)
    await harness.click(sql, "approve", user_id=BACKUP)
    await told(harness, BACKUP, "This request was already decided")
    redraw.released.set()
    assert not [n for n in harness.sandbox.ephemerals(user_id=BACKUP) if "Nothing" in n["text"]]
    assert [who for who, _ in await refusals(harness, sql) if who == BACKUP] == []


class TestIgnoreWithAnUnreadGroup:
    @pytest.fixture
    def agent_settings(self, settings: WorkerConfig) -> WorkerConfig:
        return settings.model_copy(
            update={
                "agent": "tests.interrupt_graphs:inbox",
                "policy": FIXTURES / "inbox_quorum_policy.yml",
            }
        )

    async def test_an_ignore_decides_though_earlier_approvals_cannot_be_judged(
        self, harness: Harness
    ) -> None:
        """Ignore decides alone (no quorum): a group Slack cannot list, whose member
        approved earlier, does not stop the backup approver's Ignore."""
        await people(harness)
        clock = ManualClock(time.time())
        harness.store.clock = clock
        run = await harness.start_run("run the inbox graph")
        (request,) = await harness.requests(run, count=1)
        await harness.click(request, "approve", user_id=DBA)
        await harness.wait_for(lambda: _approved_by(harness, request, [DBA]))
        clock.now += 601  # escalated: the backup approver may decide too

        async def escalated() -> ApprovalRequest | None:
            stored = await current(harness, request)
            return stored if stored.escalated_at else None

        await harness.wait_for(escalated)
        assert await harness.sandbox.set_usergroup("S0DBA", "dba-team", [DBA]) == (200, "")
        harness.sandbox.fail_next("usergroups.users.list", status=500, times=50)
        await harness.click(request, "ignore", user_id=BACKUP)
        decided = await harness.decided(request)
        assert decided.decided_by == BACKUP
        assert not [n for n in harness.sandbox.ephemerals(user_id=BACKUP) if "Nothing" in n["text"]]

    async def test_an_ignore_clicked_on_a_call_edited_meanwhile_is_not_recorded(
        self, harness: Harness
    ) -> None:
        """The DBA clicks Ignore on the card; while the guard reads the DBA group from
        Slack, the other DBA proposes an edit (quorum 2: pending, a new version). The
        Ignore was of the call the card showed, not the edited one: it is not recorded,
        and the DBA is told the call changed."""
        await people(harness)
        sandbox = harness.sandbox
        run = await harness.start_run("run the inbox graph")
        (request,) = await harness.requests(run, count=1)
        stall = sandbox.stall_next("usergroups.users.list")
        status, _ = await harness.click(request, "ignore", user_id=DBA)
        assert status == 200
        await stall.reached.wait()
        view = await harness.open_modal(request, "edit", user_id=SECOND_DBA)
        status, body = await sandbox.submit_view(
            view_id=view["id"], user_id=SECOND_DBA, values={ids.arg_block_id("to"): "all@x.org"}
        )
        assert status == 200 and body is None, body
        edited = await current(harness, request)
        assert edited.pending_edit is not None and edited.version != request.version
        stall.released.set()
        await told(harness, DBA, review_wording.CALL_CHANGED_TEXT[:40])
        stored = await current(harness, request)
        assert stored.state == ApprovalState.PENDING and stored.decided_by is None
        assert stored.version == edited.version


async def _approved_by(
    harness: Harness, request: ApprovalRequest, who: list[str]
) -> ApprovalRequest | None:
    stored = await current(harness, request)
    return stored if stored.approved_by == who else None


async def _drawn(harness: Harness, request: ApprovalRequest) -> ApprovalRequest | None:
    """The request once its card is drawn at its latest revision (no redraw in flight)."""
    stored = await current(harness, request)
    return stored if stored.drawn_revision >= stored.revision else None


async def _pointer(harness: Harness, run: Run, text: str) -> str | None:
    """The line in the run's thread about its execute_sql card, if it contains ``text``."""
    found = [t for t in harness.slack_thread_texts(run) if "execute_sql" in t and text in t]
    return found[0] if found else None


async def _replies(harness: Harness, request: ApprovalRequest, text: str) -> str | None:
    """A reply under the request's card containing ``text``, if any."""
    replies = harness.sandbox.thread(request.channel_id or "", request.message_ts or "")[1:]
    return next((m["text"] for m in replies if text in m.get("text", "")), None)

"""The authorization rule (pure), the user-group directory's cache, and call hashes."""

from __future__ import annotations

import pytest

from agent_bridge import review_wording
from agent_bridge.binding import call_hash, version_hash
from agent_bridge.decisions import plan_resume
from agent_bridge.models import ApprovalRequest, ApprovalState, Decision, ReviewRules
from bot.authorization import Actor, Clicked, Installation, refusal, still_approving
from bot.directory import Directory, Members
from bot.errors import ApprovalsUnjudgedError
from bot.testing import MemoryGateway
from tests.clocks import ManualClock
from tests.test_store import make_request

HOME = Installation(team_id="T1")
DBAS = Members(users=frozenset({"UDBA", "UDBA2"}))


def request(**update: object) -> ApprovalRequest:
    base = make_request("r1").model_copy(
        update={
            "requester_id": "UREQ",
            "team_id": "T1",
            "message_ts": "1.1",
            "rules": ReviewRules(approvers=("S0DBA",)),
        }
    )
    return base.model_copy(update=update)


def why(
    actor: Actor,
    action: str,
    req: ApprovalRequest,
    *,
    members: Members | None = DBAS,
    installation: Installation = HOME,
    clicked: Clicked | None = None,
) -> str | None:
    return refusal(actor, action, req, installation=installation, members=members, clicked=clicked)


def test_an_approver_of_the_installations_workspace_may_decide() -> None:
    for action in ("approve", "edit", "reject", "respond"):
        assert why(Actor("UDBA", "T1"), action, request(), clicked=Clicked("C1", "1.1")) is None


@pytest.mark.parametrize("action", ["approve", "edit", "reject", "respond"])
def test_someone_not_named_may_not(action: str) -> None:
    assert "not an approver" in (why(Actor("UX", "T1"), action, request()) or "")


@pytest.mark.parametrize(
    ("actor", "installation", "req"),
    [
        (Actor("UDBA", "T2"), HOME, request()),  # a Slack Connect user of another team
        (Actor("UDBA", "T1"), HOME, request(team_id="T2")),  # a request of another team
        (Actor("UDBA", "T1", "E2"), Installation("T1", "E1"), request()),  # another org
        (Actor("UDBA", "T1"), Installation("T1", "E1"), request()),  # no org at all
    ],
)
def test_another_workspace_or_org_may_not(
    actor: Actor, installation: Installation, req: ApprovalRequest
) -> None:
    assert "another Slack workspace" in (
        why(actor, "approve", req, installation=installation) or ""
    )


@pytest.mark.parametrize("action", ["approve", "edit", "reject", "respond", "view"])
def test_a_request_with_no_workspace_refuses_everyone(action: str) -> None:
    """A request stored before requests kept their workspace, whose run had none either
    (the migration gave it nothing): nobody can show it is theirs, so nobody may act."""
    text = why(Actor("UDBA", "T1"), action, request(team_id=None), clicked=Clicked("C1", "1.1"))
    assert text == review_wording.NO_WORKSPACE_TEXT


def test_an_unknown_installation_refuses_everyone() -> None:
    text = why(Actor("UDBA", None), "approve", request(), installation=Installation(None))
    assert "could not tell which workspace" in (text or "")


@pytest.mark.parametrize(
    "clicked", [Clicked("C1", "9.9"), Clicked("C2", "1.1"), Clicked(None, None)]
)
def test_a_click_must_be_on_the_requests_own_card(clicked: Clicked) -> None:
    text = why(Actor("UDBA", "T1"), "approve", request(), clicked=clicked)
    assert "does not belong to this request's current card" in (text or "")


@pytest.mark.parametrize("action", ["approve", "edit", "respond", "ignore"])
def test_four_eyes_the_requester_may_not_decide_their_own_call(action: str) -> None:
    listed = request(rules=ReviewRules(approvers=("UREQ",)))  # even when named
    assert "You started this run" in (why(Actor("UREQ", "T1"), action, listed) or "")
    allowed = request(rules=ReviewRules(approvers=("UREQ",), requester_may_approve=True))
    assert why(Actor("UREQ", "T1"), action, allowed, members=Members(frozenset({"UREQ"}))) is None


def test_four_eyes_offers_reject_only_where_the_card_has_it() -> None:
    asks = request(allowed_decisions=["respond"])
    text = why(Actor("UREQ", "T1"), "respond", asks) or ""
    assert "You started this run" in text and "reject" not in text


def test_the_requester_may_reject_their_own_call_without_being_an_approver() -> None:
    assert why(Actor("UREQ", "T1"), "reject", request(), members=None) is None


def test_unresolved_approvers_authorize_nobody() -> None:
    failed = Members(users=frozenset({"UDBA"}), unresolved=("S0DBA",))
    for actor in ("UDBA", "UX"):
        assert "could not be read" in (
            why(Actor(actor, "T1"), "approve", request(), members=failed) or ""
        )


def test_groups_slack_does_not_know_are_named_as_a_policy_mistake() -> None:
    ghost = Members(users=frozenset(), unresolved=("S0GHOST",), unknown=("S0GHOST",))
    text = why(Actor("UDBA", "T1"), "approve", request(), members=ghost) or ""
    assert "Slack does not know (S0GHOST)" in text and "admin" in text


def test_an_unreadable_backup_group_does_not_lock_out_known_approvers() -> None:
    rules = ReviewRules(approvers=("S0DBA",), escalate_to=("S0BACK",), escalate_after_s=60)
    escalated = request(rules=rules, escalated_at=5.0)
    down = Members(users=frozenset(), unresolved=("S0BACK",))
    assert (
        refusal(
            Actor("UDBA", "T1"), "approve", escalated, installation=HOME, members=DBAS, backup=down
        )
        is None
    )
    text = refusal(
        Actor("UBACK", "T1"), "approve", escalated, installation=HOME, members=DBAS, backup=down
    )
    assert "could not be read" in (text or "")


def test_without_approvers_anyone_in_the_workspace_but_the_requester_may_decide() -> None:
    open_request = request(rules=ReviewRules())
    assert why(Actor("UANY", "T1"), "approve", open_request, members=None) is None
    assert why(Actor("UREQ", "T1"), "approve", open_request, members=None) is not None


def test_after_escalation_the_backup_may_decide_too() -> None:
    rules = ReviewRules(approvers=("S0DBA",), escalate_to=("UBACK",), escalate_after_s=60)
    backup = Members(users=frozenset({"UDBA", "UBACK"}))
    pending = request(rules=rules)
    assert "not an approver" in (why(Actor("UBACK", "T1"), "approve", pending, members=DBAS) or "")
    escalated = request(rules=rules, escalated_at=5.0)
    assert why(Actor("UBACK", "T1"), "approve", escalated, members=backup) is None


@pytest.mark.parametrize(
    ("lists", "still"),
    [
        ([DBAS], {"UDBA"}),  # UGONE left the group: dropped
        (
            [Members(users=frozenset({"UDBA"}), unresolved=("S0OLD",), unknown=("S0OLD",))],
            {"UDBA"},
        ),  # a group Slack says does not exist holds nobody: UGONE dropped
        (
            [DBAS, Members(users=frozenset({"UGONE"}), unresolved=("S0BACKUP",))],
            {"UDBA", "UGONE"},
        ),  # named surely by a list read in part: kept
    ],
)
def test_earlier_approvals_count_while_their_people_are_still_named(
    lists: list[Members], still: set[str]
) -> None:
    assert still_approving(request(approved_by=["UDBA", "UGONE"]), lists) == still


def test_an_earlier_approval_an_unread_group_may_hold_refuses_the_click() -> None:
    unread = Members(users=frozenset({"UBACKUP"}), unresolved=("S0DBA",))
    with pytest.raises(ApprovalsUnjudgedError) as raised:
        still_approving(request(approved_by=["UDBA"]), [unread])
    assert raised.value.groups == ("S0DBA",)
    # Nobody to judge (the one approval is named surely): nothing is refused.
    assert still_approving(request(approved_by=["UBACKUP"]), [unread]) == {"UBACKUP"}


def test_groups_slack_refuses_to_list_send_the_clicker_to_the_admin() -> None:
    """A lasting refusal (the app's scope, token or plan) is not "try again shortly"."""
    refused = Members(
        users=frozenset(), unresolved=("S0DBA",), refused=(("S0DBA", "missing_scope"),)
    )
    text = why(Actor("UDBA", "T1"), "approve", request(), members=refused) or ""
    assert "Slack refuses to list the approver groups (S0DBA (`missing_scope`))" in text
    assert "tell the app's admin" in text and "try again shortly" not in text
    with pytest.raises(ApprovalsUnjudgedError) as raised:
        still_approving(request(approved_by=["UGONE"]), [refused])
    answer = raised.value.answer
    assert "S0DBA (`missing_scope`)" in answer and "earlier approvals" in answer
    assert "try again shortly" not in answer


async def test_a_group_slack_refuses_to_list_is_told_apart_from_an_outage() -> None:
    slack = MemoryGateway()  # no such groups: no_such_subteam
    directory = Directory(slack=slack)
    ghost = await directory.members("T1", ["S0GHOST"])
    assert (ghost.unknown, ghost.refused) == (("S0GHOST",), ())
    slack.outage = 1
    down = await directory.members("T1", ["S0GHOST"])
    assert (down.unresolved, down.unknown, down.refused) == (("S0GHOST",), (), ())


async def test_group_members_are_cached_for_the_ttl_then_read_again() -> None:
    slack = MemoryGateway(usergroups={"S0DBA": ["UDBA"]})
    clock = ManualClock()
    directory = Directory(slack=slack, ttl_s=60, clock=clock)
    assert (await directory.members("T1", ["S0DBA", "UOWN"])).users == {"UDBA", "UOWN"}
    slack.usergroups["S0DBA"] = ["UDBA2"]
    clock.now = 59
    assert (await directory.members("T1", ["S0DBA"])).users == {"UDBA"}  # cached
    clock.now = 61
    assert (await directory.members("T1", ["S0DBA"])).users == {"UDBA2"}  # after the TTL
    slack.usergroups["S0DBA"] = ["UDBA3"]
    directory.forget("T1", "S0DBA")  # Slack reported the change
    assert (await directory.members("T1", ["S0DBA"])).users == {"UDBA3"}


async def test_a_group_slack_will_not_list_is_unresolved_and_not_cached() -> None:
    slack = MemoryGateway(usergroups={"S0DBA": ["UDBA"]})
    directory = Directory(slack=slack, clock=ManualClock())
    unknown = await directory.members("T1", ["S0DBA", "S0GHOST"])
    assert unknown.unresolved == ("S0GHOST",) and not unknown.resolved
    slack.outage = 1
    directory.forget("T1", "S0DBA")
    assert (await directory.members("T1", ["S0DBA"])).unresolved == ("S0DBA",)
    assert (await directory.members("T1", ["S0DBA"])).resolved  # read again, not cached


def test_a_call_hash_covers_tool_arguments_thread_interrupt_and_tool_call() -> None:
    base = {
        "tool_name": "execute_sql",
        "args": {"query": "SELECT 1", "db": "main"},
        "thread_id": "t1",
        "interrupt_id": "i1",
        "tool_call_id": "c1",
    }
    digest = call_hash(**base)  # type: ignore[arg-type]
    assert call_hash(**{**base, "args": {"db": "main", "query": "SELECT 1"}}) == digest  # type: ignore[arg-type]
    for key, other in [
        ("tool_name", "drop_table"),
        ("args", {"query": "DELETE FROM t"}),
        ("thread_id", "t2"),
        ("interrupt_id", "i2"),
        ("tool_call_id", "c2"),
    ]:
        assert call_hash(**{**base, key: other}) != digest  # type: ignore[arg-type]
    assert version_hash(digest, None) != version_hash(digest, {"query": "SELECT 2"})


def test_a_decision_on_a_call_that_changed_since_is_not_sent() -> None:
    decided = make_request("r1", index=0).model_copy(
        update={
            "mode": "per_call",
            "batch_size": 1,
            "call_hash": "old",
            "state": ApprovalState.DECIDED,
            "decision": Decision(type="approve"),
        }
    )
    now = decided.model_copy(update={"call_hash": "new", "args": {"path": "/etc/passwd"}})
    plan = plan_resume([decided], {"i1"}, current_calls={("i1", 0): now})
    assert plan.resume == {} and plan.applying == []
    assert plan.changed == {"r1": now}
    same = plan_resume([decided], {"i1"}, current_calls={("i1", 0): decided})
    assert same.resume == {"i1": {"type": "approve"}}


def test_a_click_from_home_counts_for_the_homes_own_user_only() -> None:
    own = Clicked(None, None, in_view=True, home_of="UDBA")
    assert why(Actor("UDBA", "T1"), "approve", request(), clicked=own) is None
    assert "does not belong" in (why(Actor("UDBA2", "T1"), "approve", request(), clicked=own) or "")
    nobodys = Clicked(None, None, in_view=True)  # a view that is no Home of ours
    assert "does not belong" in (
        why(Actor("UDBA", "T1"), "approve", request(), clicked=nobodys) or ""
    )

"""agent_bridge.decisions: checking a decision against its request, and turning recorded
decisions into a resume value (order, completeness, stale interrupts)."""

from __future__ import annotations

from agent_bridge import wording
from agent_bridge.arguments import GENERAL_KEY
from agent_bridge.decisions import MESSAGE_MAX_CHARS, check_decision, plan_resume
from agent_bridge.models import (
    ApprovalRequest,
    ApprovalState,
    Decision,
    DecisionType,
    InterruptMode,
)

SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["path", "content"],
}


def request(
    request_id: str,
    *,
    index: int = 0,
    interrupt_id: str = "i1",
    mode: InterruptMode = "batched",
    decision: Decision | None = None,
    allowed: tuple[DecisionType, ...] = ("approve", "edit", "reject"),
) -> ApprovalRequest:
    return ApprovalRequest(
        request_id=request_id,
        run_id="r",
        thread_id="t",
        interrupt_id=interrupt_id,
        index=index,
        mode=mode,
        batch_size=2,
        tool_name="write_file",
        args={"path": "a", "content": "b"},
        allowed_decisions=list(allowed),
        args_schema=SCHEMA,
        decision=decision,
        state=ApprovalState.DECIDED if decision else ApprovalState.PENDING,
    )


def test_batched_decisions_wait_for_the_whole_interrupt() -> None:
    plan = plan_resume(
        [request("a", decision=Decision(type="approve")), request("b", index=1)], {"i1"}
    )
    assert plan.resume == {} and plan.applying == []


def test_batched_decisions_go_in_action_request_order_whatever_the_click_order() -> None:
    second = request("b", index=1, decision=Decision(type="reject", message="no"))
    first = request("a", index=0, decision=Decision(type="approve"))
    plan = plan_resume([second, first], {"i1"})
    assert plan.resume == {
        "i1": {"decisions": [{"type": "approve"}, {"type": "reject", "message": "no"}]}
    }
    assert plan.applying == ["a", "b"]


def test_per_call_decisions_go_at_once_keyed_by_interrupt() -> None:
    edited = Decision(type="edit", edited_args={"path": "x", "content": "y"})
    plan = plan_resume(
        [
            request("a", interrupt_id="i1", mode="per_call", decision=edited),
            request("b", interrupt_id="i2", mode="per_call"),
        ],
        {"i1", "i2"},
    )
    assert plan.resume == {
        "i1": {
            "type": "edit",
            "edited_action": {"name": "write_file", "args": {"path": "x", "content": "y"}},
        }
    }


def test_a_decision_whose_interrupt_is_gone_is_only_marked_applied() -> None:
    plan = plan_resume(
        [
            request("a", decision=Decision(type="approve")),
            request("b", index=1, decision=Decision(type="approve")),
        ],
        set(),
    )
    assert plan.resume == {} and plan.already_applied == ["a", "b"]


def test_an_invalid_decision_is_never_sent() -> None:
    bad = Decision(type="edit", edited_args={"path": 3})
    plan = plan_resume(
        [request("a", decision=bad), request("b", index=1, decision=Decision(type="approve"))],
        {"i1"},
    )
    assert plan.resume == {} and set(plan.invalid) == {"a"}


def test_check_decision_explains_each_refusal() -> None:
    only_approve = request("a", allowed=("approve",))
    assert GENERAL_KEY in check_decision(only_approve, Decision(type="reject"))
    edit = check_decision(request("a"), Decision(type="edit", edited_args={"path": "p"}))
    assert set(edit) == {"content"}
    assert check_decision(
        request("a", allowed=("respond",)), Decision(type="respond", message=" ")
    ) == {GENERAL_KEY: "Write an answer."}
    assert check_decision(request("a"), Decision(type="approve")) == {}


def test_an_edit_error_quoting_a_redacted_value_does_not_show_it() -> None:
    """A schema whose own message quotes the value (``not``: "'…' should not be valid
    under …") would show the typed password in the modal's field error, and on a card a
    deploy reopened: the call's redacted values are scrubbed from each message."""
    typed = "Sup3r-S3cret-typed"
    schema = {
        "type": "object",
        "properties": {"password": {"type": "string", "not": {"pattern": "S3cret"}}},
    }
    login = request("a").model_copy(
        update={"args": {"password": "old-Pa55word"}, "args_schema": schema}
    )
    errors = check_decision(login, Decision(type="edit", edited_args={"password": typed}))
    assert set(errors) == {"password"}, errors
    assert typed not in errors["password"] and wording.REDACTED in errors["password"], errors


def test_an_edit_error_cut_at_its_length_shows_no_part_of_a_redacted_value() -> None:
    """A message that quotes the whole arguments (a ``not`` at the top) is cut at
    ``MESSAGE_MAX_CHARS``: padded so the cut falls inside the password, it showed the
    password's start, one more character a try. It is masked before it is cut."""
    secret = "S3cretValue-0123456789-abcdef"
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "not": {"required": ["a", "b"]},
    }
    login = request("a").model_copy(
        update={"args": {"a": "host", "password": secret}, "args_schema": schema}
    )
    for pad in range(240, 300, 3):
        edited = {"a": "x" * pad, "b": "y", "password": secret}
        errors = check_decision(login, Decision(type="edit", edited_args=edited))
        assert errors, pad
        shown = " ".join(errors.values())
        assert all(len(m) <= MESSAGE_MAX_CHARS for m in errors.values())
        assert secret[:4] not in shown, (pad, shown[-60:])


def test_an_answer_or_reason_past_the_modals_limit_is_refused() -> None:
    asks = request("a", allowed=("respond",))
    at_limit, past = "x" * MESSAGE_MAX_CHARS, "x" * (MESSAGE_MAX_CHARS + 1)
    assert check_decision(asks, Decision(type="respond", message=at_limit)) == {}
    assert check_decision(asks, Decision(type="respond", message=past)) == {
        GENERAL_KEY: "An answer can be at most 3,000 characters; this one has 3,001. "
        "Nothing was recorded."
    }
    assert check_decision(request("a"), Decision(type="reject", message=at_limit)) == {}
    refused = check_decision(request("a"), Decision(type="reject", message=past))
    assert refused[GENERAL_KEY].startswith("A reason can be at most 3,000 characters")


def test_a_decision_the_call_no_longer_offers_is_never_sent() -> None:
    # An edit recorded on a card drawn before its Edit was withheld (or before a deploy
    # took a decision away): the middleware would refuse it, or apply it to another call
    edited = Decision(type="edit", edited_args={"path": "x", "content": "y"})
    decided = [
        request("a", decision=edited),
        request("b", index=1, decision=Decision(type="approve")),
    ]
    now = {
        ("i1", 0): request("a", allowed=("approve", "reject")).model_copy(
            update={"edit_withheld": "shared_call_id"}
        ),
        ("i1", 1): request("b", index=1),
    }
    plan = plan_resume(decided, {"i1"}, current_calls=now)
    assert plan.resume == {} and plan.applying == []
    assert set(plan.unoffered) == {"a"} and plan.unoffered["a"].edit_withheld == "shared_call_id"
    still = plan_resume(
        decided, {"i1"}, current_calls={("i1", 0): request("a"), ("i1", 1): request("b", index=1)}
    )
    assert still.unoffered == {} and still.applying == ["a", "b"]

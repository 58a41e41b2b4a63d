"""The sentences Slack users read, in the one module that holds them."""

from __future__ import annotations

from agent_bridge import wording
from agent_bridge.decisions import check_decision
from agent_bridge.expiry import expiry_note
from agent_bridge.models import ApprovalRequest, Decision


def make_request(**changes: object) -> ApprovalRequest:
    fields: dict[str, object] = {
        "request_id": "r1",
        "run_id": "run-1",
        "thread_id": "t1",
        "interrupt_id": "i1",
        "tool_name": "execute_sql",
        "allowed_decisions": ["approve", "reject"],
        **changes,
    }
    return ApprovalRequest.model_validate(fields)


def test_a_decision_the_tool_does_not_offer_names_what_it_does() -> None:
    errors = check_decision(make_request(), Decision(type="respond", message="hi"))
    assert errors == {"": "'respond' is not allowed for execute_sql; allowed: approve, reject."}


def test_empty_edits_and_answers_are_asked_for_plainly() -> None:
    request = make_request(allowed_decisions=["edit", "respond"])
    assert check_decision(request, Decision(type="edit")) == {
        "": "An edit needs the new arguments."
    }
    assert check_decision(request, Decision(type="respond", message="  ")) == {
        "": "Write an answer."
    }


def test_notes_say_what_happened_to_the_call() -> None:
    rejected = make_request(timeout_decision=Decision(type="reject"))
    assert (
        expiry_note(rejected) == "Expired: no reviewer decided in time, so the policy rejected it."
    )
    note = wording.run_failed_note("E" * 1000)
    assert note.startswith("The run failed, so this call will not run (") and len(note) < 400
    assert wording.invalid_answer_note({"path": "Must be a string.", "": "Too long."}) == (
        "the answer no longer fits the tool's arguments (path: Must be a string.; Too long.)"
    )


def test_private_answers_and_field_errors_keep_their_markup_apart() -> None:
    for plain in (wording.STORE_DOWN_PLAIN, wording.FAILED_PLAIN):
        assert "*" not in plain and ":warning:" not in plain  # a field error shows no mrkdwn
    assert wording.STORE_DOWN_TEXT.startswith(":warning:") and "*not*" in wording.STORE_DOWN_TEXT
    assert wording.already_decided_plain("approved", " at 14:02 UTC") == (
        "Another reviewer already decided this request (approved at 14:02 UTC); "
        "nothing was recorded. See the card for who."
    )
    assert wording.MENTION_USAGE_TEXT.startswith("Usage: `@agent <task>`")

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
    note = wording.run_failed_note("run-1a2b")
    assert note == (
        "The run failed, so this call will not run (details in the worker's log, run run-1a2b)."
    )
    assert wording.invalid_answer_note({"path": "Must be a string.", "": "Too long."}) == (
        "the answer no longer fits the tool's arguments (path: Must be a string.; Too long.)"
    )


def test_private_answers_and_field_errors_keep_their_markup_apart() -> None:
    for plain in (wording.STORE_DOWN_PLAIN, wording.FAILED_PLAIN):
        assert "*" not in plain and ":warning:" not in plain  # a field error shows no mrkdwn
    assert wording.STORE_DOWN_TEXT.startswith(":warning:") and "*not*" in wording.STORE_DOWN_TEXT
    assert wording.already_decided_plain("approved", " at 14:02 UTC") == (
        "This request was already decided (approved at 14:02 UTC); "
        "nothing was recorded. See the card for who."
    )
    assert wording.MENTION_USAGE_TEXT.startswith("Usage: `@agent <task>`")


def test_decided_cards_and_fallbacks_say_what_happened() -> None:
    assert wording.DECISION_BUTTONS == {
        "approve": "Approve",
        "edit": "Edit",
        "reject": "Reject",
        "respond": "Respond",
        "ignore": "Ignore",
    }
    assert wording.OUTCOMES["reject"] == ("❌", "Rejected")
    assert wording.OUTCOMES["ignore"] == ("⏭️", "Ignored")
    assert wording.CLOSED_OUTCOME == ("🚫", "Closed")
    assert wording.outcome_line("✅", "Approved", user_id="U1", when=None) == (
        "✅ *Approved* by <@U1>"
    )
    assert wording.outcome_line("🚫", "Closed", user_id=None, when="<!date^1|x>") == (
        "🚫 *Closed* <!date^1|x>"
    )
    assert wording.tool_result_fallback("t", "out", ok=True) == "t returned: out"
    assert wording.tool_result_fallback("t", "bad", ok=False) == "t failed: bad"
    assert wording.run_failed_fallback("run-1") == (
        "The run failed; details are in the worker's log (run run-1)."
    )
    assert wording.tool_ran_fallback("t", ok=True) == "t ran"
    assert wording.tool_ran_fallback("t", ok=False) == "t failed"
    assert wording.ran_without_review_fallback("t") == "t ran without review"
    assert wording.as_edited_tool_name("write_file") == "write_file (as edited)"
    assert wording.output_shortened_text(12000) == "Output shortened: 12,000 characters in all."
    assert wording.at_time_plain("14:02 UTC") == " at 14:02 UTC"


def test_the_edit_form_says_why_a_value_stays_as_proposed() -> None:
    assert wording.args_kept_text(4000, 3000) == (
        "These arguments are 4,000 characters of JSON, more than an input holds (3,000), "
        "so they cannot be edited here and are kept as proposed. "
        "To change them, reject the call with a reason."
    )
    assert wording.arg_kept_text("`body`", 3500, 3000) == (
        "`body` is 3,500 characters, more than an input holds (3,000), so it cannot be "
        "edited here and is kept as proposed. To change it, reject the call with a reason."
    )
    assert wording.json_field_hint("") == "A JSON value."
    assert wording.json_field_hint("Rows") == "Rows (a JSON value)"
    assert wording.default_placeholder("3") == "Default: 3"


def test_schema_messages_are_plain_words() -> None:
    assert wording.REQUIRED_PLAIN == "This field is required."
    assert wording.WHOLE_NUMBER_PLAIN == "Must be a whole number."
    assert wording.NUMBER_PLAIN == "Must be a number."
    assert wording.wrong_type_plain(["integer", "null"]) == "Must be a whole number or null."
    assert wording.schema_keyword_plain("minLength", 1) == "Must be at least 1 character long."
    assert wording.schema_keyword_plain("maxItems", 3) == "Must have at most 3 items."
    assert wording.schema_keyword_plain("not", {}) is None
    assert wording.one_of_plain(['"a"', '"b"'], more=True) == 'Must be one of: "a", "b", ….'
    assert wording.missing_fields_plain(["p", "q"]) == "Missing required field 'p', 'q'."
    assert wording.at_path_plain("items[2].name", wording.wrong_type_plain(["string"])) == (
        "At items[2].name: Must be a string."
    )
    assert wording.invalid_json_plain("Expecting value (line 1, column 1)") == (
        "Not valid JSON: Expecting value (line 1, column 1)"
    )


def test_expiry_and_the_default_timeout_message() -> None:
    answered = make_request(timeout_decision=Decision(type="respond", message="m"))
    assert expiry_note(answered) == (
        "Expired: no reviewer decided in time, so the policy answered it."
    )
    assert expiry_note(make_request()) == (
        "Expired: no reviewer decided in time, so the policy decided it."
    )
    assert wording.DEFAULT_TIMEOUT_MESSAGE.format(timeout="1 h") == (
        "No reviewer decided within 1 h, so the call was not run. Do not retry it; "
        "tell the user it is waiting for approval."
    )

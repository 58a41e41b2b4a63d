"""Redaction's rules alone: which keys match, what a masked value reads, the policy's
``redact`` list, the request's masked copy, and the edit form of a redacted call (left
empty: the real value kept; typed: the new one). End to end: ``tests/test_redaction.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.types import Interrupt

from agent_bridge import wording
from agent_bridge.interrupts import Placement, approval_requests
from agent_bridge.models import ApprovalRequest, Decision, Run
from agent_bridge.policy import Policy, ToolPolicy
from agent_bridge.policy_file import load_policy
from agent_bridge.redaction import (
    DEFAULT_REDACT,
    is_redacted,
    redact,
    restore,
    scrub,
    secret_values,
)
from bot import ids
from bot.edit_form import parse_submission, render_inputs
from bot.modals import render_edit_modal, render_full_args_modal
from tests.secret_agent import API_KEY, PASSWORD, TOKEN, TYPED_PASSWORD, connect_args

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "host": {"type": "string"},
        "password": {"type": "string"},
        "options": {"type": "object"},
        "notes": {"type": "string", "default": ""},
    },
    "required": ["host", "password", "options"],
}


@pytest.mark.parametrize(
    "key",
    [
        "password",
        "db_password",
        "GITHUB_TOKEN",
        "Authorization",
        "apiKey",
        "X-Api-Key",
        "client_secret",
        "passwd",
        "accessToken",
        "AWS_SECRET_ACCESS_KEY",  # a rule's words inside the key, not only at its end
        "SECRET_KEY",
        "new_password_confirm",
        "password_hint",  # a hint can give the password away
        "dbpassword",
    ],
)
def test_keys_naming_a_secret_are_redacted(key: str) -> None:
    assert is_redacted(key, DEFAULT_REDACT)


@pytest.mark.parametrize(
    "key", ["host", "author", "max_tokens", "tokens_used", "secretary", "key", ""]
)
def test_other_keys_are_not(key: str) -> None:
    assert not is_redacted(key, DEFAULT_REDACT)


def test_a_rule_without_letters_matches_nothing() -> None:
    assert not is_redacted("anything", ["__"])


def test_values_are_masked_at_any_depth_without_length_or_prefix() -> None:
    masked = redact(connect_args(), DEFAULT_REDACT)
    assert masked == {
        "host": "db1.internal",
        "password": wording.REDACTED,
        "options": {
            "tls": True,
            "auth": {"api_key": wording.REDACTED},
            "replicas": [{"token": wording.REDACTED}],
        },
        "notes": "",
    }
    short, long = redact({"token": "ab"}, DEFAULT_REDACT), redact({"token": "x" * 500}, ["token"])
    assert short == long  # the marker says nothing of the value's length
    assert redact({"secret": {"nested": [1, 2]}}, DEFAULT_REDACT) == {"secret": wording.REDACTED}
    assert connect_args()["password"] == PASSWORD  # the original is untouched


def test_an_edited_secret_reads_changed_and_masking_twice_keeps_it() -> None:
    before = connect_args()
    after = {**before, "password": TYPED_PASSWORD}
    shown = redact(after, DEFAULT_REDACT, before=before)
    assert shown["password"] == wording.REDACTED_CHANGED
    assert shown["options"]["auth"]["api_key"] == wording.REDACTED  # unchanged
    assert redact(shown, DEFAULT_REDACT) == shown


def test_restore_puts_back_the_real_values_the_form_left_as_shown() -> None:
    real = connect_args()
    submitted = {**redact(real, DEFAULT_REDACT), "host": "db2"}
    assert restore(submitted, real, DEFAULT_REDACT) == {**real, "host": "db2"}
    typed = {**submitted, "password": TYPED_PASSWORD}
    assert restore(typed, real, DEFAULT_REDACT)["password"] == TYPED_PASSWORD
    # A marker with no real value at its place (typed by the reviewer) stays as typed.
    assert restore({"token": wording.REDACTED}, {}, DEFAULT_REDACT) == {"token": wording.REDACTED}


def test_scrub_hides_a_secret_repeated_in_free_text() -> None:
    secrets = secret_values(connect_args(), DEFAULT_REDACT)
    assert secrets == {PASSWORD, API_KEY, TOKEN}
    text = scrub(f"logged in with {PASSWORD}; key {API_KEY}", secrets)
    assert text == f"logged in with {wording.REDACTED}; key {wording.REDACTED}"
    assert scrub("a b c", {"b"}) == "a b c"  # too short to scrub without mangling text


@pytest.mark.parametrize(
    "secret",
    ['Tr0ub4dor"3\\x', "Grüße-Pa55-ĳ", "it's-a-secret\ttab"],
    ids=["quote", "unicode", "tab"],
)
def test_scrub_hides_a_secret_a_tool_echoed_as_json_or_repr(secret: str) -> None:
    """A tool or an error that echoes its arguments as JSON (ASCII-only or not) or as a
    Python repr writes a quote, backslash, tab or non-ASCII letter of a secret escaped;
    the escaped form is scrubbed as the raw one is."""
    args = {"host": "db1", "password": secret}
    secrets = secret_values(args, DEFAULT_REDACT)
    for echoed in (json.dumps(args), json.dumps(args, ensure_ascii=False), repr(args)):
        text = scrub(f"login refused: {echoed}", secrets)
        assert "db1" in text and wording.REDACTED in text, text
        assert "Tr0ub4dor" not in text and "Pa55" not in text and "it's" not in text, text


def test_a_redacted_number_is_a_secret_too() -> None:
    """A one-time code given as a number is masked on the card and scrubbed from the
    text that repeats it, in the form JSON writes it."""
    args = {"host": "db1", "otp_token": 48151623, "pin_secret": 2.5, "ok_token": True}
    secrets = secret_values(args, DEFAULT_REDACT)
    assert secrets == {"48151623", "2.5"}  # a bool is no secret worth scrubbing
    text = scrub("code 48151623 and 2.5", secrets)
    assert "48151623" not in text and text.count(wording.REDACTED) == 1  # 2.5: too short


def test_the_policy_s_list_replaces_the_default_and_a_tool_adds_to_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "policy.yml"
    path.write_text(
        "redact: [password]\n"
        "post_results: none\n"
        "tools:\n"
        "  connect: {redact: [dsn], post_results: all}\n"
        "  lookup: {gated: false, post_results: reviewed}\n"
    )
    policy = load_policy(path)
    # the admin is told what the replaced list no longer masks
    [warning] = [r.getMessage() for r in caplog.records if "redact list" in r.getMessage()]
    assert "passwd, secret, token, api_key, authorization of the default list" in warning
    caplog.clear()
    load_policy(Policy(redact=[*DEFAULT_REDACT, "dsn"]))
    assert not [r for r in caplog.records if "redact list" in r.getMessage()]
    assert policy.redaction("connect") == ("password", "dsn")
    assert policy.redaction("other") == ("password",)
    assert Policy().redaction("x") == DEFAULT_REDACT
    assert (policy.posts_results("connect"), policy.posts_results("lookup")) == ("all", "reviewed")
    assert policy.posts_results("unlisted") == "none"
    assert Policy().posts_results("x") == "reviewed"
    assert (
        policy.gated("lookup") is None
        and "lookup" not in policy.middleware_kwargs()["interrupt_on"]
    )


def test_post_results_takes_only_its_three_values() -> None:
    with pytest.raises(ValueError, match="post_results"):
        ToolPolicy.model_validate({"post_results": "some"})


def request_with(args: dict[str, Any], **changes: Any) -> ApprovalRequest:
    return ApprovalRequest(
        request_id="r1",
        run_id="run-1",
        thread_id="t1",
        interrupt_id="i1",
        tool_name="connect",
        args=args,
        allowed_decisions=["approve", "edit", "reject"],
        args_schema=SCHEMA,
        **changes,
    )


def test_a_request_s_redacted_copy_masks_proposal_pending_edit_and_decision() -> None:
    real = connect_args()
    edit = Decision(type="edit", edited_args={**real, "password": TYPED_PASSWORD})
    request = request_with(
        real, pending_edit=edit, decision=edit, description=f"Connect with {PASSWORD}"
    )
    shown = request.redacted()
    assert shown.description == f"Connect with {wording.REDACTED}"  # a callable's text
    assert shown.args["password"] == wording.REDACTED
    assert shown.current_args["password"] == wording.REDACTED_CHANGED
    assert shown.decision and shown.decision.edited_args
    assert shown.decision.edited_args["password"] == wording.REDACTED_CHANGED
    assert request.current_args["password"] == TYPED_PASSWORD  # the call is unchanged
    views = [render_full_args_modal(shown, None), render_edit_modal(shown, view_key="k")]
    dumped = json.dumps(views)
    for secret in (PASSWORD, API_KEY, TOKEN, TYPED_PASSWORD):
        assert secret not in dumped


def test_the_rules_stored_with_a_request_are_the_ones_it_masks_with() -> None:
    request = request_with({"dsn": "postgres://u:pw@h/db", "password": "x"}, redact=("dsn",))
    assert request.redacted().args == {"dsn": wording.REDACTED, "password": "x"}


def edit_form(real: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The edit form's blocks as the reviewer gets them, and the arguments it shows."""
    shown = redact(real, DEFAULT_REDACT)
    return render_inputs(SCHEMA, shown), shown


def text_state(value: str | None) -> dict[str, Any]:
    return {"type": "plain_text_input", "value": value}


def submit(real: dict[str, Any], values: dict[str, str | None]) -> dict[str, Any]:
    """What an edit submission with ``values`` (block ID -> text) sends to the tool."""
    _, shown = edit_form(real)
    state = {b: {ids.ARG_ACTION: text_state(v)} for b, v in values.items()}
    parsed = parse_submission(SCHEMA, shown, state)
    assert parsed.args is not None and not parsed.errors, parsed.errors
    sent: dict[str, Any] = restore(parsed.args, real, DEFAULT_REDACT)
    return sent


def test_a_redacted_field_is_shown_empty_with_a_hint() -> None:
    blocks, _ = edit_form(connect_args())
    by_id = {b["block_id"]: b for b in blocks}
    password = by_id[ids.arg_block_id("password")]
    assert "initial_value" not in password["element"]
    assert password["optional"] is True
    assert wording.REDACTED_HINT in password["hint"]["text"]
    options = by_id[ids.arg_block_id("options")]
    assert wording.REDACTED in options["element"]["initial_value"]
    assert wording.REDACTED_JSON_HINT in options["hint"]["text"]
    for secret in (PASSWORD, API_KEY, TOKEN):
        assert secret not in json.dumps(blocks)


def test_an_edit_leaving_the_redacted_field_empty_keeps_the_real_value() -> None:
    real = connect_args()
    sent = submit(real, {ids.arg_block_id("password"): None, ids.arg_block_id("host"): "db2"})
    assert sent == {**real, "host": "db2"}


def test_an_edit_typing_a_new_value_sends_it() -> None:
    real = connect_args()
    sent = submit(real, {ids.arg_block_id("password"): TYPED_PASSWORD})
    assert sent == {**real, "password": TYPED_PASSWORD}


def test_an_edited_json_value_keeps_the_secrets_left_as_shown() -> None:
    real = connect_args()
    _, shown = edit_form(real)
    options = {**shown["options"], "tls": False}
    sent = submit(real, {ids.arg_block_id("options"): json.dumps(options)})
    assert sent["options"] == {**real["options"], "tls": False}
    assert sent["options"]["auth"]["api_key"] == API_KEY


def test_a_form_of_one_json_object_keeps_the_secrets_too() -> None:
    real = {"password": PASSWORD, "target": "x"}
    shown = redact(real, DEFAULT_REDACT)
    (block,) = render_inputs({"type": "object"}, shown)
    assert PASSWORD not in json.dumps(block) and wording.REDACTED_JSON_HINT in block["hint"]["text"]
    edited = json.dumps({**shown, "target": "y"})
    state = {ids.ARGS_JSON_BLOCK: {ids.ARG_ACTION: text_state(edited)}}
    parsed = parse_submission({"type": "object"}, shown, state)
    assert parsed.args is not None
    assert restore(parsed.args, real, DEFAULT_REDACT) == {"password": PASSWORD, "target": "y"}


def test_secrets_outside_a_redacted_key_are_masked_too() -> None:
    args = {
        "env": [{"name": "DB_PASSWORD", "value": "env-secret-1"}, {"name": "HOME", "value": "/h"}],
        "headers": [["Authorization", "Bearer hdr-secret-2"], ["Accept", "*/*"]],
        "dsn": "postgresql://app:dsn-secret-3@db/prod",
        "password": "pw-secret-4",
        "note": "connect with pw-secret-4 please",
    }
    shown = json.dumps(redact(args, DEFAULT_REDACT))
    for secret in ("env-secret-1", "hdr-secret-2", "dsn-secret-3", "pw-secret-4"):
        assert secret not in shown
    assert '"/h"' in shown and '"*/*"' in shown and "postgresql://app:" in shown
    found = secret_values(args, DEFAULT_REDACT)
    assert {"env-secret-1", "Bearer hdr-secret-2", "dsn-secret-3"} <= found


def test_a_slack_token_is_a_secret_wherever_it_is_and_whatever_names_it() -> None:
    """Known by its shape: bare in a note, under a key no rule names; an edit that leaves
    it as shown sends the real text back."""
    args = {"note": "post with xoxb-1111-2222-AbCd then xapp-1-A0B-33-ef", "n": "xoxp-9-x"}
    shown = redact(args, DEFAULT_REDACT)
    dumped = json.dumps(shown)
    assert all(t not in dumped for t in ("xoxb-1111-2222-AbCd", "xapp-1-A0B-33-ef", "xoxp-9-x"))
    assert "post with" in shown["note"]
    assert restore(shown, args, DEFAULT_REDACT) == args
    assert scrub("it said xoxe-1-abc", secret_values("it said xoxe-1-abc", ())) == (
        f"it said {wording.REDACTED}"
    )
    # after a letter too: JSON's \n escape, a prefix, a URL-encoded assignment
    for text in ('"booting\\nxoxb-1-2-Ab"', "SLACK_xoxb-1-2-Ab", "token%3Dxoxp-1-2-Ab"):
        assert "-1-2-Ab" not in scrub(text, secret_values(text, ())), text


def test_a_secret_does_not_follow_its_pair_renamed_to_a_name_that_shows_it() -> None:
    """An edit renaming ``DB_PASSWORD`` to ``PUBLIC_MOTD``, or an ``Authorization``
    header to ``X-Debug-Echo``, with the value left as shown: the tool would publish or
    forward the secret under the new name, so the marker stays as typed."""
    real = {
        "env": [{"name": "DB_PASSWORD", "value": "env-secret-1"}],
        "headers": [["Authorization", "Bearer hdr-secret-2"]],
    }
    shown = redact(real, DEFAULT_REDACT)
    renamed = {
        "env": [{"name": "PUBLIC_MOTD", "value": shown["env"][0]["value"]}],
        "headers": [["X-Debug-Echo", shown["headers"][0][1]]],
    }
    sent = json.dumps(restore(renamed, real, DEFAULT_REDACT))
    assert "env-secret-1" not in sent and "hdr-secret-2" not in sent
    # renamed to another secret's name, or left as shown: the real values go to the tool
    kept = {
        "env": [{"name": "API_TOKEN", "value": shown["env"][0]["value"]}],
        "headers": [["Proxy-Authorization", shown["headers"][0][1]]],
    }
    assert restore(kept, real, DEFAULT_REDACT) == {
        "env": [{"name": "API_TOKEN", "value": "env-secret-1"}],
        "headers": [["Proxy-Authorization", "Bearer hdr-secret-2"]],
    }
    assert restore(shown, real, DEFAULT_REDACT) == real


def test_a_list_reshaped_by_an_edit_keeps_each_secret_with_its_own_object() -> None:
    real = {
        "users": [{"name": "alice", "password": "ALICE-PW"}, {"name": "bob", "password": "BOB-PW"}]
    }
    shown = redact(real, DEFAULT_REDACT)
    without_alice = {"users": [shown["users"][1]]}
    assert restore(without_alice, real, DEFAULT_REDACT) == {"users": [real["users"][1]]}
    swapped = {"users": [shown["users"][1], shown["users"][0]]}
    assert restore(swapped, real, DEFAULT_REDACT) == {"users": real["users"][::-1]}


def test_a_scrubbed_text_left_as_shown_gets_its_real_text_back() -> None:
    real = {"password": "pw-secret-4", "note": "connect with pw-secret-4 please"}
    shown = redact(real, DEFAULT_REDACT)
    assert "pw-secret-4" not in shown["note"]
    assert restore(shown, real, DEFAULT_REDACT) == real
    assert restore({**shown, "note": "typed"}, real, DEFAULT_REDACT)["note"] == "typed"


def test_the_model_s_reason_is_scrubbed_of_every_secret_of_its_turn() -> None:
    # Found by a careless-admin review: the reason is shared by the turn's calls, and the
    # card of a call without the secret showed it.
    secret = "sk-live-SECRET-987654"
    calls = [
        {"name": "write_file", "args": {"path": "a", "api_key": secret}, "id": "c1"},
        {"name": "execute_sql", "args": {"query": "SELECT 1"}, "id": "c2"},
    ]
    messages = [
        HumanMessage("go"),
        AIMessage(content=f"I will use the admin token {secret} for both.", tool_calls=calls),
    ]
    interrupt = Interrupt(
        value={"action_requests": [{"name": c["name"], "args": c["args"]} for c in calls]},
        id="i1",
    )
    run = Run(run_id="r", thread_id="t", task="go", channel_id="C1", user_id="U1")
    policy = Policy(tools={"write_file": True, "execute_sql": True})
    placement = Placement(run=run, policy=policy, args_schemas={})
    requests = approval_requests([interrupt], messages=messages, placement=placement)
    assert [r.tool_name for r in requests] == ["write_file", "execute_sql"]
    for request in requests:
        assert secret not in request.reason and "the admin token" in request.reason


def test_secrets_inside_strings_are_masked_once_and_left_values_restored_whatever_their_type() -> (
    None
):
    # Found by a second hostile review.
    args = {
        "env": ["DB_PASSWORD=hunter2-prod"],
        "dsn": "host=db user=app password=hunter2-prod",
        "cmd": "curl -H 'Authorization: Bearer sk-live-abcdef' https://x",
    }
    shown = redact(args, DEFAULT_REDACT)
    text = json.dumps(shown, ensure_ascii=False)
    assert "hunter2" not in text and "sk-live" not in text
    assert text.count(wording.REDACTED) == 3 and "(redacted) (redacted)" not in text
    for real_password in ("abc", "", None, 42, {"a": 1}):
        real = {"username": "a", "password": real_password}
        edited = {"username": "b", "password": wording.REDACTED}
        assert restore(edited, real, DEFAULT_REDACT) == {"username": "b", "password": real_password}


def test_a_value_nested_too_deep_is_shown_as_the_marker_not_a_crash() -> None:
    deep: dict[str, object] = {}
    node = deep
    for _ in range(900):
        node["a"] = {}
        node = node["a"]  # type: ignore[assignment]
    assert wording.REDACTED in json.dumps(redact(deep, DEFAULT_REDACT), ensure_ascii=False)
    assert secret_values(deep, DEFAULT_REDACT) == set()


def test_a_redacted_argument_s_schema_default_is_no_placeholder_of_its_field() -> None:
    """An argument the call leaves out shows its schema's default as the field's
    placeholder: a tool's default API key is a secret there too."""
    schema = {
        "type": "object",
        "properties": {
            "host": {"type": "string"},
            "api_key": {"type": "string", "default": "sk-live-default-9f8e"},
            "region": {"type": "string", "default": "eu-west-1"},
        },
    }
    request = request_with({"host": "db1"}).model_copy(update={"args_schema": schema})
    dumped = json.dumps(render_edit_modal(request.redacted(), view_key="k"))
    assert "sk-live-default-9f8e" not in dumped and "eu-west-1" in dumped
    # nor an object default holding one, a $defs entry's, an anyOf branch's
    deeper = {
        "type": "object",
        "$defs": {"Key": {"type": "string", "default": "sk-live-defs-1111"}},
        "properties": {
            "db": {"type": "object", "default": {"password": "sk-live-obj-2222"}},
            "token": {"$ref": "#/$defs/Key"},
            "secret": {
                "anyOf": [{"type": "string", "default": "sk-live-any-3333"}, {"type": "null"}]
            },
        },
    }
    request = request_with({"host": "db1"}).model_copy(update={"args_schema": deeper})
    dumped = json.dumps(render_edit_modal(request.redacted(), view_key="k"))
    assert "sk-live" not in dumped, dumped

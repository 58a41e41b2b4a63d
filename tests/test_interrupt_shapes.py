"""agent_bridge.interrupt_shapes: every interrupt that is not the middleware's becomes
approval requests in its own shape (Agent Inbox's ``HumanInterrupt``, a JSON schema, a
plain value), and is answered in that shape, keyed by interrupt ID."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langgraph.types import Interrupt
from pydantic import ValidationError

from agent_bridge.decisions import check_decision, plan_resume
from agent_bridge.interrupt_shapes import (
    INTERRUPT_NAME,
    PLAIN_VALUE_MAX_CHARS,
    asks_of,
    human_interrupts,
)
from agent_bridge.interrupts import Placement, approval_requests
from agent_bridge.models import ApprovalRequest, ApprovalState, Decision, Run
from agent_bridge.policy import Policy
from tests.interrupt_graphs import FORM_SCHEMA, INBOX_ARGS, human_interrupt

RUN = Run(run_id="r", thread_id="t", task="x", channel_id="C1", user_id="U1", thread_ts="1.0")


def requests_of(*interrupts: Interrupt, policy: Policy | None = None) -> list[ApprovalRequest]:
    placement = Placement(run=RUN, policy=policy or Policy(), args_schemas={})
    return approval_requests(list(interrupts), messages=[], placement=placement)


def decided(request: ApprovalRequest, decision: Decision) -> ApprovalRequest:
    assert check_decision(request, decision) == {}
    return request.model_copy(update={"decision": decision, "state": ApprovalState.DECIDED})


def test_a_human_interrupt_offers_exactly_what_its_config_allows() -> None:
    value = [human_interrupt(allow=("accept", "ignore"))]
    (request,) = requests_of(Interrupt(value=value, id="i1"))
    assert request.mode == "human_interrupt"
    assert request.allowed_decisions == ["approve", "ignore"]
    assert (request.tool_name, request.args) == ("send_email", INBOX_ARGS)
    assert request.description == "Send the weekly report?"
    assert request.tool_call_id is None and request.call_hash


def test_a_human_interrupt_allowing_nothing_can_still_be_ignored() -> None:
    (request,) = requests_of(Interrupt(value=human_interrupt(allow=()), id="i1"))
    assert request.allowed_decisions == ["ignore"]


@pytest.mark.parametrize(
    ("decision", "response"),
    [
        (Decision(type="approve"), {"type": "accept", "args": None}),
        (
            Decision(type="edit", edited_args={"to": "cto@example.com", "subject": "Hi"}),
            {
                "type": "edit",
                "args": {
                    "action": "send_email",
                    "args": {"to": "cto@example.com", "subject": "Hi"},
                },
            },
        ),
        (
            Decision(type="respond", message="not this week"),
            {"type": "response", "args": "not this week"},
        ),
        (Decision(type="ignore"), {"type": "ignore", "args": None}),
    ],
)
def test_a_human_interrupt_is_answered_with_a_list_of_human_responses(
    decision: Decision, response: dict[str, Any]
) -> None:
    value = [human_interrupt(allow=("accept", "edit", "respond", "ignore"))]
    (request,) = requests_of(Interrupt(value=value, id="i1"))
    plan = plan_resume([decided(request, decision)], {"i1"})
    assert plan.resume == {"i1": [response]}
    assert plan.applying == [request.request_id]


def test_a_human_interrupts_edit_keeps_each_arguments_type() -> None:
    (request,) = requests_of(Interrupt(value=human_interrupt(allow=("edit",)), id="i1"))
    errors = check_decision(request, Decision(type="edit", edited_args={"to": 7, "subject": "x"}))
    assert set(errors) == {"to"}


def test_several_human_interrupts_are_answered_together_in_order() -> None:
    value = [human_interrupt(allow=("accept",)), human_interrupt(allow=("ignore",))]
    first, second = requests_of(Interrupt(value=value, id="i1"))
    assert (first.index, second.index, first.batch_size) == (0, 1, 2)
    only_second = plan_resume([first, decided(second, Decision(type="ignore"))], {"i1"})
    assert only_second.resume == {}
    both = plan_resume(
        [decided(second, Decision(type="ignore")), decided(first, Decision(type="approve"))],
        {"i1"},
    )
    assert both.resume == {
        "i1": [{"type": "accept", "args": None}, {"type": "ignore", "args": None}]
    }


def test_not_a_human_interrupt_without_an_action_or_a_config() -> None:
    assert human_interrupts({"action_request": {"args": {}}, "config": {}}) is None
    assert human_interrupts({"action_request": {"action": "x", "args": {}}}) is None
    assert human_interrupts([]) is None


@pytest.mark.parametrize(
    "interrupt",
    [
        Interrupt(
            value={"question": "Where should it deploy?", "json_schema": FORM_SCHEMA}, id="i1"
        ),
        Interrupt(value={"question": "Where should it deploy?", "schema": FORM_SCHEMA}, id="i1"),
        Interrupt(value="Where should it deploy?", id="i1", response_schema=FORM_SCHEMA),
    ],
)
def test_an_interrupt_carrying_a_json_schema_is_a_form(interrupt: Interrupt) -> None:
    (request,) = requests_of(interrupt)
    assert request.mode == "json_schema"
    assert request.allowed_decisions == ["edit"]
    assert request.args_schema == FORM_SCHEMA and request.args == {}
    assert request.description == "Where should it deploy?"
    assert request.tool_name == INTERRUPT_NAME


def test_a_forms_answer_is_checked_against_its_schema_then_sent_as_the_value() -> None:
    (request,) = requests_of(Interrupt(value={"json_schema": FORM_SCHEMA}, id="i1"))
    bad = check_decision(request, Decision(type="edit", edited_args={"environment": "moon"}))
    assert set(bad) >= {"environment"}
    answer = {"environment": "staging", "replicas": 2}
    plan = plan_resume([decided(request, Decision(type="edit", edited_args=answer))], {"i1"})
    assert plan.resume == {"i1": answer}


def test_a_json_schema_dict_value_may_name_its_policy_key() -> None:
    (request,) = requests_of(
        Interrupt(value={"name": "deploy_form", "json_schema": FORM_SCHEMA}, id="i1")
    )
    assert request.tool_name == "deploy_form"


def test_a_response_schema_of_no_object_is_a_form_of_one_field() -> None:
    """LangGraph's ``response_schema`` of a number (or ``list[str]``, which it checks the
    answer against) is a form of one field of that type, ``$defs`` kept at its root; a
    dict value's ``json_schema`` of no object stays a plain value."""
    schema = {
        "type": "array",
        "items": {"$ref": "#/$defs/Tag"},
        "$defs": {"Tag": {"type": "string"}},
    }
    mode, (ask,) = asks_of(Interrupt(value="Which tags?", id="i1", response_schema=schema))
    assert mode == "json_schema"
    assert ask.args_schema is not None
    assert ask.args_schema["properties"] == {
        "answer": {"type": "array", "items": {"$ref": "#/$defs/Tag"}}
    }
    assert ask.args_schema["$defs"] == schema["$defs"] and ask.args_schema["required"] == ["answer"]
    mode, _ = asks_of(
        Interrupt(value={"question": "How many?", "json_schema": {"type": "integer"}}, id="i2")
    )
    assert mode == "plain_value"


@pytest.mark.parametrize(
    ("value", "description", "args"),
    [
        ("Which region?", "Which region?", {}),
        (
            {"question": "Which region?", "options": ["eu", "us"]},
            "Which region?",
            {"options": ["eu", "us"]},
        ),
        (["eu", "us"], "", {"value": ["eu", "us"]}),
        (42, "", {"value": 42}),
        ({1: "not a text key"}, "", {"value": {"1": "not a text key"}}),
    ],
)
def test_any_other_value_is_shown_and_answered_with_text(
    value: Any, description: str, args: dict[str, Any]
) -> None:
    (request,) = requests_of(Interrupt(value=value, id="i1"))
    assert request.mode == "plain_value"
    assert request.allowed_decisions == ["respond"]
    assert (request.description, request.args) == (description, args)
    assert check_decision(request, Decision(type="respond", message=" ")) != {}
    plan = plan_resume([decided(request, Decision(type="respond", message="eu"))], {"i1"})
    assert plan.resume == {"i1": "eu"}


def test_a_huge_or_unserializable_value_is_kept_cut_and_as_text() -> None:
    (huge,) = requests_of(Interrupt(value={"blob": "x" * (3 * PLAIN_VALUE_MAX_CHARS)}, id="i1"))
    assert len(json.dumps(huge.args)) < PLAIN_VALUE_MAX_CHARS + 100
    assert huge.args["value"].endswith("… (cut)")
    (odd,) = requests_of(Interrupt(value={"when": object()}, id="i2"))
    assert odd.args["when"].startswith("<object object")


def test_interrupts_of_parallel_branches_are_answered_each_by_its_id() -> None:
    left, right = requests_of(Interrupt(value="left?", id="i1"), Interrupt(value="right?", id="i2"))
    plan = plan_resume([decided(right, Decision(type="respond", message="R")), left], {"i1", "i2"})
    assert plan.resume == {"i2": "R"}


def test_the_policy_routes_and_guards_them_by_action_or_interrupt_name() -> None:
    policy = Policy.model_validate(
        {
            "interrupts": {
                "send_email": {"channel": "C0MAIL", "approvers": ["U0BOSS"]},
                INTERRUPT_NAME: {"channel": "C0ASK"},
            }
        }
    )
    inbox, plain = requests_of(
        Interrupt(value=human_interrupt(allow=("accept",)), id="i1"),
        Interrupt(value="?", id="i2"),
        policy=policy,
    )
    assert (inbox.channel_id, inbox.rules.approvers) == ("C0MAIL", ("U0BOSS",))
    assert plain.channel_id == "C0ASK"


def test_a_name_is_a_tools_or_an_interrupts_not_both() -> None:
    with pytest.raises(ValidationError, match="send_email is under both tools and interrupts"):
        Policy.model_validate({"tools": {"send_email": True}, "interrupts": {"send_email": {}}})


@pytest.mark.parametrize(
    ("entry", "key"),
    [
        ({"allowed_decisions": ["approve"]}, "allowed_decisions"),
        ({"when": "agent_bridge.predicates:always"}, "when"),
        ({"description": "Deploy"}, "description"),
        ({"callable": "x:y"}, "description_callable"),
        ({"gated": False}, "gated"),
    ],
)
def test_an_interrupts_entry_with_a_key_that_means_nothing_there_is_refused(
    entry: dict[str, Any], key: str
) -> None:
    with pytest.raises(ValidationError, match=rf"interrupts\.deploy: {key} means nothing"):
        Policy.model_validate({"interrupts": {"deploy": entry}})


def test_an_interrupts_time_limit_that_would_reject_is_refused() -> None:
    # No interrupt under interrupts: offers reject (a question: respond; a form: edit;
    # an Agent Inbox action: accept/edit/respond/ignore), so its expiry could never apply.
    with pytest.raises(ValidationError, match=r"interrupts\.interrupt: on_timeout 'reject'"):
        Policy.model_validate({"interrupts": {INTERRUPT_NAME: {"review_timeout_s": 60}}})


def test_an_interrupts_time_limit_applies_only_a_decision_the_interrupt_offers() -> None:
    policy = Policy.model_validate(
        {"interrupts": {INTERRUPT_NAME: {"review_timeout_s": 60, "on_timeout": "respond"}}}
    )
    (plain,) = requests_of(Interrupt(value="?", id="i1"), policy=policy)
    assert plain.timeout_decision is not None
    assert plain.timeout_decision.type == "respond"
    approve = Policy.model_validate(
        {"interrupts": {INTERRUPT_NAME: {"review_timeout_s": 60, "on_timeout": "approve"}}}
    )
    (question,) = requests_of(Interrupt(value="?", id="i1"), policy=approve)
    assert (question.review_timeout_s, question.timeout_decision) == (None, None)

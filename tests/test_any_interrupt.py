"""End to end through the sandbox: graphs whose nodes call ``interrupt()`` themselves
(tests/interrupt_graphs.py) get cards, and the clicks and forms resume them by
interrupt ID in each interrupt's own shape: an Agent Inbox ``HumanInterrupt`` (accept,
edit, respond, ignore), a JSON-schema form (an invalid answer is a field error), a plain
value (a free-text answer), two parallel branches, a sub-graph."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_bridge.models import ApprovalRequest, ApprovalState, DecisionType, Run, RunState
from agent_bridge.settings import WorkerConfig
from bot import ids
from tests.harness import REVIEWER, Harness, decision_buttons
from tests.interrupt_graphs import INBOX_ARGS, PLAIN_QUESTION, marked_graph


@pytest.fixture
def agent_settings(settings: WorkerConfig, request: pytest.FixtureRequest) -> WorkerConfig:
    return marked_graph(settings, request)


async def run_graph(harness: Harness, name: str) -> Run:
    """Start a run of the worker's test graph (``name`` says which, for the reader)."""
    assert harness.settings.agent.endswith(f":{name}")
    return await harness.start_run(f"run the {name} graph")


async def answers(harness: Harness, run: Run) -> dict[str, Any]:
    """The answers the graph was resumed with (its final answer's JSON)."""
    done = await harness.finished(run)
    assert done.state == RunState.DONE and done.final_answer, done.error
    result: dict[str, Any] = json.loads(done.final_answer)
    return result


async def submit(
    harness: Harness, request: ApprovalRequest, decision: DecisionType, values: dict[str, Any]
) -> dict[str, Any] | None:
    """Open ``decision``'s modal on the card and submit ``values``; return the ack's body."""
    view = await harness.open_modal(request, decision)
    status, body = await harness.sandbox.submit_view(
        view_id=view["id"], user_id=REVIEWER, values=values
    )
    assert status == 200
    return body


def card_of(harness: Harness, request: ApprovalRequest) -> dict[str, Any]:
    assert request.channel_id and request.message_ts
    return harness.sandbox.message(request.channel_id, request.message_ts)


@pytest.mark.graph("inbox")
async def test_a_human_interrupt_card_has_its_configs_buttons_and_an_accept_resumes_it(
    harness: Harness,
) -> None:
    run = await run_graph(harness, "inbox")
    (request,) = await harness.requests(run, count=1)
    assert decision_buttons(card_of(harness, request)) == [
        ids.decision_action_id(d) for d in ("approve", "edit", "respond", "ignore")
    ]
    status, _ = await harness.click(request, "approve")
    assert status == 200
    assert await answers(harness, run) == {"inbox": {"type": "accept", "args": None}}


@pytest.mark.graph("inbox")
async def test_a_human_interrupt_ignored_is_resumed_with_ignore_and_the_card_says_so(
    harness: Harness,
) -> None:
    run = await run_graph(harness, "inbox")
    (request,) = await harness.requests(run, count=1)
    await harness.click(request, "ignore")
    assert await answers(harness, run) == {"inbox": {"type": "ignore", "args": None}}
    card = await harness.decided_card(request)
    assert "Ignored" in json.dumps(card["blocks"], ensure_ascii=False)
    decided = await harness.store.get_request(request.request_id)
    assert decided is not None and decided.state == ApprovalState.APPLIED
    assert decided.decision is not None and decided.decision.type == "ignore"


@pytest.mark.graph("inbox")
async def test_a_human_interrupt_answered_is_resumed_with_a_response(harness: Harness) -> None:
    run = await run_graph(harness, "inbox")
    (request,) = await harness.requests(run, count=1)
    assert await submit(harness, request, "respond", {ids.ANSWER_BLOCK: "next week"}) is None
    assert await answers(harness, run) == {"inbox": {"type": "response", "args": "next week"}}


@pytest.mark.graph("inbox")
async def test_a_human_interrupt_edited_is_resumed_with_the_edited_action(
    harness: Harness,
) -> None:
    run = await run_graph(harness, "inbox")
    (request,) = await harness.requests(run, count=1)
    body = await submit(harness, request, "edit", {ids.arg_block_id("subject"): "Monthly report"})
    assert body is None
    edited = {**INBOX_ARGS, "subject": "Monthly report"}
    assert await answers(harness, run) == {
        "inbox": {"type": "edit", "args": {"action": "send_email", "args": edited}}
    }


@pytest.mark.graph("form")
async def test_a_json_schema_interrupt_is_a_form_whose_invalid_answer_is_a_field_error(
    harness: Harness,
) -> None:
    run = await run_graph(harness, "form")
    (request,) = await harness.requests(run, count=1)
    card = card_of(harness, request)
    assert decision_buttons(card) == [ids.decision_action_id("edit")]
    assert "Fill in" in json.dumps(card["blocks"])
    environment = {ids.arg_block_id("environment"): json.dumps("staging")}
    body = await submit(
        harness, request, "edit", {**environment, ids.arg_block_id("replicas"): "9"}
    )
    assert body is not None and body["response_action"] == "errors"
    assert set(body["errors"]) == {ids.arg_block_id("replicas")}
    pending = await harness.store.get_request(request.request_id)
    assert pending is not None and pending.state == ApprovalState.PENDING
    status, body = await harness.sandbox.submit_view(
        view_id=harness.top_view(REVIEWER)["id"],
        user_id=REVIEWER,
        values={**environment, ids.arg_block_id("replicas"): "3"},
    )
    assert status == 200 and body is None
    assert await answers(harness, run) == {"form": {"environment": "staging", "replicas": 3}}


@pytest.mark.graph("plain")
async def test_a_plain_value_interrupt_shows_the_value_and_takes_a_free_text_answer(
    harness: Harness,
) -> None:
    run = await run_graph(harness, "plain")
    (request,) = await harness.requests(run, count=1)
    card = card_of(harness, request)
    assert decision_buttons(card) == [ids.decision_action_id("respond")]
    assert PLAIN_QUESTION in json.dumps(card["blocks"])
    await submit(harness, request, "respond", {ids.ANSWER_BLOCK: "eu-west-1"})
    assert await answers(harness, run) == {"plain": "eu-west-1"}


@pytest.mark.graph("parallel")
async def test_two_parallel_branches_get_two_cards_each_resumed_by_its_id(
    harness: Harness,
) -> None:
    run = await run_graph(harness, "parallel")
    requests = await harness.requests(run, count=2)
    left, right = sorted(requests, key=lambda r: r.description)
    assert left.interrupt_id != right.interrupt_id and left.message_ts != right.message_ts
    await submit(harness, right, "respond", {ids.ANSWER_BLOCK: "R"})

    async def right_applied() -> bool:
        stored = await harness.store.get_request(right.request_id)
        return stored is not None and stored.state == ApprovalState.APPLIED

    await harness.wait_for(right_applied)
    still = await harness.store.get_request(left.request_id)
    assert still is not None and still.state == ApprovalState.PENDING
    assert still.message_ts == left.message_ts  # the same card, not posted again
    await submit(harness, left, "respond", {ids.ANSWER_BLOCK: "L"})
    assert await answers(harness, run) == {"left": "L", "right": "R"}


@pytest.mark.graph("subgraph")
async def test_a_sub_graphs_interrupt_gets_its_card_and_is_resumed_by_id(
    harness: Harness,
) -> None:
    run = await run_graph(harness, "subgraph")
    (request,) = await harness.requests(run, count=1)
    assert request.mode == "plain_value"
    await submit(harness, request, "respond", {ids.ANSWER_BLOCK: "eu-west-1"})
    assert await answers(harness, run) == {"plain": "eu-west-1"}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.graph(name))
        for name in ("lookalike_type", "lookalike_actions", "lookalike_text")
    ],
)
async def test_a_value_with_a_key_of_the_middlewares_is_still_asked_as_it_reads(
    harness: Harness, name: str
) -> None:
    """A node's own ``{"type": "tool_approval", ...}`` or ``action_requests`` of
    another shape is not the middleware's (the driver crashed reading its call): its
    card shows the value, and the answer reaches the node."""
    run = await run_graph(harness, name)
    (request,) = await harness.requests(run, count=1)
    card = json.dumps(card_of(harness, request)["blocks"])
    assert "Deploy?" in card and ids.decision_action_id("respond") in card
    await submit(harness, request, "respond", {ids.ANSWER_BLOCK: "not today"})
    assert await answers(harness, run) == {name: "not today"}


@pytest.mark.parametrize(
    ("name", "typed", "wrong", "answer"),
    [
        pytest.param(
            "typed_list", '["a", "b"]', '"a"', ["a", "b"], marks=pytest.mark.graph("typed_list")
        ),
        pytest.param("typed_count", "3", "0", 3, marks=pytest.mark.graph("typed_count")),
    ],
)
async def test_an_answer_that_is_no_object_is_one_typed_field(
    harness: Harness, name: str, typed: str, wrong: str, answer: Any
) -> None:
    """``interrupt(..., response_schema=list[str])`` (LangGraph checks the answer
    against it: a text was refused at every try) or a dict schema of a number (which
    LangGraph passes through unchecked: the node got a string): the card is a form of
    one field of that type; a wrong answer is a field error, a right one reaches the
    node typed."""
    run = await run_graph(harness, name)
    (request,) = await harness.requests(run, count=1)
    assert decision_buttons(card_of(harness, request)) == [ids.decision_action_id("edit")]
    field = ids.arg_block_id("answer")
    body = await submit(harness, request, "edit", {field: wrong})
    assert body is not None and set(body["errors"]) == {field}, body
    status, body = await harness.sandbox.submit_view(
        view_id=harness.top_view(REVIEWER)["id"], user_id=REVIEWER, values={field: typed}
    )
    assert status == 200 and body is None, body
    assert await answers(harness, run) == {name: answer}

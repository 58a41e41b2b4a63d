"""A malicious agent's interrupts, end to end through the sandbox
(tests/hostile_interrupt_graphs.py): whatever the graph raises, Slack accepts every
card and modal (the harness fixture checks ``sandbox.violations``), the reviewer can
answer or is told why not, and the graph gets an answer of the shape it asked for."""

from __future__ import annotations

import json

import pytest
from langgraph.types import Interrupt

from agent_bridge.interrupt_shapes import asks_of
from agent_bridge.models import ApprovalRequest, ApprovalState, Run, RunState
from agent_bridge.settings import WorkerConfig
from bot import ids
from slack_sandbox import live_mentions, message_live_links
from tests.harness import REVIEWER, Harness, decision_buttons
from tests.hostile_interrupt_graphs import BROKEN_QUESTION, BROKEN_SCHEMAS
from tests.interrupt_graphs import marked_graph
from tests.test_any_interrupt import card_of


@pytest.fixture
def agent_settings(settings: WorkerConfig, request: pytest.FixtureRequest) -> WorkerConfig:
    return marked_graph(settings, request, "tests.hostile_interrupt_graphs")


async def finished_answer(harness: Harness, run: Run) -> object:
    done = await harness.finished(run)
    assert done.state == RunState.DONE and done.final_answer, done.error
    return json.loads(done.final_answer)["ask"]


@pytest.mark.parametrize(
    "graph", [pytest.param(name, marks=pytest.mark.graph(name)) for name in BROKEN_SCHEMAS]
)
async def test_an_interrupt_whose_schema_is_broken_is_a_question_answered_in_words(
    harness: Harness, graph: str
) -> None:
    """A schema ``jsonschema`` cannot check an answer against (an unknown type, a remote
    or dangling ``$ref``, a ``$ref`` loop, a pattern that is no regex) is no form: the
    submission would raise where the form is checked, so the reviewer could never
    answer. It is read as a plain value: the card shows it, the answer is text."""
    run = await harness.start_run(f"run the {graph} graph")
    (request,) = await harness.requests(run, count=1)
    assert request.mode == "plain_value"
    card = card_of(harness, request)
    assert decision_buttons(card) == [ids.decision_action_id("respond")]
    assert BROKEN_QUESTION in json.dumps(card["blocks"])
    view = await harness.open_modal(request, "respond")
    status, body = await harness.sandbox.submit_view(
        view_id=view["id"], user_id=REVIEWER, values={ids.ANSWER_BLOCK: "eu-west-1"}
    )
    assert status == 200 and body is None
    assert await finished_answer(harness, run) == "eu-west-1"


def test_a_schema_that_recurses_through_the_value_is_still_a_form() -> None:
    """A ``$ref`` back to the root under ``properties`` reaches into the value (a tree):
    checking a finite answer ends, so it stays a form."""
    tree = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "child": {"$ref": "#"}},
        "$defs": {"Leaf": {"anyOf": [{"$ref": "#/$defs/Name"}, {"type": "null"}]}},
    }
    tree["$defs"]["Name"] = {"type": "string"}  # type: ignore[index]
    mode, (ask,) = asks_of(Interrupt(value={"json_schema": tree}, id="i1"))
    assert mode == "json_schema" and ask.args_schema == tree


@pytest.mark.graph("restless")
async def test_an_answer_to_a_question_the_graph_has_since_changed_is_not_sent(
    harness: Harness,
) -> None:
    """A plain interrupt's question is its description (it has no arguments): the
    ``call_hash`` binding the answer to what the reviewer read must cover it, or an
    answer to "(asked 1)" resumes "(asked 2)" under the same interrupt ID."""
    run = await harness.start_run("run the restless graph")
    requests = await harness.requests(run, count=2)
    (left,) = [r for r in requests if r.description == "Left?"]
    (right,) = [r for r in requests if r is not left]
    asked = right.description  # "(asked N)": N counts the branch's runs in this process
    await submit_answer(harness, left, "L")
    await submit_answer(harness, right, "R1")

    async def reopened() -> ApprovalRequest | None:
        stored = await harness.store.get_request(right.request_id)
        pending = stored and stored.state == ApprovalState.PENDING and stored.note
        return stored if pending else None

    now = await harness.wait_for(reopened)
    assert now.description != asked

    async def redrawn() -> str | None:  # the card is redrawn after the request is reopened
        blocks = json.dumps(card_of(harness, now)["blocks"])
        return blocks if now.description in blocks else None

    await harness.wait_for(redrawn)
    await submit_answer(harness, now, "R2")
    done = await harness.finished(run)
    assert done.state == RunState.DONE and done.final_answer
    assert json.loads(done.final_answer) == {"left": "L", "right": "R2"}


async def submit_answer(harness: Harness, request: ApprovalRequest, text: str) -> None:
    view = await harness.open_modal(request, "respond")
    status, body = await harness.sandbox.submit_view(
        view_id=view["id"], user_id=REVIEWER, values={ids.ANSWER_BLOCK: text}
    )
    assert status == 200 and body is None, body


@pytest.mark.graph("marked_up")
async def test_markup_in_every_field_of_a_human_interrupt_stays_text(harness: Harness) -> None:
    """Slack markup in the action, an argument's name and value and the description:
    the card and each modal Slack accepts (the fixture checks ``violations``), with no
    live mention or link anywhere."""
    run = await harness.start_run("run the marked_up graph")
    (request,) = await harness.requests(run, count=1)
    surfaces = [card_of(harness, request)]
    for decision in ("edit", "respond"):
        surfaces.append(await harness.open_modal(request, decision))
    for surface in surfaces:
        texts = _mrkdwn(surface["blocks"])
        assert texts and not [m for t in texts for m in live_mentions(t)]
    assert not message_live_links(surfaces[0].get("text"), surfaces[0]["blocks"])


def _mrkdwn(node: object) -> list[str]:
    if isinstance(node, dict):
        own = [node["text"]] if node.get("type") == "mrkdwn" else []
        return own + [t for v in node.values() for t in _mrkdwn(v)]
    if isinstance(node, list):
        return [t for v in node for t in _mrkdwn(v)]
    return []

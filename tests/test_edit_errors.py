"""End to end: an edit the tool's schema refuses is a field error in the modal.

With a brought-in agent whose tool has structured arguments (``tests.report_agent``),
so the form has JSON and number inputs that Slack's client lets through unchecked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_bridge import wording
from agent_bridge.models import ApprovalState, DecisionType, RunState
from agent_bridge.scripted_model import DEMO_TASK
from agent_bridge.settings import WorkerConfig
from bot import ids
from tests.harness import REVIEWER, Harness

FIXTURES = Path(__file__).parent / "fixtures"
CALL = {
    "tool_calls": [
        {
            "name": "send_report",
            "args": {"recipients": ["ada@example.com"], "copies": 2, "subject": "November"},
        }
    ]
}


@pytest.fixture
def agent_settings(settings: WorkerConfig) -> WorkerConfig:
    return settings.model_copy(
        update={"agent": "tests.report_agent:tools", "policy": FIXTURES / "report_policy.yml"}
    )


async def open_edit(harness: Harness) -> tuple[Any, dict[str, Any]]:
    run = await harness.start_run(CALL)
    (request,) = await harness.requests(run, count=1)
    assert request.description == "📨 2 copies of 'November' will go out"  # the callable's
    view = await harness.open_modal(request, "edit")
    return request, view


@pytest.mark.parametrize(
    ("values", "errors"),
    [
        (
            {ids.arg_block_id("recipients"): '["ada@example.com",'},
            {ids.arg_block_id("recipients"): "Not valid JSON"},
        ),
        (
            {ids.arg_block_id("recipients"): '"ada@example.com"'},
            {ids.arg_block_id("recipients"): "Must be a list"},
        ),
        (
            {ids.arg_block_id("recipients"): '[1, "ada@example.com"]'},
            {ids.arg_block_id("recipients"): "string"},
        ),
        (  # a lone surrogate, as a JSON escape and sent raw: not text, nothing stored
            {ids.arg_block_id("recipients"): '["\\ud800"]', ids.arg_block_id("subject"): "x\ud800"},
            {ids.arg_block_id("recipients"): "surrogate", ids.arg_block_id("subject"): "not text"},
        ),
    ],
)
async def test_a_bad_edit_is_a_field_error_and_stays_pending(
    harness: Harness, values: dict[str, str], errors: dict[str, str]
) -> None:
    request, view = await open_edit(harness)
    status, body = await harness.sandbox.submit_view(
        view_id=view["id"], user_id=REVIEWER, values=values
    )
    assert status == 200 and body is not None and body["response_action"] == "errors"
    assert set(body["errors"]) == set(errors)
    for block_id, words in errors.items():
        assert words.lower() in body["errors"][block_id].lower(), body["errors"]
    stored = await harness.store.get_request(request.request_id)
    assert stored is not None and stored.state == ApprovalState.PENDING and not stored.decision


async def test_a_good_structured_edit_reaches_the_tool(harness: Harness) -> None:
    request, view = await open_edit(harness)
    status, body = await harness.sandbox.submit_view(
        view_id=view["id"],
        user_id=REVIEWER,
        values={
            ids.arg_block_id("recipients"): '["grace@example.com", "ken@example.com"]',
            ids.arg_block_id("copies"): "3",
        },
    )
    assert status == 200 and not body, body
    run = await harness.finished(await harness.store.get_run(request.run_id))
    assert run.state == RunState.DONE
    (result,) = await harness.tool_messages(run)
    assert "Sent 3 copies of 'November' to grace@example.com, ken@example.com" in result.content


class TestAReasonOrAnswer:
    """On the demo agent's ``write_file``, which allows all four decisions."""

    @pytest.fixture
    def agent_settings(self, settings: WorkerConfig) -> WorkerConfig:
        return settings

    @pytest.mark.parametrize(
        ("decision", "block_id"), [("reject", ids.REASON_BLOCK), ("respond", ids.ANSWER_BLOCK)]
    )
    async def test_that_is_not_text_is_a_field_error(
        self, harness: Harness, decision: DecisionType, block_id: str
    ) -> None:
        """A lone surrogate in a Reject's reason or a Respond's answer (a forged
        payload's) cannot be stored: an error on that field, not "something went wrong"."""
        run = await harness.start_run(DEMO_TASK)
        write, _ = await harness.requests(run, count=2)
        view = await harness.open_modal(write, decision)
        status, body = await harness.sandbox.submit_view(
            view_id=view["id"], user_id=REVIEWER, values={block_id: "no \udc00 way"}
        )
        assert status == 200 and body is not None and body["response_action"] == "errors"
        assert body["errors"] == {block_id: wording.NOT_TEXT_PLAIN}
        stored = await harness.store.get_request(write.request_id)
        assert stored is not None and stored.state == ApprovalState.PENDING and not stored.decision

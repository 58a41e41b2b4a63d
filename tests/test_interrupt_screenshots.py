"""Screenshots of the cards of interrupts that are not the middleware's, as a reviewer sees
them in the sandbox page (headless Chromium): an Agent Inbox action, a JSON-schema form,
a plain question. Saved under ``SCREENSHOTS_DIR`` (tests/browser.py) to be looked at."""

from __future__ import annotations

import pytest

from agent_bridge.interrupt_wording import FORM_BUTTON
from agent_bridge.settings import WorkerConfig
from tests.browser import shoot_card
from tests.harness import Harness
from tests.interrupt_graphs import INBOX_ARGS, PLAIN_QUESTION, marked_graph


@pytest.fixture
def agent_settings(settings: WorkerConfig, request: pytest.FixtureRequest) -> WorkerConfig:
    return marked_graph(settings, request)


async def shot(harness: Harness, name: str, showing: str) -> str:
    run = await harness.start_run(f"run the {name} graph")
    (request,) = await harness.requests(run, count=1)
    return await shoot_card(harness.sandbox.base_url, request, f"interrupt-{name}", showing)


@pytest.mark.graph("inbox")
async def test_an_agent_inbox_action_card(harness: Harness) -> None:
    shown = await shot(harness, "inbox", "Ignore")
    assert "Send the weekly report?" in shown and INBOX_ARGS["to"] in shown
    assert "Reject" not in shown  # the config's buttons only


@pytest.mark.graph("form")
async def test_a_json_schema_form_card(harness: Harness) -> None:
    shown = await shot(harness, "form", FORM_BUTTON)
    assert "Where should it deploy?" in shown


@pytest.mark.graph("plain")
async def test_a_plain_question_card(harness: Harness) -> None:
    shown = await shot(harness, "plain", PLAIN_QUESTION)
    assert "Respond" in shown or "Answer" in shown, shown

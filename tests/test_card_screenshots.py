"""Each kind of card as a reviewer sees it: the sandbox page in headless Chromium.

Every test drives a real run through the web and worker processes' code and the
sandbox, opens the card by its permalink in the browser, saves its screenshot
(``tests/browser.py``: ``SCREENSHOTS_DIR``) and checks what the browser shows: the
words a reviewer reads, and none of what must not be there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_bridge.models import ApprovalRequest, Run
from agent_bridge.policy_file import DEMO_POLICY_PATH
from agent_bridge.scripted_model import RESET_REASON, RESET_TASK
from agent_bridge.settings import WorkerConfig
from bot import ids
from tests.browser import sandbox_page, shoot_card, shoot_message
from tests.harness import DBA, REVIEWER, Harness

FIXTURES = Path(__file__).parent / "fixtures"
REASON = "The quarterly report you asked for goes to reports/q3.txt."


@pytest.fixture
def agent_settings(settings: WorkerConfig) -> WorkerConfig:
    return settings.model_copy(update={"policy": FIXTURES / "routed_policy.yml"})


CONTENT = "".join(f"line {i}\n" for i in range(1, 13))


def write_task(path: str = "reports/q3.txt", content: str = CONTENT) -> dict[str, Any]:
    return {
        "say": REASON,
        "tool_calls": [{"name": "write_file", "args": {"path": path, "content": content}}],
    }


async def routed(harness: Harness, task: str | dict[str, Any]) -> tuple[Run, ApprovalRequest]:
    run = await harness.start_run(task)
    (request,) = await harness.requests(run, count=1)
    return await harness.store.get_run(run.run_id), request


async def test_a_pending_card_in_the_approvals_channel(harness: Harness) -> None:
    _, request = await routed(harness, write_task())
    shown = await shoot_card(harness.sandbox.base_url, request, "pending-card-elsewhere", "Approve")
    assert "Asked by alice" in shown and "Open the run's thread" in shown
    assert REASON in shown and "reports/q3.txt" in shown
    assert "line 12" in shown
    assert "@alice" not in shown  # named, not mentioned


class TestABatchedCardWithoutEdit:
    """The demo's policy (batched): a model that gave its gated call's ID to another
    call of the turn too gets a card without Edit, which says why."""

    @pytest.fixture
    def agent_settings(self, settings: WorkerConfig) -> WorkerConfig:
        return settings.model_copy(update={"policy": DEMO_POLICY_PATH})

    async def test_the_card_says_why_it_offers_no_edit(self, harness: Harness) -> None:
        shared = write_task()
        shared["tool_calls"] = [
            {**shared["tool_calls"][0], "id": "call_1"},
            {"name": "read_data", "args": {"table": "orders"}, "id": "call_1"},
        ]
        _, request = await routed(harness, shared)
        shown = await shoot_card(harness.sandbox.base_url, request, "edit-withheld", "No Edit here")
        assert "other calls of the same turn" in shown and "Approve" in shown
        assert "Edit" not in shown.replace("No Edit here", "")


async def test_an_approved_card_once_its_call_ran(harness: Harness) -> None:
    run, request = await routed(harness, write_task())
    await harness.click(request, "approve")
    await harness.finished(run)
    shown = await shoot_card(
        harness.sandbox.base_url, request, "approved-and-ran", "The call ran and succeeded"
    )
    assert "Approved by @reviewer" in shown and f"Wrote {len(CONTENT)} characters" in shown


async def test_an_edited_card_shows_what_changed(harness: Harness) -> None:
    run, request = await routed(harness, write_task())
    view = await harness.open_modal(request, "edit")
    content = CONTENT.replace("line 6\n", "line six\n")
    status, body = await harness.sandbox.submit_view(
        view_id=view["id"], user_id=REVIEWER, values={ids.arg_block_id("content"): content}
    )
    assert status == 200 and not body, body
    await harness.finished(run)
    shown = await shoot_card(
        harness.sandbox.base_url, request, "edited", "The call ran and succeeded"
    )
    assert "What the edit changed" in shown and "-line 6" in shown and "+line six" in shown


async def test_a_failed_call_on_its_card(harness: Harness) -> None:
    run, request = await routed(harness, write_task(path="/etc/passwd"))
    await harness.click(request, "approve")
    await harness.finished(run)
    shown = await shoot_card(
        harness.sandbox.base_url, request, "approved-and-failed", "The call ran and failed"
    )
    assert str(harness.settings.workspace_dir) not in shown and "Refused" not in shown


async def test_an_approved_card_whose_run_failed_as_its_call_ran(harness: Harness) -> None:
    (harness.settings.workspace_dir / "files" / "reports").mkdir(parents=True)
    run, request = await routed(harness, write_task(path="reports"))  # a directory: raises
    await harness.click(request, "approve")
    await harness.finished(run)
    shown = await shoot_card(
        harness.sandbox.base_url, request, "approved-run-failed", "may have run"
    )
    assert "Approved" in shown and "check its effects before running it again" in shown
    assert "will not run" not in shown and "IsADirectoryError" not in shown


async def test_a_rejected_card(harness: Harness) -> None:
    run, request = await routed(harness, write_task())
    await harness.reject(request, "Not this quarter's numbers", user_id=REVIEWER)
    await harness.finished(run)
    shown = await shoot_card(harness.sandbox.base_url, request, "rejected", "Rejected")
    assert "Not this quarter's numbers" in shown and "The call ran" not in shown


async def test_the_run_thread_with_its_pointer(harness: Harness) -> None:
    run, request = await routed(harness, write_task())
    await harness.click(request, "approve")
    await harness.finished(run)
    assert run.thread_ts
    async with sandbox_page(harness.sandbox.base_url) as page:
        shown = await shoot_message(
            page,
            harness.sandbox.base_url,
            run.channel_id,
            run.thread_ts,
            name="run-thread",
            showing="The call ran and succeeded",
        )
    assert "Approved" in shown and "#approvals" in shown


class TestWhatADbaSees:
    """The demo's policy: ``execute_sql`` cards in #approvals, for the DBA group, with the
    statement's risk and the rows it would touch (counted read-only in the demo's SQLite
    database). The README shows this screenshot."""

    @pytest.fixture
    def agent_settings(self, settings: WorkerConfig) -> WorkerConfig:
        return settings.model_copy(update={"policy": DEMO_POLICY_PATH})

    async def test_an_update_without_where(self, harness: Harness) -> None:
        await harness.sandbox.set_usergroup("S0DBA", "dba-team", [DBA])
        _, request = await routed(harness, RESET_TASK)
        assert request.channel_id == "C0APPROVAL"
        shown = await shoot_card(
            harness.sandbox.base_url, request, "dba-update-without-where", "Approve"
        )
        assert "SQL risk: Destructive · UPDATE" in shown
        assert "UPDATE orders without WHERE: every row of the table" in shown
        assert "Affected rows: 5 (exact count)" in shown
        assert "Needs 2 approvals from different people" in shown and "@dba-team" in shown
        assert "Asked by alice" in shown and RESET_REASON in shown

"""End to end: every decision in both interrupt modes, batched progress, refused answers,
and conditional gating. Real PostgreSQL, Redis, sandbox Slack, web app and worker.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agent_bridge.models import ApprovalState, RunState
from agent_bridge.policy_file import POLICIES_DIR
from agent_bridge.scripted_model import DEMO_TASK
from agent_bridge.settings import WebConfig, WorkerConfig
from bot import ids
from tests.harness import DBA, REVIEWER, Harness

REASON = "Archive the rows before deleting them."
MODES = ["batched", "per_call"]
UPDATE_ID = "UPDATE orders SET total = total + 1 WHERE id = {}"


@pytest.fixture(params=MODES)
def agent_settings(request: pytest.FixtureRequest, settings: WorkerConfig) -> WorkerConfig:
    if request.param == "per_call":
        return settings.model_copy(update={"policy": POLICIES_DIR / "per_call.yml"})
    return settings


def buttons(harness: Harness, request: Any) -> list[str]:
    message = harness.sandbox.message(request.channel_id, request.message_ts)
    return [
        e["action_id"].removeprefix(ids.ACTION_PREFIX)
        for b in message["blocks"]
        if b["type"] == "actions"
        for e in b["elements"]
        if e["action_id"].startswith(ids.ACTION_PREFIX)
    ]


async def submit(harness: Harness, view: dict[str, Any], values: dict[str, str]) -> None:
    status, body = await harness.sandbox.submit_view(
        view_id=view["id"], user_id=REVIEWER, values=values
    )
    assert status == 200 and not body, body


async def test_a_gated_call_reusing_an_earlier_turns_tool_call_id_gets_its_result(
    harness: Harness,
) -> None:
    """A model that numbers each turn's calls afresh (``call_0`` in every turn, as some
    OpenAI-compatible servers do): the gated call of the second turn has its own result in
    the thread and on its card, though an ungated call of the first turn had its ID."""
    task = {
        "ids": "per_turn",
        "tool_calls": [{"name": "read_data", "args": {"table": "orders"}}],
        "then": [[{"name": "write_file", "args": {"path": "notes/a.txt", "content": "x"}}]],
    }
    run = await harness.start_run(task)
    (write,) = await harness.requests(run, count=1)
    assert write.tool_call_id != "call_0"  # the first turn's call_0 is another call
    assert (await harness.click(write, "approve"))[0] == 200
    done = await harness.finished(run)
    texts = harness.slack_thread_texts(done)[1:-1]  # between the header and the answer
    assert texts == [
        "read_data ran",
        "✅ Approved: write_file",  # the card
        "write_file returned: Wrote 1 characters to notes/a.txt",
    ]
    (decided,) = await harness.store.requests_for_run(run.run_id)
    assert decided.result is not None and decided.result.ok, decided.result
    assert "Wrote 1 characters" in decided.result.text


@pytest.mark.parametrize("call_id", ["dup", ""])
async def test_a_batched_card_offers_no_edit_its_middleware_would_not_confine_to_its_call(
    harness: Harness, call_id: str
) -> None:
    """A turn whose gated ``write_file`` has no tool call ID, or shares its ID with an
    ungated ``read_data``: batched, LangChain would drop an edit of it, or run the edit in
    place of both (``interrupts.TurnCall.edit_withheld``), so its card offers no Edit and says
    why; per call, the card's answer is its own, and Edit stays. Approved, each call runs
    as the model asked."""
    task = {
        "tool_calls": [
            {"name": "write_file", "args": {"path": "notes/d.txt", "content": "d"}, "id": call_id},
            {"name": "read_data", "args": {"table": "orders"}, "id": "dup"},
        ]
    }
    run = await harness.start_run(task)
    (write,) = await harness.requests(run, count=1)
    assert write.channel_id and write.message_ts
    shown = json.dumps(harness.sandbox.message(write.channel_id, write.message_ts)["blocks"])
    if write.mode == "batched":
        assert buttons(harness, write) == ["approve", "reject", "respond"]
        assert ("an empty ID" if call_id == "" else "other calls of the same turn") in shown
    else:
        assert buttons(harness, write) == ["approve", "edit", "reject", "respond"]
        assert "No Edit here" not in shown
    assert (await harness.click(write, "approve"))[0] == 200
    done = await harness.finished(run)
    assert done.state == RunState.DONE
    assert (harness.settings.workspace_dir / "files/notes/d.txt").read_text() == "d"
    assert any(t.startswith("read_data") for t in harness.slack_thread_texts(done))


async def test_a_call_reusing_a_rejected_calls_id_is_shown_as_itself_not_as_the_rejection(
    harness: Harness,
) -> None:
    """Two gated calls with the same ID in two turns: the first rejected, the second
    approved. The second's result is its tool's output, not the first's rejection."""
    task = {
        "ids": "per_turn",
        "tool_calls": [{"name": "write_file", "args": {"path": "notes/a.txt", "content": "a"}}],
        "then": [[{"name": "write_file", "args": {"path": "notes/b.txt", "content": "bb"}}]],
    }
    run = await harness.start_run(task)
    (first,) = await harness.requests(run, count=1)
    await harness.reject(first, REASON, user_id=REVIEWER)
    _, second = await harness.requests(run, count=2)
    assert second.tool_call_id != first.tool_call_id
    assert (await harness.click(second, "approve"))[0] == 200
    done = await harness.finished(run)
    assert (harness.settings.workspace_dir / "files/notes/b.txt").read_text() == "bb"
    assert not (harness.settings.workspace_dir / "files/notes/a.txt").exists()
    texts = harness.slack_thread_texts(done)[1:-1]  # between the header and the answer
    assert texts == [
        "❌ Rejected: write_file",  # the first card
        "write_file rejected",
        "✅ Approved: write_file",
        "write_file returned: Wrote 2 characters to notes/b.txt",
    ]
    rejected, approved = await harness.store.requests_for_run(run.run_id)
    assert rejected.result is not None and not rejected.result.ok
    assert approved.result is not None and approved.result.ok, approved.result
    assert "Wrote 2 characters" in approved.result.text


async def test_a_statement_whose_call_reuses_an_earlier_turns_id_runs(harness: Harness) -> None:
    """The demo's ``execute_sql`` keys its idempotency on more than the tool call ID: a
    second turn's UPDATE named ``call_0`` like the first's is run, not taken for done."""
    task = {
        "ids": "per_turn",
        "tool_calls": [{"name": "execute_sql", "args": {"query": UPDATE_ID.format(2)}}],
        "then": [[{"name": "execute_sql", "args": {"query": UPDATE_ID.format(3)}}]],
    }
    run = await harness.start_run(task)
    (first,) = await harness.requests(run, count=1)
    await harness.click(first, "approve", user_id=DBA)
    _, second = await harness.requests(run, count=2)
    await harness.click(second, "approve", user_id=DBA)
    assert (await harness.finished(run)).state == RunState.DONE
    with sqlite3.connect(harness.settings.workspace_dir / "orders.db") as conn:
        totals = dict(conn.execute("SELECT id, total FROM orders WHERE id IN (2, 3)").fetchall())
    assert totals == {2: 75.5 + 1, 3: 310.25 + 1}


async def test_respond_answers_ask_user_as_a_successful_tool_result(harness: Harness) -> None:
    run = await harness.start_run(
        {"tool_calls": [{"name": "ask_user", "args": {"question": "Which year counts as old?"}}]}
    )
    (ask,) = await harness.requests(run, count=1)
    assert buttons(harness, ask) == ["respond"]
    assert await _has(harness, ask, "The agent asks you")
    view = await harness.open_modal(ask, "respond")
    assert "Which year counts as old?" in json.dumps(view["blocks"])
    await submit(harness, view, {ids.ANSWER_BLOCK: "Anything before 2024"})
    done = await harness.finished(run)
    (result,) = await harness.tool_messages(run)
    assert result.status == "success" and result.content == "Anything before 2024"
    assert "Anything before 2024" in (done.final_answer or "")


async def test_respond_on_write_file_skips_the_tool(harness: Harness) -> None:
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    view = await harness.open_modal(write, "respond")
    await submit(harness, view, {ids.ANSWER_BLOCK: "Already archived last week."})
    await harness.reject(sql, REASON)
    await harness.finished(run)
    assert not (harness.settings.workspace_dir / "files/archive/old_orders.csv").exists()
    results = {m.name: m for m in await harness.tool_messages(run)}
    assert results["write_file"].content == "Already archived last week."


async def test_edit_then_reject_in_either_click_order(harness: Harness) -> None:
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    await harness.reject(sql, REASON)  # the second call decided first
    view = await harness.open_modal(write, "edit")
    await submit(harness, view, {ids.arg_block_id("content"): "id\n1\n"})
    await harness.finished(run)
    written = harness.settings.workspace_dir / "files/archive/old_orders.csv"
    assert written.read_text() == "id\n1\n"
    results = {m.name: m for m in await harness.tool_messages(run)}
    assert "Wrote 5 characters" in results["write_file"].content
    assert "replaced this tool call" in results["write_file"].content  # the edit notice
    assert REASON in results["execute_sql"].content


class TestBatched:
    @pytest.fixture
    def agent_settings(self, settings: WorkerConfig) -> WorkerConfig:
        return settings

    async def test_progress_shows_on_every_card_and_resume_waits_for_the_last(
        self, harness: Harness
    ) -> None:
        run = await harness.start_run(DEMO_TASK)
        write, sql = await harness.requests(run, count=2)
        assert "0 of 2 decided" in json.dumps(
            harness.sandbox.message(sql.channel_id or "", sql.message_ts or "")["blocks"]
        )
        await harness.click(write, "approve")
        await harness.wait_for(lambda: _has(harness, sql, "1 of 2 decided"))
        await harness.settled()  # a resume on the first decision would have run by now
        assert buttons(harness, sql) == ["approve", "reject"]
        assert not (harness.settings.workspace_dir / "files/archive/old_orders.csv").exists()
        assert (await harness.store.get_run(run.run_id)).state == RunState.WAITING
        approved = await harness.store.get_request(write.request_id)
        assert approved is not None and approved.state == ApprovalState.DECIDED  # not applied
        await harness.reject(sql, REASON)
        await harness.finished(run)
        assert (harness.settings.workspace_dir / "files/archive/old_orders.csv").exists()


class TestPerCall:
    @pytest.fixture
    def agent_settings(self, settings: WorkerConfig) -> WorkerConfig:
        return settings.model_copy(update={"policy": POLICIES_DIR / "per_call.yml"})

    async def test_each_call_is_its_own_interrupt_and_resumes_at_once(
        self, harness: Harness
    ) -> None:
        run = await harness.start_run(DEMO_TASK)
        write, sql = await harness.requests(run, count=2)
        assert write.interrupt_id != sql.interrupt_id
        assert (write.mode, write.batch_size, sql.index) == ("per_call", 1, 0)
        # read_data is not gated: it ran before anyone decided (its output stays out of
        # the channel: post_results defaults to reviewed calls only).
        await harness.wait_for(lambda: _slack_thread_has(harness, run, "read_data ran"))
        await harness.click(write, "approve")
        written = harness.settings.workspace_dir / "files/archive/old_orders.csv"
        await harness.wait_for(lambda: _exists(written))
        assert buttons(harness, sql) == ["approve", "reject"]
        stored_sql = await harness.store.get_request(sql.request_id)
        assert stored_sql is not None and stored_sql.state == ApprovalState.PENDING
        await harness.reject(sql, REASON)
        done = await harness.finished(run)
        assert done.state == RunState.DONE
        cards = [
            c
            for c in harness.sandbox.calls
            if c["method"] == "chat.postMessage"
            and "Approval needed" in json.dumps(c["args"].get("blocks", ""))
        ]
        assert len(cards) == 2  # the re-raised SQL interrupt was not posted again
        results = [m.name for m in await harness.tool_messages(run)]
        assert sorted(results) == ["execute_sql", "read_data", "write_file"]
        posted = [
            t
            for t in harness.slack_thread_texts(done)
            if "returned" in t or "failed" in t or t.endswith((" ran", " rejected"))
        ]
        assert len(posted) == 3, posted  # replayed results are not posted twice
        assert any(t == "execute_sql rejected" for t in posted)  # not "failed"

    async def test_an_edit_against_a_since_changed_schema_goes_back_to_pending(
        self, harness: Harness
    ) -> None:
        run = await harness.start_run(
            {"tool_calls": [{"name": "write_file", "args": {"path": "a.txt", "content": "x"}}]}
        )
        (write,) = await harness.requests(run, count=1)
        # The card was posted by older code whose schema accepted anything; the running
        # code's tool wants a string path. The worker re-checks before resuming.
        await harness.store.db.execute(
            "UPDATE approval_requests SET args_schema = :schema WHERE request_id = :id",
            {"schema": json.dumps({"type": "object"}), "id": write.request_id},
        )
        view = await harness.open_modal(write, "edit")
        status, body = await harness.sandbox.submit_view(
            view_id=view["id"],
            user_id=REVIEWER,
            values={ids.ARGS_JSON_BLOCK: json.dumps({"path": 7, "content": "x"})},
        )
        assert status == 200 and not body, body

        async def reopened() -> Any:
            current = await harness.store.get_request(write.request_id)
            return current if current and current.note else None

        current = await harness.wait_for(reopened)
        assert current.state == ApprovalState.PENDING
        assert (
            current.note
            == "the answer no longer fits the tool's arguments (path: Must be a string.)"
        )
        assert current.args_schema["properties"]["path"]["type"] == "string"  # schema refreshed
        await harness.wait_for(lambda: _has(harness, write, "decide again"))
        assert buttons(harness, write) == ["approve", "edit", "reject", "respond"]
        # The worker reopened the request while holding the run: wait for it to let go.
        assert (await harness.released(run)).state == RunState.WAITING
        await harness.click(write, "approve")
        assert (await harness.finished(run)).state == RunState.DONE


class TestConditionalGating:
    @pytest.fixture
    def agent_settings(self, settings: WorkerConfig) -> WorkerConfig:
        return settings.model_copy(update={"policy": POLICIES_DIR / "conditional.yml"})

    async def test_only_risky_calls_are_reviewed_and_the_rest_are_noted(
        self, harness: Harness
    ) -> None:
        run = await harness.start_run(
            {
                "tool_calls": [
                    {"name": "write_file", "args": {"path": "notes.txt", "content": "safe"}},
                    {"name": "execute_sql", "args": {"query": "SELECT COUNT(*) FROM orders"}},
                    {"name": "execute_sql", "args": {"query": "DELETE FROM orders"}},
                ]
            }
        )
        (delete,) = await harness.requests(run, count=1)
        assert delete.args == {"query": "DELETE FROM orders"}
        await harness.reject(delete, REASON, user_id=DBA)
        done = await harness.finished(run)
        texts = harness.slack_thread_texts(done)
        assert sum("ran without review" in t for t in texts) == 2, texts
        assert (harness.settings.workspace_dir / "files/notes.txt").read_text() == "safe"


async def _has(harness: Harness, request: Any, text: str) -> bool:
    message = harness.sandbox.message(request.channel_id, request.message_ts)
    return text in json.dumps(message["blocks"])


async def _slack_thread_has(harness: Harness, run: Any, text: str) -> bool:
    current = await harness.store.get_run(run.run_id)
    return current.thread_ts is not None and any(
        text in t for t in harness.slack_thread_texts(current)
    )


async def _exists(path: Path) -> bool:
    return path.exists()


class TestBothModesInOneDeployment:
    """Two agents, one web app and one database: #general's runs go to the default
    (batched) agent, #approvals' to the DBAs' per-call agent (``CHANNEL_AGENTS``)."""

    @pytest.fixture
    def agent_settings(self, settings: WorkerConfig) -> WorkerConfig:
        return settings

    @pytest.fixture
    def web_settings(self, web_settings: WebConfig) -> WebConfig:
        return web_settings.model_copy(update={"channel_agents": {"C0APPROVAL": "dba"}})

    @pytest.fixture
    def harness_options(self) -> dict[str, Any]:
        return {
            "worker_settings": [
                {},
                {"agent_name": "dba", "policy": POLICIES_DIR / "per_call.yml"},
            ]
        }

    async def test_each_run_goes_to_its_agent_and_mode(self, harness: Harness) -> None:
        batched = await harness.start_run(DEMO_TASK)
        per_call = await harness.start_run(DEMO_TASK, channel_id="C0APPROVAL")
        assert (batched.agent, per_call.agent) == ("default", "dba")
        b_write, b_sql = await harness.requests(batched, count=2)
        p_write, p_sql = await harness.requests(per_call, count=2)
        assert (b_write.mode, b_write.batch_size) == ("batched", 2)
        assert (p_write.mode, p_write.batch_size) == ("per_call", 1)
        assert (
            b_write.interrupt_id == b_sql.interrupt_id != p_write.interrupt_id != p_sql.interrupt_id
        )
        await harness.click(p_write, "approve")
        await harness.reject(p_sql, REASON)
        await harness.click(b_write, "approve")
        await harness.reject(b_sql, REASON)
        for run in (batched, per_call):
            done = await harness.finished(run)
            assert done.state == RunState.DONE and REASON in (done.final_answer or "")

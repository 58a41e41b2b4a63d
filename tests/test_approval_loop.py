"""End to end: /agent → worker → approval messages → clicks → resume from PostgreSQL.

Real PostgreSQL and Redis, the sandbox Slack over HTTP (signed form-encoded payloads),
the Bolt web app and a running worker; issue #2's scenarios (a)-(g), except (c),
which is in test_edit_errors.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from slack_sdk.signature import SignatureVerifier

from agent_bridge.logs import REFUSALS_LOGGER
from agent_bridge.models import ApprovalState, RunState
from agent_bridge.scripted_model import DEMO_TASK
from bot import ids
from slack_sandbox import live_mentions
from slack_sandbox.delivery import payload_body
from tests.harness import DBA, REVIEWER, Harness, decision_buttons
from tests.slack_bodies import card_click

REASON = "Archive the rows before deleting them."
WRITE_ARGS = {"path": "notes/a.txt", "content": "x"}


def orders_count(harness: Harness) -> int:
    with sqlite3.connect(harness.settings.workspace_dir / "orders.db") as conn:
        return int(conn.execute("SELECT COUNT(*) FROM orders").fetchone()[0])


def files_dir(harness: Harness) -> Path:
    return harness.settings.workspace_dir / "files"


async def test_documentation_scenario(harness: Harness) -> None:
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    assert (write.tool_name, sql.tool_name) == ("write_file", "execute_sql")
    assert write.interrupt_id == sql.interrupt_id and (write.index, sql.index) == (0, 1)
    message = harness.sandbox.message(write.channel_id or "", write.message_ts or "")
    assert decision_buttons(message) == [
        ids.decision_action_id(d) for d in ("approve", "edit", "reject", "respond")
    ]
    sql_message = harness.sandbox.message(sql.channel_id or "", sql.message_ts or "")
    assert "SQL execution requires DBA approval" in json.dumps(sql_message["blocks"])

    assert (await harness.click(write, "approve"))[0] == 200
    await harness.reject(sql, REASON)
    done = await harness.finished(run)

    assert done.state == RunState.DONE
    assert (files_dir(harness) / "archive/old_orders.csv").read_text().startswith("id,customer")
    assert orders_count(harness) == 5  # the DELETE never ran
    results = {m.name: m for m in await harness.tool_messages(run)}
    assert results["write_file"].content.startswith("Wrote ")
    assert REASON in results["execute_sql"].content and results["execute_sql"].status == "error"
    assert json.loads(results["read_data"].content)[0]["customer"] == "Ada"
    assert REASON in (done.final_answer or "")
    texts = harness.slack_thread_texts(done)
    assert any(REASON in t for t in texts), texts
    assert any("Wrote 78 characters" in t for t in texts), texts
    assert any(t.startswith("Done.") or "Done." in t for t in texts), texts
    decided = await harness.store.requests_for_run(run.run_id)
    assert {r.state for r in decided} == {ApprovalState.APPLIED}
    card = await harness.decided_card(write)  # redrawn by the app after the click's ack
    assert f"<@{REVIEWER}>" in json.dumps(card["blocks"])
    assert texts[0].startswith("Done: Archive old orders")  # the run's first message, redrawn
    # Where each message went is recorded: the drive's results and answer by the run's
    # release, in the statement that ended it.
    notices = await harness.store.db.fetch_all(
        "SELECT notice_key, message_ts FROM run_notices WHERE run_id = :run_id",
        {"run_id": run.run_id},
    )
    drives = {
        n["notice_key"]: n["message_ts"] for n in notices if not n["notice_key"].startswith("card:")
    }
    assert "final_answer" in drives and sum(k.startswith("tool:") for k in drives) == 3, drives
    assert all(n["message_ts"] for n in notices), notices
    for ts in drives.values():
        harness.sandbox.message(done.channel_id, ts)  # in the run's Slack thread


async def test_edit_changes_the_path_written(harness: Harness) -> None:
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    view = await harness.open_modal(write, "edit")
    assert len(view["title"]["text"]) <= 24
    status, body = await harness.sandbox.submit_view(
        view_id=view["id"],
        user_id=REVIEWER,
        values={ids.arg_block_id("path"): "archive/edited.csv"},
    )
    assert status == 200 and not body, body
    await harness.reject(sql, REASON)
    await harness.finished(run)
    assert (files_dir(harness) / "archive/edited.csv").exists()
    assert not (files_dir(harness) / "archive/old_orders.csv").exists()
    stored = await harness.store.get_request(write.request_id)
    assert stored and stored.decision and stored.decision.edited_args
    assert stored.decision.edited_args["path"] == "archive/edited.csv"
    texts = harness.slack_thread_texts(await harness.store.get_run(run.run_id))
    assert any(t.startswith("write_file (as edited) returned: Wrote ") for t in texts), texts
    results = [t for t in texts if " returned: " in t]
    assert results and not any("replaced this tool call" in t for t in results)  # model-only


async def test_five_concurrent_clicks_record_one_decision_and_run_once(harness: Harness) -> None:
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    users = ["U0REVIEWER", "U0DBA", "U0BOB", "U0REVIEWER", "U0DBA"]  # not the requester
    answers = await asyncio.gather(*(harness.click(write, "approve", user_id=u) for u in users))
    assert [status for status, _ in answers] == [200] * 5
    await harness.reject(sql, REASON)
    await harness.finished(run)
    stored = await harness.store.get_request(write.request_id)
    assert stored is not None and stored.decided_by in users
    writes = [m for m in await harness.tool_messages(run) if m.name == "write_file"]
    assert len(writes) == 1
    await harness.decided_card(write)  # the winner's last call; each loser's is its note
    notes = await harness.wait_for(lambda: _ephemerals(harness, "already decided", 4))
    assert len(notes) == 4
    assert {n["user"] for n in notes} | {stored.decided_by} == set(users)


async def test_forged_and_stale_requests_get_401_and_change_nothing(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    """Each is refused, and the log says why (a wrong ``SLACK_SIGNING_SECRET`` refuses
    every request: nothing else would tell the admin)."""
    run = await harness.start_run(DEMO_TASK)
    write, _ = await harness.requests(run, count=2)
    click = card_click(harness.sandbox, write, ids.decision_action_id("approve"), user_id=DBA)
    body = payload_body(click)
    refusals = logging.getLogger(REFUSALS_LOGGER)
    held = refusals.filters[:]  # a test of logs.configure_logging may have left its own
    for each in held:
        refusals.removeFilter(each)
    try:
        with caplog.at_level(logging.WARNING, logger=REFUSALS_LOGGER):
            forged = await harness.sandbox.post_signed(body, signature="v0=" + "0" * 64)
    finally:
        for each in held:
            refusals.addFilter(each)
    (refused,) = [r for r in caplog.records if r.name == REFUSALS_LOGGER]
    assert "SLACK_SIGNING_SECRET" in refused.getMessage()
    assert "/slack/events" in refused.getMessage()
    stale = await harness.sandbox.post_signed(body, timestamp=int(time.time()) - 600)
    assert forged[0] == 401 and stale[0] == 401
    verifier = SignatureVerifier(harness.web_settings.slack_signing_secret)
    old = int(time.time()) - 600
    replay = await harness.sandbox.post_signed(
        body, timestamp=old, signature=verifier.generate_signature(timestamp=str(old), body=body)
    )
    assert replay[0] == 401
    stored = await harness.store.get_request(write.request_id)
    assert stored is not None and stored.state == ApprovalState.PENDING


async def test_agent_text_never_becomes_a_live_mention(harness: Harness) -> None:
    hostile = "<!channel> ping <@U123> and <!here> see <https://evil.example|innocent> & co"
    run = await harness.start_run(
        {"tool_calls": [{"name": "write_file", "args": {"path": "notes.txt", "content": hostile}}]}
    )
    (write,) = await harness.requests(run, count=1)
    view = await harness.open_modal(write, "reject", user_id=REVIEWER)
    await harness.sandbox.submit_view(
        view_id=view["id"], user_id=REVIEWER, values={ids.REASON_BLOCK: hostile}
    )
    await harness.finished(run)
    await harness.decided_card(write)  # the card redrawn with the reason, after the ack
    sent = json.dumps([c["args"] for c in harness.sandbox.calls])
    assert "ping" in sent  # the hostile text did reach Slack, escaped
    found = set(live_mentions(sent.replace("\\u003c", "<").replace("\\u003e", ">")))
    assert not found & {"<!channel>", "<@U123>", "<!here>", "<https://evil.example|innocent>"}


async def test_every_message_and_modal_is_valid_block_kit(harness: Harness) -> None:
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    for decision in ("edit", "reject", "respond"):
        await harness.open_modal(write, decision)
    await harness.click(write, "approve")
    await harness.reject(sql, REASON)
    await harness.finished(run)
    for request in (write, sql):
        await harness.decided_card(request)  # the app's last calls, after the acks
    methods = {c["method"] for c in harness.sandbox.calls}
    assert {"chat.postMessage", "chat.update", "views.open"} <= methods
    assert all(c["ok"] for c in harness.sandbox.calls), [
        c for c in harness.sandbox.calls if not c["ok"]
    ]
    assert harness.sandbox.violations == []


async def _ephemerals(harness: Harness, text: str, count: int) -> list[dict[str, Any]] | None:
    notes = [n for n in harness.sandbox.ephemerals() if text in n.get("text", "")]
    return notes if len(notes) >= count else None


async def test_a_drive_does_not_ask_again_for_each_result_earlier_drives_posted(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run with results in its history: the decision's drive reads which are in Slack
    in one statement, instead of asking for each (two statements a result, on every
    drive), and posts none of them again."""
    reads = [{"name": "read_data", "args": {"table": "orders"}} for _ in range(4)]
    task = {"tool_calls": reads, "then": [[{"name": "write_file", "args": WRITE_ARGS}]]}
    run = await harness.start_run(task)
    (write,) = await harness.requests(run, count=1)
    paused = await harness.store.get_run(run.run_id)
    assert len([t for t in harness.slack_thread_texts(paused) if t == "read_data ran"]) == 4
    intended: list[str] = []
    intend = harness.store.intend_notice

    async def counting(run_id: str, key: str) -> Any:
        intended.append(key)
        return await intend(run_id, key)

    monkeypatch.setattr(harness.store, "intend_notice", counting)
    assert (await harness.click(write, "approve"))[0] == 200
    done = await harness.finished(run)
    assert done.state == RunState.DONE
    assert [k for k in intended if k.startswith("tool:")] == [f"tool:{write.tool_call_id}"]
    assert len([t for t in harness.slack_thread_texts(done) if t == "read_data ran"]) == 4

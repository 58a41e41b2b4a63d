"""Redaction end to end, through the real web app and worker against the sandbox.

Runs of ``tests.secret_agent`` propose a ``connect`` call with a password, an API key
nested in an object and a token in a list; a reviewer opens every view of the call
(the card, the full arguments, the reject, respond and edit modals), edits it once
leaving the redacted field empty and once typing a new password. No secret appears in
any Web API call the sandbox recorded (messages, updates, ephemerals, views), in any
log line, or in the audit export (CSV and JSON Lines); the tool received the real
values. Rules and the edit form are tested alone in ``tests/test_redaction_rules.py``.
"""

from __future__ import annotations

import csv
import io
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from agent_bridge import logs, wording
from agent_bridge.audit import read_events
from agent_bridge.binding import call_hash
from agent_bridge.models import ApprovalRequest, RunState
from agent_bridge.settings import WorkerConfig
from bot import ids
from tests.harness import REVIEWER, Harness
from tests.secret_agent import (
    CUSTOMER_ROWS,
    PASSWORD,
    SECRETS,
    TYPED_PASSWORD,
    PlannedModel,
    connect_args,
    received,
)
from tests.test_audit import export

FIXTURES = Path(__file__).parent / "fixtures"
NOTES_CHARS = 7000
"""Long enough that the card is cut and offers "View full arguments"."""
PLANS = {
    "keep": [
        [
            {"name": "connect", "args": connect_args(notes_chars=NOTES_CHARS)},
            {"name": "explode", "args": {"name": "q3.csv"}},
            {"name": "lookup", "args": {"customer": "Ada"}},
        ]
    ],
    "retype": [[{"name": "connect", "args": connect_args()}]],
    "rotate": [[{"name": "rotate", "args": {"host": "db1.internal", "password": PASSWORD}}]],
    "unlock": [[{"name": "unlock", "args": {"vault": "prod", "password": PASSWORD}}]],
    "config": [[{"name": "show_config", "args": {"host": "db1.internal"}}]],
}


@pytest.fixture
def agent_settings(settings: WorkerConfig) -> WorkerConfig:
    return settings.model_copy(
        update={"agent": "tests.secret_agent:make_tools", "policy": FIXTURES / "secret_policy.yml"}
    )


@pytest.fixture
def harness_options() -> dict[str, Any]:
    return {"model": PlannedModel(plans=PLANS)}


async def open_full_arguments(harness: Harness, request: ApprovalRequest) -> dict[str, Any]:
    """Click the card's "View full arguments" and wait for the modal."""
    assert request.channel_id and request.message_ts
    await harness.sandbox.click(
        channel_id=request.channel_id,
        ts=request.message_ts,
        action_id=ids.VIEW_ARGS_ACTION,
        user_id=REVIEWER,
    )

    async def opened() -> dict[str, Any] | None:
        views = harness.sandbox.open_views(REVIEWER)
        return views[-1] if views else None

    return await harness.wait_for(opened)


async def look_at_every_modal(harness: Harness, request: ApprovalRequest) -> list[dict[str, Any]]:
    """Open (and close) the full-arguments, reject and respond modals of ``request``."""
    seen = [await open_full_arguments(harness, request)]
    await harness.sandbox.close_view(view_id=seen[-1]["id"], user_id=REVIEWER)
    for decision in ("reject", "respond"):
        seen.append(await harness.open_modal(request, decision))
        await harness.sandbox.close_view(view_id=seen[-1]["id"], user_id=REVIEWER)
    return seen


def password_input(view: dict[str, Any]) -> dict[str, Any]:
    block_id = ids.arg_block_id("password")
    return next(b for b in view["blocks"] if b.get("block_id") == block_id)


async def edit(harness: Harness, request: ApprovalRequest, values: dict[str, str]) -> None:
    """Open the edit modal, check its redacted field, submit ``values``."""
    view = await harness.open_modal(request, "edit")
    field = password_input(view)
    assert "initial_value" not in field["element"]  # shown empty...
    assert wording.REDACTED_HINT in field["hint"]["text"]  # ...saying empty keeps it
    assert field["optional"] is True
    status, body = await harness.sandbox.submit_view(
        view_id=view["id"], user_id=REVIEWER, values=values
    )
    assert status == 200 and not body, body


def assert_no_secret(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} in {where}"


async def test_no_secret_reaches_slack_the_logs_or_the_export(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    workspace = harness.settings.workspace_dir

    # An edit that leaves the redacted field empty keeps the real password.
    kept = await harness.start_run("keep")
    (request,) = await harness.requests(kept, count=1)
    modals = await look_at_every_modal(harness, request)
    assert modals[0]["title"]["text"] == wording.FULL_ARGS_TITLE
    await edit(harness, request, {ids.arg_block_id("host"): "db2.internal"})
    kept = await harness.finished(kept)
    assert kept.state == RunState.DONE, kept.error
    real_options = connect_args()["options"]
    assert received(workspace) == [
        {"host": "db2.internal", "password": PASSWORD, "options": real_options}
    ]

    # One that types a new value sends it.
    retyped = await harness.start_run("retype")
    (second,) = await harness.requests(retyped, count=1)
    await edit(harness, second, {ids.arg_block_id("password"): TYPED_PASSWORD})
    card = await harness.decided_card(second)
    assert wording.REDACTED_CHANGED in json.dumps(card, ensure_ascii=False)
    retyped = await harness.finished(retyped)
    assert received(workspace)[-1] == {
        "host": "db1.internal",
        "password": TYPED_PASSWORD,
        "options": real_options,
    }

    # Slack: every recorded Web API call, and what the sandbox holds now.
    sandbox = harness.sandbox
    calls = json.dumps(sandbox.calls, ensure_ascii=False)
    assert_no_secret(calls, "a Web API call")
    assert_no_secret(json.dumps(modals, ensure_ascii=False), "a modal")
    assert_no_secret(json.dumps(sandbox.ephemerals(), ensure_ascii=False), "an ephemeral")
    assert wording.REDACTED in calls  # the values were shown, masked
    assert {c["method"] for c in sandbox.calls} >= {
        "chat.postMessage",
        "chat.update",
        "views.open",
    }

    # The agent got every result as LangGraph made it; Slack shows what the policy allows.
    results = {m.name: m for m in await harness.tool_messages(kept)}
    assert PASSWORD in str(results["connect"].content)  # connect echoes it to the model
    assert str(workspace.resolve()) in str(results["explode"].content)
    assert results["explode"].status == "error"
    thread = harness.slack_thread_texts(kept)
    by_text = {m["text"]: m for m in sandbox.thread(kept.channel_id, kept.thread_ts or "")}
    # lookup is not reviewed: a line that it ran, not its rows (the model's own answer
    # may still quote them: post_results is about tool output).
    assert CUSTOMER_ROWS not in json.dumps(by_text["lookup ran"])
    failure = json.dumps(by_text["explode failed"]["blocks"])
    assert f"run `{kept.run_id}`" in failure and "details are in the worker" in failure
    assert str(workspace.resolve()) not in calls  # no server path in Slack
    assert any("connected to db2.internal as admin/" + wording.REDACTED in t for t in thread)

    # Logs: the whole run, every logger at DEBUG (slack_sdk's request bodies included);
    # the failure's details are there, with its run ID.
    assert_no_secret(caplog.text, "the logs")
    assert any(r.name.startswith("slack_sdk") for r in caplog.records)  # bodies were logged
    failed = [
        r
        for r in caplog.records
        if r.name == "agent_bridge.run_messages" and "explode failed" in r.getMessage()
    ]
    assert len(failed) == 1
    assert kept.run_id in failed[0].getMessage()
    assert str(workspace.resolve()) in failed[0].getMessage()

    # The audit export, both formats.
    url = harness.settings.database_url
    jsonl = export(url, "--format", "jsonl")
    table = export(url, "--format", "csv")
    assert jsonl.returncode == 0 and table.returncode == 0, jsonl.stderr + table.stderr
    assert_no_secret(jsonl.stdout, "the JSON Lines export")
    assert_no_secret(table.stdout, "the CSV export")
    rows = [json.loads(line) for line in jsonl.stdout.splitlines()]
    requested = next(r for r in rows if r["kind"] == "requested")
    assert requested["proposed_args"]["password"] == wording.REDACTED
    assert requested["proposed_args"]["options"]["auth"]["api_key"] == wording.REDACTED
    assert requested["proposed_args"]["options"]["replicas"] == [{"token": wording.REDACTED}]
    edits = [r["edited_args"]["password"] for r in rows if r["kind"] == "decided"]
    assert edits == [wording.REDACTED, wording.REDACTED_CHANGED]
    assert len(list(csv.DictReader(io.StringIO(table.stdout)))) == len(rows)
    # The call hash still binds the real call.
    assert requested["call_hash"] == call_hash(
        tool_name="connect",
        args=connect_args(notes_chars=NOTES_CHARS),
        thread_id=kept.thread_id,
        interrupt_id=request.interrupt_id,
        tool_call_id=request.tool_call_id,
    )


async def test_an_edited_call_that_printed_nothing_shows_no_edit_notice(harness: Harness) -> None:
    """LangChain tells the model of an edit with a notice before the tool's output, and
    alone when the tool printed nothing (no "Tool response:" after it). That notice, the
    edited arguments in JSON, is the model's: Slack shows the call ran with no output."""
    run = await harness.start_run("rotate")
    (request,) = await harness.requests(run, count=1)
    await edit(harness, request, {ids.arg_block_id("host"): "db2.internal"})
    done = await harness.finished(run)
    assert done.state == RunState.DONE, done.error
    (result,) = await harness.tool_messages(run)
    assert "Executed instead" in str(result.content)  # the model was told
    calls = harness.sandbox.calls
    quoting = [c for c in calls if "Executed instead" in json.dumps(c, ensure_ascii=False)]
    # only the model's own answer, which quotes what it was told (this test's model)
    assert [c["args"]["text"][:5] for c in quoting] == ["Done."], quoting
    assert any(wording.NO_OUTPUT in json.dumps(c, ensure_ascii=False) for c in calls)
    assert_no_secret(json.dumps(calls, ensure_ascii=False), "a Web API call")


async def test_a_tool_error_carrying_a_password_is_masked_in_the_log_and_the_run(
    harness: Harness,
) -> None:
    """The tool's own exception repeats its redacted password and fails the run: the
    worker's log lines (the traceback too) and the run's stored error mask it, as the
    run's secrets (``logs.watch_run_secrets``)."""
    stream = io.StringIO()
    handler = logs.handler("text", stream)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        run = await harness.start_run("unlock")
        (request,) = await harness.requests(run, count=1)
        await harness.click(request, "approve")
        failed = await harness.finished(run)
    finally:
        root.removeHandler(handler)
    assert failed.state == RunState.FAILED
    logged = stream.getvalue()
    assert "vault prod refused the login" in logged and logs.SECRET_MARK in logged
    assert "vault prod refused the login" in (failed.error or "")
    assert_no_secret(logged, "the worker's log")
    assert_no_secret(failed.error or "", "the run's error")


async def test_secrets_a_tool_prints_under_their_own_names_are_masked(harness: Harness) -> None:
    """No argument carries them: the tool's output names them (``DB_PASSWORD=…``,
    ``Authorization: Bearer …``), as the ``redact`` rules name keys, or they have a
    secret's own shape (a Slack token, bare on its line); the result posted, the card's
    outcome, the model's answer quoting it and the audit trail, which nothing can
    change afterwards, mask them."""
    run = await harness.start_run("config")
    (request,) = await harness.requests(run, count=1)
    await harness.click(request, "approve")
    done = await harness.finished(run)
    assert done.state == RunState.DONE, done.error
    calls = json.dumps(harness.sandbox.calls, ensure_ascii=False)
    assert "DB_PASSWORD=" in calls and "host=db1.internal" in calls  # the output was posted
    assert_no_secret(calls, "a Web API call")
    recorded = await harness.store.get_request(request.request_id)
    assert recorded is not None and recorded.result is not None
    assert_no_secret(recorded.result.text, "the recorded result")
    trail = [e.model_dump_json() for e in await read_events(harness.store.db)]
    assert any("Slack integration ready with" in e for e in trail)  # the outcome was kept
    assert_no_secret("\n".join(trail), "the audit trail")

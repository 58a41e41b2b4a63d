"""The audit trail of a whole run, exported with ``agent-bridge audit export`` as CSV and
JSON Lines: exactly what happened, in order, with who, when and the call's outcome."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from agent_bridge.audit import (
    AuditEvent,
    AuditKind,
    event_pages,
    read_events,
    write_csv,
    write_jsonl,
    write_pages,
)
from agent_bridge.backend import Backend
from agent_bridge.errors import StoreUnavailableError
from agent_bridge.scripted_model import DEMO_TASK
from agent_bridge.settings import WorkerConfig
from agent_bridge.store import ApprovalStore
from bot.audit_export import write_file
from tests.harness import DBA, REQUESTER, REVIEWER, Harness
from tests.test_store import make_request, make_run
from tests.test_who_decides import OUTSIDER, SECOND_DBA, people, told

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def agent_settings(settings: WorkerConfig) -> WorkerConfig:
    return settings.model_copy(update={"policy": FIXTURES / "dba_policy.yml"})


def export(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "audit", "export", *args],
        cwd=REPO,
        env={"DATABASE_URL": database_url, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def test_the_export_of_a_run_lists_exactly_what_happened(harness: Harness) -> None:
    await people(harness)
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    await harness.click(write, "approve", user_id=REVIEWER)
    await harness.click(sql, "approve", user_id=OUTSIDER)
    await told(harness, OUTSIDER, "not an approver")
    await harness.click(sql, "approve", user_id=DBA)
    await harness.wait_for(lambda: _approvals(harness, sql.request_id, 1))
    await harness.click(sql, "approve", user_id=SECOND_DBA)
    await harness.finished(run)
    url = harness.settings.database_url

    done = export(url, "--format", "jsonl")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert "audit events exported" in done.stderr
    by_request = {
        request.request_id: [
            (r["kind"], r["user_id"]) for r in rows if r["request_id"] == request.request_id
        ]
        for request in (write, sql)
    }
    assert by_request[write.request_id] == [
        ("requested", None),
        ("posted", None),
        ("decided", REVIEWER),
        ("outcome", None),  # the tool ran while the run resumed; then it is marked applied
        ("applied", None),
    ]
    assert by_request[sql.request_id] == [
        ("requested", None),
        ("posted", None),
        ("refused", OUTSIDER),
        ("approved", DBA),
        ("decided", SECOND_DBA),
        ("outcome", None),
        ("applied", None),
    ]
    assert len(rows) == 12  # nothing else: no event of another run or kind
    approved = next(r for r in rows if r["kind"] == "approved")
    assert approved["decision"] == "approve" and approved["user_id"] == DBA
    decided = next(r for r in rows if r["kind"] == "decided" and r["request_id"] == sql.request_id)
    assert decided["decision"] == "approve" and decided["team_id"] == "T0SANDBOX"
    assert decided["thread_id"] == run.thread_id and decided["interrupt_id"] == sql.interrupt_id
    assert decided["tool_call_id"] == sql.tool_call_id and decided["requester_id"] == REQUESTER
    assert decided["proposed_args"] == sql.args and len(decided["call_hash"]) == 64
    assert datetime.fromisoformat(decided["requested_at"]) <= datetime.fromisoformat(decided["at"])
    outcome = next(r for r in rows if r["kind"] == "outcome" and r["request_id"] == sql.request_id)
    assert outcome["detail"] == "ok: 2 rows affected"

    only_sql = export(url, "--tool", "execute_sql", "--format", "csv")
    table = list(csv.DictReader(io.StringIO(only_sql.stdout)))
    assert [r["kind"] for r in table] == [k for k, _ in by_request[sql.request_id]]
    by_outsider = export(url, "--user", OUTSIDER)
    assert [json.loads(line)["kind"] for line in by_outsider.stdout.splitlines()] == ["refused"]
    empty = export(url, "--since", "2999-01-01")
    assert empty.returncode == 0 and empty.stdout == ""
    everything = export(url, "--since", "2000-01-01", "--until", "2999-01-01T00:00:00+00:00")
    assert everything.stdout == done.stdout


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--since", "yesterday"], "--since 'yesterday' is not an ISO 8601 time"),
        (["--since", "2026-12-02", "--until", "2026-12-01"], "is not before --until"),
        (
            ["--output", "/nonexistent/dir/audit.csv"],
            "--output /nonexistent/dir/audit.csv: No such",
        ),
    ],
)
async def test_bad_options_are_refused_by_name(pg_url: str, args: list[str], said: str) -> None:
    result = export(pg_url, *args)
    assert result.returncode == 2 and said in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_csv_cells_a_spreadsheet_would_run_are_kept_as_text() -> None:
    event = AuditEvent(
        event_id="ev-1",
        at=0.0,
        kind=AuditKind.REFUSED,
        run_id="run-1",
        thread_id="t",
        reason='=HYPERLINK("https://evil.example","click")',
        proposed_args={"query": "@SUM(1)"},
    )
    out = io.StringIO()
    assert write_csv([event], out) == 1
    (row,) = csv.DictReader(io.StringIO(out.getvalue()))
    assert row["reason"].startswith("'=HYPERLINK")
    assert row["proposed_args"] == '{"query": "@SUM(1)"}'  # JSON starts with "{": safe


@pytest.mark.parametrize(
    "text",
    [
        " =1+1",  # after white space a spreadsheet may trim
        "\u00a0=cmd|' /C calc'!A0",
        '\uff1dHYPERLINK("https://evil.example")',  # full-width =
        "\uff0b1",  # full-width +
        "|calc",
        "\ncalc",
    ],
)
def test_csv_cells_that_only_look_like_text_are_kept_as_text_too(text: str) -> None:
    event = AuditEvent(
        event_id="ev-1", at=0.0, kind=AuditKind.REFUSED, run_id="r", thread_id="t", reason=text
    )
    out = io.StringIO()
    write_csv([event], out)
    (row,) = csv.DictReader(io.StringIO(out.getvalue()))
    assert row["reason"] == "'" + text


def test_json_lines_stay_one_line_each_for_any_line_reader() -> None:
    """Agent text with U+2028, U+2029 or NEL (``str.splitlines`` breaks at each) or a C1
    control is written ``\\u``-escaped: one event, one line, read back the same."""
    reason = "one\u2028two\u2029three\x85four\x9bfive"
    event = AuditEvent(
        event_id="ev-1", at=0.0, kind=AuditKind.REFUSED, run_id="r", thread_id="t", reason=reason
    )
    out = io.StringIO()
    assert write_jsonl([event], out) == 1
    (line,) = out.getvalue().splitlines()
    assert json.loads(line)["reason"] == reason


async def _approvals(harness: Harness, request_id: str, count: int) -> Any:
    stored = await harness.store.get_request(request_id)
    return stored if stored is not None and len(stored.approved_by) >= count else None


async def test_the_export_reads_the_trail_a_page_at_a_time(pg_backend: Backend) -> None:
    """The trail repeats each call's arguments: the export holds a page of it, in the
    order written, and a CSV of many pages has one header."""
    store = ApprovalStore(pg_backend.db)
    await store.create_run(make_run())
    [request] = await store.add_requests([make_request("r1")])
    for n in range(5):
        await store.record_refusal(
            request, user_id=f"U{n}", team_id="T1", action="approve", reason="no"
        )
    everything = await read_events(pg_backend.db)
    pages = [page async for page in event_pages(pg_backend.db, page=2)]
    assert [len(p) for p in pages] == [2] * (len(everything) // 2) + [1] * (len(everything) % 2)
    assert [e for p in pages for e in p] == everything
    out = io.StringIO()
    assert await write_pages(event_pages(pg_backend.db, page=2), "csv", out) == len(everything)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert [r["event_id"] for r in rows] == [e.event_id for e in everything]


async def test_an_export_that_fails_half_way_leaves_the_last_whole_one(tmp_path: Path) -> None:
    """The file is written beside and renamed over ``--output`` once whole: a database
    lost after the first page leaves yesterday's export, not half of today's."""
    out = tmp_path / "audit.csv"
    out.write_text("yesterday's whole export\n")
    event = AuditEvent(event_id="ev-1", at=0.0, kind=AuditKind.REFUSED, run_id="r", thread_id="t")

    async def pages() -> AsyncIterator[list[AuditEvent]]:
        yield [event]
        raise StoreUnavailableError("PostgreSQL is unavailable")

    with pytest.raises(StoreUnavailableError):
        await write_file(pages(), "csv", out)
    assert out.read_text() == "yesterday's whole export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit.csv"]

    async def whole() -> AsyncIterator[list[AuditEvent]]:
        yield [event]

    assert await write_file(whole(), "csv", out) == 1
    assert "ev-1" in out.read_text()

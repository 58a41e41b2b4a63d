"""The audit trail: every request and decision event, append-only, and its export.

Each event is one ``audit_events`` row, written in the same transaction as the change it
records, or in the same statement (``with_event``) (``ApprovalStore``), with immutable
IDs: run, ``thread_id``, interrupt, tool call, tool, the call's hash, proposed and edited
arguments, decision, reason, the acting user and workspace, the requester, when the call
was requested, and the call's outcome. The table refuses ``UPDATE`` and ``DELETE``
(triggers in ``migrations``), so nothing in it changes after the fact. ``agent-bridge
audit export`` writes it as CSV or JSON Lines.

Arguments are redacted when the event is drawn (``ApprovalStore._event``, with the
request's ``redact`` rules), so a secret never enters this append-only table, where it
could never be removed; the ``call_hash`` is still over the real call. The export masks
again with the default rules, for events written before requests carried their rules.
"""

from __future__ import annotations

import csv
import functools
import json
import secrets
import unicodedata
from collections.abc import AsyncIterator, Iterable
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TextIO

from pydantic import BaseModel

from agent_bridge.db import Database, Row
from agent_bridge.json_line import json_line
from agent_bridge.redaction import DEFAULT_REDACT, redact

OUTCOME_MAX_CHARS = 500
"""A call's result or error is kept short in the trail (it is in the checkpoint whole)."""


class AuditKind(StrEnum):
    """What happened to an approval request."""

    REQUESTED = "requested"
    """A gated call became an approval request."""
    POSTED = "posted"
    """Its card was posted (``detail``: channel and ``ts``)."""
    APPROVED = "approved"
    """One person approved; more approvals are needed (quorum)."""
    EDITED = "edited"
    """One person edited the call; more approvals are needed (quorum)."""
    DECIDED = "decided"
    """The decision was recorded (by a person, ``user_id``)."""
    EXPIRED = "expired"
    """No one decided in time; the policy's default decision was recorded."""
    ESCALATED = "escalated"
    """The backup approvers were called in."""
    REFUSED = "refused"
    """Someone not allowed to act on it tried; nothing was recorded (``reason``)."""
    REOPENED = "reopened"
    """A recorded decision could not be applied and is pending again (``reason``)."""
    APPLIED = "applied"
    """The run resumed with the decision."""
    OUTCOME = "outcome"
    """The call ran, or was answered instead (``detail``: result or error, short)."""
    CANCELLED = "cancelled"
    """Closed before its decision was applied (its run failed, or its workspace left);
    ``reason``: the card's note, saying whether the call may have run."""


SELECT_EVENTS = """SELECT * FROM audit_events
    WHERE at >= :since AND at < :until
    AND (CAST(:tool_name AS TEXT) IS NULL OR tool_name = CAST(:tool_name AS TEXT))
    AND (CAST(:user_id AS TEXT) IS NULL OR user_id = CAST(:user_id AS TEXT)
        OR requester_id = CAST(:user_id AS TEXT))
    AND seq > :after
    ORDER BY seq LIMIT :limit"""
EVENTS_PAGE = 500
"""Events read at a time: the trail repeats each call's whole arguments, so a page of
calls with megabytes of arguments each is what an export holds in memory, not the
trail."""


class AuditEvent(BaseModel):
    """One row of the trail, as exported. Times are Unix seconds."""

    event_id: str
    at: float
    kind: AuditKind
    run_id: str
    thread_id: str
    request_id: str | None = None
    interrupt_id: str | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    call_hash: str | None = None
    proposed_args: dict[str, Any] | None = None
    edited_args: dict[str, Any] | None = None
    decision: str | None = None
    """``approve``, ``edit``, ``reject`` or ``respond``."""
    reason: str | None = None
    user_id: str | None = None
    """Who acted (``None``: the policy, at expiry, or the worker)."""
    team_id: str | None = None
    """The acting user's workspace."""
    requester_id: str | None = None
    requested_at: float | None = None
    detail: str | None = None


EVENT_COLUMNS = tuple(AuditEvent.model_fields)
"""The columns of an event (``event_params`` fills them), in ``INSERT_EVENT``'s order."""
INSERT_EVENT = (
    f"INSERT INTO audit_events ({', '.join(EVENT_COLUMNS)}) "
    f"VALUES ({', '.join(':' + c for c in EVENT_COLUMNS)})"
)


def new_event_id() -> str:
    """Return a fresh, immutable event ID."""
    return f"ev-{secrets.token_hex(10)}"


def event_params(event: AuditEvent) -> dict[str, Any]:
    """``INSERT_EVENT``'s parameters for ``event`` (JSON columns serialised)."""
    params = event.model_dump(mode="json")
    for column in ("proposed_args", "edited_args"):
        value = params[column]
        params[column] = json.dumps(value, sort_keys=True) if value is not None else None
    return params


@functools.lru_cache(maxsize=16)
def with_event(change_sql: str) -> str:
    """One PostgreSQL statement doing ``change_sql`` (an ``UPDATE ... RETURNING *`` of
    at most one row) and, only if it changed a row, appending the audit event whose
    parameters ``event_params_as_change`` names: one round trip instead of a
    transaction's four, as atomic (a data-modifying ``WITH``, PostgreSQL's "Data-Modifying
    Statements in WITH"; SQLite has none). Its rows are the changed row's. Remembered
    per statement (the store's are constants)."""
    values = ", ".join(f":event_{c}" for c in EVENT_COLUMNS)
    return (
        f"WITH changed AS ({change_sql}), event AS (INSERT INTO audit_events "
        f"({', '.join(EVENT_COLUMNS)}) SELECT {values} FROM changed) SELECT * FROM changed"
    )


def event_params_as_change(event: AuditEvent) -> dict[str, Any]:
    """``event_params(event)`` named as ``with_event``'s statement takes them
    (``event_<column>``), so they cannot clash with the change's own."""
    return {f"event_{k}": v for k, v in event_params(event).items()}


def event_from_row(row: Row) -> AuditEvent:
    """Build an ``AuditEvent`` from an ``audit_events`` row."""
    data = {k: v for k, v in row.items() if k != "seq"}
    for column in ("proposed_args", "edited_args"):
        data[column] = json.loads(data[column]) if data.get(column) else None
    return AuditEvent.model_validate(data)


async def read_events(
    db: Database,
    *,
    since: float = 0.0,
    until: float = float("inf"),
    tool_name: str | None = None,
    user_id: str | None = None,
) -> list[AuditEvent]:
    """Return the events with ``since <= at < until`` (Unix seconds), in the order they
    were written,
    only ``tool_name``'s, only those ``user_id`` acted on or requested, if given."""
    pages = event_pages(db, since=since, until=until, tool_name=tool_name, user_id=user_id)
    return [event async for page in pages for event in page]


async def event_pages(
    db: Database,
    *,
    since: float = 0.0,
    until: float = float("inf"),
    tool_name: str | None = None,
    user_id: str | None = None,
    page: int = EVENTS_PAGE,
) -> AsyncIterator[list[AuditEvent]]:
    """``read_events``' events, ``page`` at a time (by ``seq``, each page read after the
    last: an event written meanwhile comes in a later page, or not at all if it is past
    ``until``)."""
    after = 0
    while True:
        rows = await db.fetch_all(
            SELECT_EVENTS,
            {
                "since": since,
                "until": until if until != float("inf") else 1e18,
                "tool_name": tool_name,
                "user_id": user_id,
                "after": after,
                "limit": page,
            },
        )
        if not rows:
            return
        yield [event_from_row(r) for r in rows]
        if len(rows) < page:
            return
        after = int(rows[-1]["seq"])


EXPORT_COLUMNS = tuple(AuditEvent.model_fields)


def _iso(seconds: float | None) -> str | None:
    return datetime.fromtimestamp(seconds, UTC).isoformat() if seconds is not None else None


def export_row(event: AuditEvent) -> dict[str, Any]:
    """``event`` as exported: times in ISO 8601 (UTC), arguments as JSON values, with
    the default ``redact`` keys masked (events are masked with their own rules when
    written)."""
    row = event.model_dump(mode="json")
    for column in ("proposed_args", "edited_args"):
        if row[column] is not None:
            row[column] = redact(row[column], DEFAULT_REDACT)
    row["at"] = _iso(event.at)
    row["requested_at"] = _iso(event.requested_at)
    return row


def write_jsonl(events: Iterable[AuditEvent], out: TextIO, *, header: bool = True) -> int:
    """Write one JSON object per line (``json_line``: agent text cannot break one in
    two for any line reader); return how many. ``header`` is ``write_csv``'s (JSON
    Lines has none)."""
    count = 0
    for event in events:
        out.write(json_line(export_row(event), ensure_ascii=False, sort_keys=True) + "\n")
        count += 1
    return count


_FORMULA_LEADS = ("=", "+", "-", "@", "|", "\t", "\r", "\n")
"""A spreadsheet reads a cell starting with one of these as a formula or a command (OWASP,
"CSV Injection": ``=``, ``+``, ``-``, ``@``, tab and carriage return; ``|`` for DDE in
older ones; a line break as the tab), after white space it may trim and in the full-width
forms it may read as the same (U+FF1D for ``=``): agent text must stay text there too."""


def _cell(value: Any) -> Any:
    """``value`` as a CSV cell: text a spreadsheet would run is prefixed with ``'``."""
    if not isinstance(value, str):
        return value
    lead = unicodedata.normalize("NFKC", value.lstrip(" \u00a0\u3000\u2007\u202f")[:1])
    if value.startswith(_FORMULA_LEADS) or lead.startswith(_FORMULA_LEADS):
        return "'" + value
    return value


def write_csv(events: Iterable[AuditEvent], out: TextIO, *, header: bool = True) -> int:
    """Write a header (unless ``header`` is false: a later page of the same file) and one
    row per event (arguments as JSON text); return how many.

    A text cell that a spreadsheet would take for a formula is prefixed with ``'``.
    """
    writer = csv.DictWriter(out, fieldnames=EXPORT_COLUMNS)
    if header:
        writer.writeheader()
    count = 0
    for event in events:
        row = export_row(event)
        for column in ("proposed_args", "edited_args"):
            if row[column] is not None:
                row[column] = json_line(row[column], ensure_ascii=False, sort_keys=True)
        writer.writerow({k: _cell(v) for k, v in row.items()})
        count += 1
    return count


async def write_pages(pages: AsyncIterator[list[AuditEvent]], form: str, out: TextIO) -> int:
    """Write ``pages`` (``event_pages``) as they are read, as ``csv`` or ``jsonl``
    (``form``); return how many events. One page is held in memory, not the trail."""
    write = write_csv if form == "csv" else write_jsonl
    written = 0
    async for page in pages:
        written += write(page, out, header=not written)
    if not written:
        write([], out)  # a CSV's header alone: the columns, and no event
    return written

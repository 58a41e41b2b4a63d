"""``agent-bridge audit export``: the audit trail as CSV or JSON Lines.

Reads ``DATABASE_URL`` (the store's schema must be current) and writes the events with
``since <= at < until``, optionally only one tool's or one user's (as actor or
requester), to a file or stdout. Times on the command line are ISO 8601
(``2026-12-01``, ``2026-12-01T14:00:00+00:00``; no zone means UTC).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

from agent_bridge.audit import AuditEvent, event_pages, write_pages
from agent_bridge.backend import open_backend
from agent_bridge.errors import ConfigurationError
from agent_bridge.migrations import check_version
from agent_bridge.settings import ReleaseSettings

FORMATS = ("csv", "jsonl")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``audit export`` options."""
    parser.add_argument("--format", choices=FORMATS, default="jsonl", help="default jsonl")
    parser.add_argument("--since", help="events at or after this time (ISO 8601)")
    parser.add_argument("--until", help="events before this time (ISO 8601)")
    parser.add_argument("--tool", help="only this tool's events")
    parser.add_argument("--user", help="only events this Slack user ID acted on or requested")
    parser.add_argument("--output", type=Path, help="write here instead of stdout")


def unix_time(text: str | None, *, option: str) -> float | None:
    """``text`` (ISO 8601, UTC unless it says otherwise) as Unix seconds.

    Raises:
        ConfigurationError: If it is not a date or time.
    """
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ConfigurationError(
            f"{option} {text!r} is not an ISO 8601 time, e.g. 2026-12-01 or 2026-12-01T14:00"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


async def export(settings: ReleaseSettings, args: argparse.Namespace) -> int:
    """Write the selected events; return how many.

    Raises:
        ConfigurationError: A bad option (a time, ``--since`` not before ``--until``, an
            ``--output`` that cannot be written).
        SchemaOutdatedError: The database needs ``agent-bridge release``.
        StoreUnavailableError: The database is unreachable.
    """
    since = unix_time(args.since, option="--since")
    until = unix_time(args.until, option="--until")
    if since is not None and until is not None and since >= until:
        raise ConfigurationError(f"--since {args.since} is not before --until {args.until}")
    backend = await open_backend(settings.database_url)
    try:
        await check_version(backend.db)
        pages = event_pages(
            backend.db,
            since=since or 0.0,
            until=until if until is not None else float("inf"),
            tool_name=args.tool,
            user_id=args.user,
        )
        if args.output is None:
            return await write_pages(pages, args.format, sys.stdout)
        return await write_file(pages, args.format, args.output)
    finally:
        await backend.close()


async def write_file(pages: AsyncIterator[list[AuditEvent]], form: str, path: Path) -> int:
    """Write the export to ``path`` whole or not at all: into a file beside it, renamed
    over it once every page is written (an export that fails half-way, the database
    gone, leaves yesterday's complete one, not half of today's).

    Raises:
        ConfigurationError: ``path`` cannot be written.
    """
    partial = path.with_name(f".{path.name}.partial")
    try:
        with partial.open("w", encoding="utf-8", newline="") as out:
            written = await write_pages(pages, form, out)
        partial.replace(path)
        return written
    except OSError as exc:
        raise ConfigurationError(f"--output {path}: {exc.strerror}") from exc
    finally:
        partial.unlink(missing_ok=True)

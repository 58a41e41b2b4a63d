"""Log lines: plain text or JSON (``LOG_FORMAT=json``), with the approval's IDs, and
never a secret.

Every module logs with the standard library (``logging.getLogger(__name__)``); the
root handler formats each record with structlog's ``ProcessorFormatter``, so the
libraries' lines (Bolt, slack_sdk, psycopg, aiohttp, asyncio) go the same way:

1. the IDs bound by ``agent_bridge.log_context`` (structlog's contextvars) are added;
2. time (ISO 8601, UTC), level, logger name, the traceback if any;
3. ``scrub``: every registered secret (``add_secrets``: the process's Slack tokens,
   signing secret, database and Redis passwords) and anything shaped like a Slack token
   or a URL's password is replaced by ``SECRET_MARK``, in the message, the traceback
   and every field, each cut to ``LOG_TEXT_MAX_CHARS`` (``scrub_cut``);
4. one line: JSON (an object per line: ``timestamp``, ``level``, ``logger``, ``event``,
   the IDs, ``exception``) or text (``<time> <LEVEL> <logger>: <message> key=value...``).

The command line's own error messages go through ``scrub`` too (``bot.cli``).
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterable
from contextvars import ContextVar
from typing import IO, Any, Literal
from urllib.parse import parse_qs, unquote, urlsplit

import psycopg
import structlog
from psycopg.conninfo import conninfo_to_dict
from structlog.typing import EventDict, Processor, WrappedLogger

from agent_bridge.json_line import INVISIBLE, ISOLATES, json_line
from agent_bridge.log_context import KEYS
from agent_bridge.redaction import TOKEN_SHAPES, written_forms
from agent_bridge.repeated_lines import RepeatedLines

LogFormat = Literal["text", "json"]
SECRET_MARK = "[secret]"
MIN_SECRET_CHARS = 4
"""Shorter values are not registered: masking them would mask ordinary words."""

SECRET_SHAPES = (
    *TOKEN_SHAPES,  # Slack's tokens
    re.compile(r"(?<=://)([^:/?#@\s]*):[^@/?\s]+(?=@)"),  # scheme://user:password@ ('#' too)
    re.compile(r"(?i)(?<=password=)[^&\s'\"]+"),  # conninfo or query password=...
)
"""Secrets recognised by their shape, registered or not (an installation's token, a
URL in a library's message)."""
URL_PASSWORD = SECRET_SHAPES[2]

SECRET_MAX_CHARS = 1000
"""Longer than any secret masked (a token, a password, a URL's password): a text cut to
``n`` characters is masked over ``n`` plus this many, so no secret is cut in two first."""
LOG_TEXT_MAX_CHARS = 100_000
"""Characters of each string of a log line (its message, its traceback, a field): an
exception of the agent's code can carry megabytes, and masking them all would hold the
process's event loop (about 3.4 s per 100 MB), past the leases it renews."""

_secrets: set[str] = set()
_run_secrets: ContextVar[list[set[str]] | None] = ContextVar("run_secrets", default=None)
"""The redacted values of the run the current asyncio task drives (``hold_run_secrets``),
as the sets the drive keeps them in (``watch_run_secrets``), read as they grow."""


def add_secrets(values: Iterable[str | None]) -> None:
    """Register values no log line or error message may show (kept for the process's
    life; values shorter than ``MIN_SECRET_CHARS`` are ignored)."""
    _secrets.update(v for v in values if v and len(v) >= MIN_SECRET_CHARS)


def hold_run_secrets() -> None:
    """Start holding a run's secrets for the current context: call it in the context a
    run's task is created with (``worker.Worker``), so the drive's tasks, which copy it,
    add to what the task's own lines and error texts mask."""
    _run_secrets.set([])


def watch_run_secrets(secrets: set[str]) -> None:
    """Mask the values of ``secrets`` (the run's redacted arguments, which the drive adds
    to as it learns them: ``run_messages.ToolCalls.secrets``), in the forms text repeats
    them (``redaction.written_forms``), in every line and error text of the run's task
    from now on: a tool's exception may carry its password. Nothing outside a run's task
    (``hold_run_secrets``)."""
    held = _run_secrets.get()
    if held is not None:
        held.append(secrets)


def _masked() -> list[str]:
    """The secrets ``scrub`` masks here, longest first."""
    held = _run_secrets.get() or []
    run = {form for values in held for secret in values for form in written_forms(secret)}
    kept = _secrets | {s for s in run if len(s) >= MIN_SECRET_CHARS}
    return sorted(kept, key=len, reverse=True)


SECRET_FIELDS = (
    "slack_bot_token",
    "slack_signing_secret",
    "slack_app_token",
    "slack_client_secret",
    "langgraph_api_key",
)
"""Settings fields whose whole value is a secret (any process's settings class)."""
URL_FIELDS = ("database_url", "redis_url", "agent_url")
"""Settings fields that are URLs whose password is a secret."""


def settings_secrets(settings: object) -> list[str]:
    """The secrets a process's settings hold (``SECRET_FIELDS``' values and the
    passwords of ``URL_FIELDS``' URLs), for ``add_secrets``."""
    found = [getattr(settings, name, None) for name in SECRET_FIELDS]
    for name in URL_FIELDS:
        found += url_secrets(getattr(settings, name, None))
    return [value for value in found if isinstance(value, str)]


def url_secrets(url: str | None) -> list[str]:
    """The password of a ``postgresql://`` or ``redis://`` URL, as written and decoded,
    and any ``password=`` in its query (what ``add_secrets`` should be given); of a
    PostgreSQL URL also the password as libpq reads it (a ``#`` in it is no fragment).
    """
    if not url:
        return []
    try:
        parts = urlsplit(url)
        found = [parts.password] if parts.password else []
        found += parse_qs(parts.query).get("password", [])
    except ValueError:  # an unreadable URL: mask all of it
        return [url]
    if parts.scheme in ("postgresql", "postgres"):
        try:
            found.append(str(conninfo_to_dict(url).get("password") or ""))
        except psycopg.ProgrammingError:  # libpq cannot read it: mask all of it too
            found.append(url)
    return [p for p in found + [unquote(p) for p in found] if p]


def scrub(text: str) -> str:
    """``text`` with every registered secret, the run's (``watch_run_secrets``), and
    every ``SECRET_SHAPES`` match masked."""
    for secret in _masked():
        if secret in text:
            text = text.replace(secret, SECRET_MARK)
    for shape in SECRET_SHAPES:
        if shape is URL_PASSWORD:
            text = shape.sub(lambda m: f"{m.group(1)}:{SECRET_MARK}", text)
        else:
            text = shape.sub(SECRET_MARK, text)
    return text


def scrub_cut(text: str, limit: int) -> str:
    """``text`` masked (``scrub``) and cut to ``limit`` characters, a cut one ending in
    "…", with no part of a secret left at the cut: masked over ``SECRET_MAX_CHARS`` more
    than it keeps, and, when that window cut the text, without the window's last
    ``SECRET_MAX_CHARS`` (masking what came before a secret the window cut shortens the
    text, and can bring its start inside what is kept)."""
    window = limit + SECRET_MAX_CHARS
    masked = scrub(text[:window])
    if len(text) > window:
        masked = masked[:-SECRET_MAX_CHARS]
    if len(text) > window or len(masked) > limit:
        return masked[: limit - 1] + "…"
    return masked


def scrub_event(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    """structlog processor: ``scrub_cut`` every string of the event (message, traceback,
    fields) to ``LOG_TEXT_MAX_CHARS``."""
    return {key: _scrubbed(value) for key, value in event_dict.items()}


def _scrubbed(value: Any) -> Any:
    if isinstance(value, str):
        return scrub_cut(value, LOG_TEXT_MAX_CHARS)
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    return scrub_cut(repr(value), LOG_TEXT_MAX_CHARS)


LINE_BREAKS = {
    ord(char): char.encode("unicode_escape").decode("ascii")
    for char in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
}
"""What ``str.splitlines`` breaks a line at, each written escaped (``\\n``) in a text line."""
UNPRINTABLE = {
    **{code: f"\\x{code:02x}" for code in (*range(0x09), *range(0x0B, 0x20), 0x7F)},
    **{code: f"\\x{code:02x}" for code in range(0x80, 0xA0)},
    **{code: ascii(chr(code))[1:-1] for code in (*INVISIBLE, *ISOLATES, 0xFEFF)},
    **LINE_BREAKS,
}
"""What a terminal would act on rather than show, written escaped (``\\x1b``,
``\\u202e``) in a text line: control characters (an ``ESC [1A`` moves the cursor up and
overwrites the line before, in ``kubectl logs`` or ``tail``), bidirectional overrides and
invisible characters, with the line breaks. A tab stays."""
TRACEBACK_INDENT = "    "


def text_line(_: WrappedLogger, __: str, event_dict: EventDict) -> str:
    """structlog renderer: ``<time> <LEVEL> <logger>: <message> key=value...``, the
    traceback on the lines after, each indented by ``TRACEBACK_INDENT``.

    A line break inside the message or a field (an agent's error text, a tool's output)
    is written escaped (``LINE_BREAKS``), and no traceback line starts where a line
    does: text the agent controls cannot forge a line of its own."""
    ids = " ".join(f"{k}={event_dict[k]}" for k in KEYS if k in event_dict)
    line = (
        f"{event_dict.get('timestamp', '')} {str(event_dict.get('level', '')).upper()} "
        f"{event_dict.get('logger', '')}: {event_dict.get('event', '')}"
    )
    line = (line + f" {ids}" if ids else line).translate(UNPRINTABLE)
    exception = event_dict.get("exception")
    if not exception:
        return line
    rows = str(exception).splitlines()
    return "\n".join([line, *(TRACEBACK_INDENT + row.translate(UNPRINTABLE) for row in rows)])


def formatter(log_format: LogFormat) -> logging.Formatter:
    """The formatter of every handler: ``log_format`` lines with the bound IDs, scrubbed."""
    renderer: Processor = (
        structlog.processors.JSONRenderer(serializer=json_line, ensure_ascii=False)
        if log_format == "json"
        else text_line
    )
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[
            structlog.contextvars.merge_contextvars,
            structlog.stdlib.add_log_level,
            structlog.stdlib.add_logger_name,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
        ],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            scrub_event,
            renderer,
        ],
    )


def handler(log_format: LogFormat, stream: IO[str] | None = None) -> logging.Handler:
    """A stream handler (stderr by default) with ``formatter(log_format)``."""
    out = logging.StreamHandler(stream or sys.stderr)
    out.setFormatter(formatter(log_format))
    return out


REQUEST_LOGGERS = ("httpx",)
"""Libraries that log every HTTP request at INFO: ``httpx``, langgraph-sdk's client, wrote
a line per sweep for a worker of a deployed agent (``AGENT_URL``). Their requests are
detail, shown at ``DEBUG`` only; their warnings and errors always."""


REFUSALS_LOGGER = "bot.refused_requests"
"""The web process's lines about requests refused for their signature."""
REPEATING_LOGGERS = ("psycopg.pool", REFUSALS_LOGGER)
"""Loggers that repeat one warning many times a minute: psycopg_pool's at every failed
connection attempt while the database is down, the web's at every request refused for
its signature (a wrong signing secret, a scanner). Each kind of their warnings is
written once a minute at most, with the count held back (``RepeatedLines``)."""


def configure_logging(*, level: str, log_format: LogFormat) -> None:
    """Send every log record of the process through one ``handler(log_format)`` at
    ``level`` (``DEBUG``, ``INFO``...), replacing the root logger's handlers; below
    ``DEBUG``'s detail, ``REQUEST_LOGGERS`` write warnings and errors only;
    ``REPEATING_LOGGERS`` each kind of warning once a minute at most."""
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler(log_format))
    root.setLevel(level.upper())
    detail = root.getEffectiveLevel() <= logging.DEBUG
    for name in REQUEST_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET if detail else logging.WARNING)
    for name in REPEATING_LOGGERS:
        repeating = logging.getLogger(name)
        for old_filter in [f for f in repeating.filters if isinstance(f, RepeatedLines)]:
            repeating.removeFilter(old_filter)
        repeating.addFilter(RepeatedLines())

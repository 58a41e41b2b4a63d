"""Log lines: JSON with ``LOG_FORMAT=json``, the approval's IDs on every line about it
(bound by context), and no secret in any line or error message.

The end-to-end test captures every log line of a real run (web app, worker, Bolt,
slack_sdk, psycopg, aiohttp; at DEBUG) through the production formatter and scans it
for the run's secrets: the bot token, the signing secret and the database password.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from agent_bridge import log_context, logs
from agent_bridge.errors import ERROR_TEXT_MAX_CHARS, error_text
from agent_bridge.logs import LOG_TEXT_MAX_CHARS, SECRET_MAX_CHARS
from agent_bridge.scripted_model import DEMO_TASK
from agent_bridge.settings import WebConfig, WorkerConfig
from tests.harness import REVIEWER, TEST_BOT_TOKEN, TEST_SIGNING_SECRET, Harness
from tests.test_cli import agent_bridge, clean_environment

DB_PASSWORD = "db-pass-7Yq2"
"""PostgreSQL here trusts local connections, so any password works: it is in the URL
the processes use, so a line that leaks the URL leaks it."""


def with_password(url: str) -> str:
    return url.replace("postgresql://postgres@", f"postgresql://postgres:{DB_PASSWORD}@")


@pytest.fixture
def agent_settings(settings: WorkerConfig) -> WorkerConfig:
    return settings.model_copy(update={"database_url": with_password(settings.database_url)})


@pytest.fixture
def web_settings(web_settings: WebConfig) -> WebConfig:
    return web_settings.model_copy(
        update={"database_url": with_password(web_settings.database_url)}
    )


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    """Every log record of the test, at DEBUG, as production writes them with
    ``LOG_FORMAT=json``, and the secrets registered as ``bot.cli`` does."""
    logs.add_secrets([TEST_BOT_TOKEN, TEST_SIGNING_SECRET, DB_PASSWORD])
    stream = io.StringIO()
    handler = logs.handler("json", stream)
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


async def test_a_run_logs_json_with_its_ids_and_no_secret(
    harness: Harness, json_lines: io.StringIO
) -> None:
    assert DB_PASSWORD in harness.settings.database_url  # the run really uses it
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    assert (await harness.click(write, "approve"))[0] == 200
    await harness.reject(sql, "Not today.")
    await harness.finished(run)

    text = json_lines.getvalue()
    for secret in (TEST_BOT_TOKEN, TEST_SIGNING_SECRET, DB_PASSWORD):
        assert secret not in text
    lines = [json.loads(line) for line in text.splitlines()]  # every line is one object
    assert len(lines) > 20
    assert all({"timestamp", "level", "logger", "event"} <= set(line) for line in lines)

    decided = [
        line
        for line in lines
        if line["logger"] == "bot.recorder" and write.request_id in line["event"]
    ]
    assert (
        decided
        and decided[0]
        | {
            "run_id": run.run_id,
            "thread_id": run.thread_id,
            "interrupt_id": write.interrupt_id,
            "request_id": write.request_id,
            "team_id": run.team_id,
            "user_id": REVIEWER,
        }
        == decided[0]
    )
    posted = [
        line
        for line in lines
        if line["logger"] == "agent_bridge.run_driver" and line["event"].endswith(" posted")
    ]
    assert {line["request_id"] for line in posted} == {write.request_id, sql.request_id}
    assert all(
        line["run_id"] == run.run_id and line["thread_id"] == run.thread_id for line in posted
    )
    drive = [line for line in lines if line.get("run_id") == run.run_id]
    assert {line["logger"] for line in drive} >= {"agent_bridge.run_driver", "bot.recorder"}
    assert not [line for line in lines if line.get("run_id") not in (None, run.run_id)]


def test_scrub_masks_registered_secrets_and_secret_shapes() -> None:
    logs.add_secrets(["hunter2-registered", "abc"])  # too short to register
    text = logs.scrub(
        "token xoxb-1234-5678-abcdef, app xapp-1-A0-99, hunter2-registered, abc, "
        "postgresql://app:p%40ss@db:5432/app, redis://:r3dis@cache:6379/0, "
        "host=db password=s3cret dbname=app, postgresql://app:TOP#SECRET@db/app"
    )
    assert text == (
        "token [secret], app [secret], [secret], abc, "
        "postgresql://app:[secret]@db:5432/app, redis://:[secret]@cache:6379/0, "
        "host=db password=[secret] dbname=app, postgresql://app:[secret]@db/app"
    )


@pytest.mark.parametrize(
    ("masked_before", "starts_at"),
    [
        (0, ERROR_TEXT_MAX_CHARS - 30),
        (0, ERROR_TEXT_MAX_CHARS - 1),
        (35, ERROR_TEXT_MAX_CHARS + SECRET_MAX_CHARS - 12),
    ],
)
def test_an_error_text_is_masked_before_it_is_cut(masked_before: int, starts_at: int) -> None:
    """A registered secret across a cut of ``errors.error_text`` (a run's recorded error,
    its log line) leaves no part of itself: masked first, then cut (found by reviews: cut
    first, the log's masking no longer found the whole secret; and masking
    ``masked_before`` secrets ahead of one the masked window cut shortens the text,
    bringing what is left of it inside what is kept). The secret starts at character
    ``starts_at`` of the text."""
    secret = "lsv2_sk_0123456789abcdef0123456789abcdef"
    other = "Zq8xW3vR7tY2uI9oP4aS6dF1gH5jK0lMnB7vC3xZ"
    logs.add_secrets([secret, other])
    lines = "".join(f"retry {i:02d} x-api-key={other}\n" for i in range(masked_before))
    head = "RuntimeError: "
    pad = "x" * (starts_at - len(head) - len(lines))
    text = error_text(RuntimeError(lines + pad + secret + " and more"))
    assert len(text) <= ERROR_TEXT_MAX_CHARS
    assert not any(secret[:n] in text for n in range(6, len(secret) + 1)), text[-80:]


def test_a_password_libpq_reads_with_a_hash_is_a_secret() -> None:
    """libpq takes ``#`` as part of the password (``urlsplit`` as a fragment's start)."""
    assert "TOP#SECRET" in logs.url_secrets("postgresql://app:TOP#SECRET@db/app")
    unreadable = "postgresql://u:pa%zzss@h/db"  # libpq cannot decode it: all of it masked
    assert {"pa%zzss", unreadable} <= set(logs.url_secrets(unreadable))


def test_settings_secrets_are_the_credentials_and_url_passwords() -> None:
    settings = WebConfig(
        slack_signing_secret="sign-secret",
        slack_bot_token="xoxb-1",
        database_url="postgresql://u:p%20w@h/db?password=q2",
        redis_url="redis://:rpw1@h:6379/0",
    )
    assert set(logs.settings_secrets(settings)) == {
        "sign-secret",
        "xoxb-1",
        "p%20w",
        "p w",
        "q2",
        "rpw1",
    }


def test_the_agent_servers_key_and_url_password_are_secrets() -> None:
    """``LANGGRAPH_API_KEY`` and a password in ``AGENT_URL`` never reach a log line."""
    settings = WorkerConfig(
        slack_bot_token="xoxb-1",
        database_url="sqlite:///x.db",
        agent_url="https://agent:apw9@agents.internal",
        langgraph_api_key="lsv2-key-7",
    )
    assert {"lsv2-key-7", "apw9"} <= set(logs.settings_secrets(settings))
    assert "lsv2-key-7" not in repr(settings) and "apw9" not in repr(settings)


def test_text_lines_carry_the_bound_ids() -> None:
    stream = io.StringIO()
    logger = logging.getLogger("tests.text_lines")
    logger.addHandler(logs.handler("text", stream))
    logger.setLevel(logging.INFO)
    logger.propagate = False
    with log_context.bound(run_id="run-1", request_id="req-1"):
        logger.info("card %s", "posted")
    logger.info("after")
    first, second = stream.getvalue().splitlines()
    assert first.endswith(" INFO tests.text_lines: card posted run_id=run-1 request_id=req-1")
    assert second.endswith(" INFO tests.text_lines: after")


FORGED = "2030-01-01T00:00:00Z INFO agent_bridge.worker: run=forged approved by U0ADMIN"


def test_agent_text_cannot_forge_a_text_line() -> None:
    """A tool's error text with line breaks (any ``str.splitlines`` breaks at) stays on
    its own line, escaped; in a traceback, every line after the first is indented, so
    none starts where a log line does."""
    stream = io.StringIO()
    logger = logging.getLogger("tests.forged_lines")
    logger.addHandler(logs.handler("text", stream))
    logger.setLevel(logging.INFO)
    logger.propagate = False
    for brk in ("\n", "\r\n", "\u2028", "\x85", "\v"):
        logger.warning("tool failed: %s", f"cannot open x{brk}{FORGED}")
    try:
        raise RuntimeError(f"vault refused\n{FORGED}")
    except RuntimeError:
        logger.exception("run failed")
    lines = stream.getvalue().splitlines()
    assert not [line for line in lines if line.startswith("2030-")], lines
    warnings = [line for line in lines if " WARNING tests.forged_lines: " in line]
    assert len(warnings) == 5 and all(FORGED in line for line in warnings)
    failed = lines.index(next(line for line in lines if line.endswith(": run failed")))
    traceback = lines[failed + 1 :]
    assert traceback and all(line.startswith(logs.TRACEBACK_INDENT) for line in traceback)
    assert any(line.strip() == FORGED for line in traceback)


TERMINAL_TRICKS = "\x1b[1A\x1b[2K\u202e\x9b2J\u200b\x00\x07\u061c\U000e0041"
"""Cursor up and erase the line before, a right-to-left override, an 8-bit CSI, a
zero-width space, NUL and a bell: what a terminal acts on rather than shows."""


def test_agent_text_cannot_act_on_the_terminal_that_shows_the_log() -> None:
    """In ``kubectl logs`` or ``tail`` an escape sequence in a tool's error text would
    overwrite the line before it; each character is written escaped (a tab stays)."""
    stream = io.StringIO()
    logger = logging.getLogger("tests.terminal_lines")
    logger.addHandler(logs.handler("text", stream))
    logger.setLevel(logging.INFO)
    logger.propagate = False
    logger.warning("tool failed:\t%s", f"x{TERMINAL_TRICKS}y")
    try:
        raise RuntimeError(f"vault refused {TERMINAL_TRICKS}")
    except RuntimeError:
        logger.exception("run failed")
    written = stream.getvalue()
    unprintable = [c for c in TERMINAL_TRICKS if not c.isprintable()]
    assert len(unprintable) == 9 and not [c for c in unprintable if c in written]
    escaped = "\\x1b[1A\\x1b[2K\\u202e\\x9b2J\\u200b\\x00\\x07\\u061c\\U000e0041"
    assert f"tool failed:\tx{escaped}y" in written
    assert written.count("\\x1b[1A") == 2  # the traceback's too


def test_json_lines_stay_one_line_each_for_any_line_reader(json_lines: io.StringIO) -> None:
    """``json.dumps`` leaves U+2028, U+2029 and NEL as they are, where ``str.splitlines``
    breaks; and C1 controls, which a terminal acts on: each is written ``\\u``-escaped,
    which JSON reads back as the same character."""
    text = f"a\u2028b\u2029c\x85d{TERMINAL_TRICKS}"
    logging.getLogger("tests.json_breaks").warning("tool said %s", text)
    [line] = [li for li in json_lines.getvalue().splitlines() if "tests.json_breaks" in li]
    assert json.loads(line)["event"] == f"tool said {text}"
    assert not [c for c in "\u2028\u2029\x85\x9b\u202e\u200b\u061c\U000e0041" if c in line]


@pytest.mark.parametrize(("level", "shown"), [("INFO", False), ("DEBUG", True)])
def test_http_requests_are_logged_at_debug_only(level: str, shown: bool) -> None:
    # langgraph-sdk's httpx logs each request at INFO: a worker of a deployed agent wrote
    # "HTTP Request: POST .../threads/search" once per sweep.
    root, httpx, pool = (
        logging.getLogger(),
        logging.getLogger("httpx"),
        logging.getLogger("psycopg.pool"),
    )
    saved = root.handlers[:], root.level, httpx.level, pool.filters[:]
    stream = io.StringIO()
    try:
        logs.configure_logging(level=level, log_format="text")
        root.handlers[0].setStream(stream)  # type: ignore[attr-defined]
        httpx.info('HTTP Request: POST http://127.0.0.1:2024/threads/search "HTTP/1.1 200 OK"')
        httpx.warning("a warning")
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        httpx.setLevel(saved[2])
        pool.filters[:] = saved[3]
    assert ("threads/search" in stream.getvalue()) == shown
    assert "a warning" in stream.getvalue()


def test_an_unknown_context_key_is_refused() -> None:
    with pytest.raises(ValueError, match="not a log context key"), log_context.bound(run="r"):
        pass


def test_a_database_that_refuses_the_user_at_start_says_why() -> None:
    """Not "is it running?" after the wait: libpq's reason, without the password."""
    result = agent_bridge(
        "web",
        env=clean_environment(
            SLACK_SIGNING_SECRET="a-real-looking-secret",
            SLACK_BOT_TOKEN="xoxb-2-real-looking",
            DATABASE_URL="postgresql://nobody_here:s3cretpw@127.0.0.1:5432/postgres",
        ),
    )
    assert result.returncode == 2
    said = result.stderr.splitlines()[-1]
    assert said.startswith("agent-bridge web: Cannot connect to PostgreSQL at "), said
    assert 'role "nobody_here" does not exist' in said and "s3cret" not in result.stderr


@pytest.mark.parametrize(
    ("password", "said"),
    [
        ("s3cretpw", "agent-bridge web: Cannot connect to PostgreSQL"),
        # a space: libpq cannot read the URL, and its own message would quote the password
        ("s3cret pw", "agent-bridge web: DATABASE_URL cannot be used"),
    ],
)
def test_an_unreachable_database_at_start_shows_no_password(
    tmp_path: Any, password: str, said: str
) -> None:
    result = agent_bridge(
        "web",
        env=clean_environment(
            SLACK_SIGNING_SECRET="a-real-looking-secret",
            SLACK_BOT_TOKEN="xoxb-2-real-looking",
            DATABASE_URL=f"postgresql://app:{password}@127.0.0.1:1/app",
            LOG_FORMAT="json",
        ),
    )
    assert result.returncode == 2
    assert password not in result.stderr and "s3cret" not in result.stderr
    assert "xoxb-2-real-looking" not in result.stderr
    assert said in result.stderr
    logged = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    assert all(line["logger"] == "psycopg.pool" for line in logged)


def test_a_log_lines_strings_are_masked_and_cut(json_lines: io.StringIO) -> None:
    """A failed tool's exception carrying megabytes is logged cut to
    ``LOG_TEXT_MAX_CHARS`` per string, masked first, a secret at the cut left out whole:
    masking it all held the worker's event loop about 3.4 s per 100 MB (found by a
    review)."""
    starts_at = LOG_TEXT_MAX_CHARS - 20
    message = "y" * starts_at + TEST_BOT_TOKEN + "z" * 2_000_000
    try:
        raise RuntimeError(message)
    except RuntimeError:
        logging.getLogger("agent_bridge.worker").exception("run=r failed: %s", message)
    (line,) = [json.loads(text) for text in json_lines.getvalue().splitlines()]
    for value in (line["event"], line["exception"]):
        assert len(value) <= LOG_TEXT_MAX_CHARS and value.endswith("…")
        assert not any(TEST_BOT_TOKEN[:n] in value for n in range(6, len(TEST_BOT_TOKEN) + 1))
    assert line["exception"].startswith("Traceback") and "test_logs.py" in line["exception"]

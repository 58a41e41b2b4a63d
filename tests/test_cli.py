"""``agent-bridge`` as a real process: production refuses to start on missing or public
Slack credentials; the demo needs none."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_bridge.db import dialect_of
from agent_bridge.postgres_db import database_target
from agent_bridge.settings import (
    DEMO_BOT_TOKEN,
    DEMO_SIGNING_SECRET,
    DemoSettings,
    ReleaseSettings,
    WebSettings,
    WorkerSettings,
)
from tests.harness import Harness

REPO = Path(__file__).resolve().parent.parent
PROCESS_TIMEOUT_S = 90.0
REAL_SECRET = "0f3c9a-not-public-signing-secret"
UNREACHABLE_DB = "postgresql://app@127.0.0.1:1/app"
"""Never connected to: the settings are refused before."""
SETTINGS_VARIABLES = {
    name.upper()
    for settings_type in (WebSettings, WorkerSettings, ReleaseSettings, DemoSettings)
    for name in settings_type.model_fields
}


def clean_environment(**variables: str) -> dict[str, str]:
    """This process's environment without any settings variable, plus ``variables``."""
    env = {
        name: value
        for name, value in os.environ.items()
        if name.upper() not in SETTINGS_VARIABLES and not name.upper().startswith("SLACK_")
    }
    return {**env, **variables}


def agent_bridge(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``python -m bot.cli *args`` from the repository, as the console script would."""
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
        check=False,
    )


CASES = {
    "unset": ({}, "is not set"),
    "demo values": (
        {"SLACK_SIGNING_SECRET": DEMO_SIGNING_SECRET, "SLACK_BOT_TOKEN": DEMO_BOT_TOKEN},
        "is the demo's public value",
    ),
    "empty": ({"SLACK_SIGNING_SECRET": "", "SLACK_BOT_TOKEN": ""}, "is empty"),
}
NAMED = {"web": ["SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET"], "worker": ["SLACK_BOT_TOKEN"]}
"""The variables each process must name (the worker reads no signing secret)."""


@pytest.mark.parametrize("command", list(NAMED))
@pytest.mark.parametrize("case", list(CASES))
def test_production_refuses_to_start_without_its_own_credentials(command: str, case: str) -> None:
    variables, said = CASES[case]
    done = agent_bridge(command, env=clean_environment(DATABASE_URL=UNREACHABLE_DB, **variables))
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()  # one line, no traceback
    assert line.startswith(f"agent-bridge {command}: ")
    problems = line.removeprefix(f"agent-bridge {command}: ").split("; ")
    assert sorted(p.split()[0] for p in problems) == NAMED[command]
    assert all(said in p for p in problems), line
    assert DEMO_SIGNING_SECRET not in done.stderr and DEMO_BOT_TOKEN not in done.stderr


async def test_a_worker_whose_token_slack_refuses_stops_at_start(
    harness: Harness, pg_url: str
) -> None:
    """As the web process does: ``auth.test`` at start, and a refused ``SLACK_BOT_TOKEN``
    (a typo, a token from before a reinstall) stops the worker with exit code 2 saying
    so, rather than have it say it is ready and fail every run later."""
    env = clean_environment(
        DATABASE_URL=pg_url,
        SLACK_BOT_TOKEN="xoxb-wrong-token-typo",
        SLACK_API_URL=harness.sandbox.api_url,
    )
    done = await asyncio.to_thread(agent_bridge, "worker", env=env)
    assert done.returncode == 2, done.stderr
    assert "SLACK_BOT_TOKEN was refused by auth.test: invalid_auth" in done.stderr
    assert "xoxb-wrong-token-typo" not in done.stderr and "ready" not in done.stderr


@pytest.mark.parametrize(
    "redirect_uri",
    ["https://bridge.example.com/oauth/callback", "http://bridge.example.com/slack/oauth_redirect"],
    ids=["another path", "plain http"],
)
def test_a_redirect_uri_the_app_does_not_serve_is_refused_at_start(
    pg_url: str, redirect_uri: str
) -> None:
    """The app takes installs back at ``/slack/oauth_redirect`` over HTTPS only: another
    Redirect URL would end every install on a 404 or Slack's error page, later."""
    env = clean_environment(
        DATABASE_URL=pg_url,
        SLACK_SIGNING_SECRET=REAL_SECRET,
        SLACK_CLIENT_ID="123.456",
        SLACK_CLIENT_SECRET="not-public-client-secret",
        SLACK_REDIRECT_URI=redirect_uri,
    )
    done = agent_bridge("web", env=env)
    assert done.returncode == 2, done.stderr
    assert "SLACK_REDIRECT_URI must be https://<your-host>/slack/oauth_redirect" in done.stderr


def test_web_names_only_the_wrong_variable_and_never_a_secret() -> None:
    env = clean_environment(
        DATABASE_URL=UNREACHABLE_DB,
        SLACK_SIGNING_SECRET=REAL_SECRET,
        SLACK_BOT_TOKEN=DEMO_BOT_TOKEN,
    )
    done = agent_bridge("web", env=env)
    assert done.returncode == 2
    assert done.stderr == (
        "agent-bridge web: SLACK_BOT_TOKEN is the demo's public value: set your app's bot token\n"
    )


def test_release_refuses_to_start_without_a_database_url() -> None:
    done = agent_bridge("release", env=clean_environment())
    assert done.returncode == 2
    assert done.stderr.startswith("agent-bridge release: DATABASE_URL is not set (postgresql://")
    assert "[secret]" not in done.stderr  # the hint holds no password to mask


@pytest.mark.parametrize("transport", [[], ["--socket-mode"]], ids=["http", "socket-mode"])
def test_the_unattended_demo_works_with_no_variable_set(transport: list[str]) -> None:
    done = agent_bridge("demo", "--unattended", *transport, env=clean_environment())
    assert done.returncode == 0, done.stdout + done.stderr
    assert ("Slack's deliveries: Socket Mode" in done.stdout) == bool(transport)
    assert "Final answer:\nDone." in done.stdout
    assert "BAD" not in done.stdout and done.stdout.count("  ok  ") == 3
    assert "olga (outsider) clicks Approve, is told: :no_entry:" in done.stdout
    assert "approved by dana (DBA), dmitri (DBA)" in done.stdout


@pytest.mark.parametrize("policy", ["per_call.yml", "conditional.yml"])
def test_the_unattended_demo_under_another_shipped_policy_approves_each_card(policy: str) -> None:
    # These policies name no DBAs: the demo policy's scene on execute_sql (the outsider
    # refused first) waited for a refusal that never came, and timed out after the run ended.
    env = clean_environment(POLICY=str(REPO / "agent_bridge" / "policies" / policy))
    done = agent_bridge("demo", "--unattended", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "reviewer approves execute_sql" in done.stdout
    assert "olga (outsider)" not in done.stdout
    assert "Final answer:\nDone." in done.stdout
    assert "the DBAs' approvals are skipped" in done.stdout


def test_the_unattended_demo_under_your_own_policy_asks_the_dbas_while_a_card_waits(
    tmp_path: Path,
) -> None:
    policy = tmp_path / "policy.yml"
    policy.write_text(
        "tools:\n  execute_sql:\n    allowed_decisions: [approve, reject]\n"
        "    approvers: [S0DBA]\n    required_approvals: 2\n"
    )
    done = agent_bridge("demo", "--unattended", env=clean_environment(POLICY=str(policy)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "reviewer clicks Approve, is told: :no_entry: You are not an approver" in done.stdout
    assert "dana (DBA) approves execute_sql (more needed)" in done.stdout
    assert "dmitri (DBA) approves execute_sql\n" in done.stdout
    assert "Final answer:\nDone." in done.stdout


OWN_AGENT = {
    "AGENT": "examples.tools_agent:make_tools",
    "POLICY": str(REPO / "examples" / "tools_policy.yml"),
}
MAIL = (
    '{"tool_calls": [{"name": "send_email", "args": '
    '{"to": "grace@partner.test", "subject": "Invoice", "body": "Attached."}}]}'
)


def test_the_unattended_demo_of_your_own_agent_asks_for_its_task() -> None:
    # The demo's own task calls the demo's tools: sent to another agent it only failed.
    refused = agent_bridge("demo", "--unattended", env=clean_environment(**OWN_AGENT))
    assert refused.returncode == 2
    assert "--unattended with your own AGENT needs --task" in refused.stderr
    done = agent_bridge("demo", "--unattended", "--task", MAIL, env=clean_environment(**OWN_AGENT))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Submitted: /agent {MAIL}" in done.stdout
    assert "reviewer approves send_email" in done.stdout
    assert "Sent to grace@partner.test" in done.stdout


@pytest.mark.parametrize(
    "url",
    [
        "mysql://app:TOPSECRETPW@db/app",
        "host=db user=app password=TOPSECRETPW dbname=app",  # libpq's key=value form
    ],
)
def test_a_wrong_database_url_is_refused_without_showing_it(url: str) -> None:
    result = agent_bridge("release", env=clean_environment(DATABASE_URL=url))
    assert result.returncode == 2 and "DATABASE_URL cannot be used" in result.stderr
    assert "TOPSECRETPW" not in result.stderr + result.stdout


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://app:TOP@SECRETPW@127.0.0.1:5432/app",  # '@' moves it into the host
        "postgresql://app:TOP:SECRET/PW@127.0.0.1/app",  # ':' and '/': the port, the name
        "postgresql://app:TOP@SECRET@PW@127.0.0.1:5432/app?sslmode=disable",
        # '/' and '?' move the rest into a parameter libpq sends to the server
        "postgresql://app:TOP@127.0.0.1/app?application_name=SECRET@PW@127.0.0.1/app",
        "postgresql://app:/TOPSECRET?password=PW@db.internal/app",  # the name: '/TOPSECRET'
    ],
)
def test_a_password_left_unescaped_in_the_database_url_is_refused_without_showing_it(
    url: str,
) -> None:
    """libpq would read part of the password as the host, port or database name, which
    errors, psycopg's logs and the signal channel's name show; the process stops first,
    saying what to escape."""
    result = agent_bridge("release", env=clean_environment(DATABASE_URL=url))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "percent-encode" in result.stderr
    for piece in ("TOP", "SECRET", "PW"):
        assert piece not in result.stderr + result.stdout


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://app:TOP%40SECRET%3APW%2F@127.0.0.1:5432/app",
        "postgresql:///app?host=/var/run/postgresql",
        "postgresql://app@db1:5432,db2:5433/app",
        "postgresql://app@db1,db2:5433/app",  # the first host on the default port
        "postgresql://sa-bridge%40my-project.iam@10.0.0.5/app",  # a Cloud SQL IAM user
        "postgresql://app@db/app?user=alice%40EXAMPLE.COM&application_name=bridge%40w1",
        "postgresql://app:pw@db/my%40db",
        "postgresql://app:TOP#SECRET@db/app",  # libpq reads '#' as part of the password
    ],
)
def test_a_database_url_escaped_or_with_a_socket_or_several_hosts_is_taken(url: str) -> None:
    assert dialect_of(url) == "postgres"


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://app:TOPSECRETPW@db:5432/app",
        "postgresql://app@db:5432/app?password=TOPSECRETPW",
        "postgresql://app:TOP#SECRETPW@db:5432/app",  # libpq reads '#' as part of it
        "host=db port=5432 user=app password=TOPSECRETPW dbname=app",
    ],
)
def test_where_a_database_is_named_without_its_password(url: str) -> None:
    """What an unreachable database's error says: where, never the password."""
    assert database_target(url) == "app@db:5432/app"


def test_a_malformed_redis_url_is_named_not_a_traceback() -> None:
    env = clean_environment(
        SLACK_BOT_TOKEN="xoxb-not-public", DATABASE_URL=UNREACHABLE_DB, REDIS_URL="127.0.0.1:6379"
    )
    result = agent_bridge("worker", env=env)
    assert result.returncode == 2, result.stderr
    assert "REDIS_URL" in result.stderr and "Traceback" not in result.stderr


def test_an_unknown_log_level_is_refused_by_name_not_a_traceback() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bot.cli", "--log-level", "verbose", "release"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert result.returncode == 2 and "--log-level" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and "DEBUG" in result.stderr

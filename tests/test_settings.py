"""Each process reads only its own variables, and production never runs on the demo's secrets."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_settings import BaseSettings

from agent_bridge.errors import ConfigurationError
from agent_bridge.settings import (
    DEMO_APP_TOKEN,
    DEMO_BOT_TOKEN,
    DEMO_SIGNING_SECRET,
    AttachSettings,
    DemoSettings,
    LogSettings,
    ReleaseSettings,
    WebSettings,
    WorkerSettings,
    read_settings,
)

OWN_VARIABLES: dict[type[BaseSettings], set[str]] = {
    WebSettings: {
        "SLACK_SIGNING_SECRET",
        "SLACK_BOT_TOKEN",
        "SLACK_CLIENT_ID",
        "SLACK_CLIENT_SECRET",
        "SLACK_REDIRECT_URI",
        "SLACK_APP_TOKEN",
        "SLACK_API_URL",
        "DATABASE_URL",
        "REDIS_URL",
        "SIGNAL_CHANNEL",
        "CHANNEL_AGENTS",
        "PORT",
        "HOST",
    },
    WorkerSettings: {
        "SLACK_BOT_TOKEN",
        "SLACK_CLIENT_ID",
        "SLACK_API_URL",
        "DATABASE_URL",
        "REDIS_URL",
        "SIGNAL_CHANNEL",
        "MODEL",
        "AGENT",
        "SYSTEM_PROMPT",
        "AGENT_NAME",
        "POLICY",
        "APPROVALS_CHANNEL",
        "WORKSPACE_DIR",
        "POLL_INTERVAL_S",
        "LEASE_S",
        "METRICS_PORT",
        "MAX_CONCURRENT_RUNS",
        "STOP_GRACE_S",
        "STEP_TIMEOUT_S",
        "CHECKPOINT_RETENTION_DAYS",
        "DATABASE_PREPARED_STATEMENTS",
        "AGENT_URL",
        "ASSISTANT_ID",
        "LANGGRAPH_API_KEY",
    },
    ReleaseSettings: {"DATABASE_URL"},
    AttachSettings: {
        "AGENT_URL",
        "LANGGRAPH_API_KEY",
        "DATABASE_URL",
        "REDIS_URL",
        "SIGNAL_CHANNEL",
    },
    LogSettings: {"LOG_FORMAT"},
    DemoSettings: {
        "MODEL",
        "AGENT",
        "SYSTEM_PROMPT",
        "POLICY",
        "AGENT_URL",
        "ASSISTANT_ID",
        "LANGGRAPH_API_KEY",
    },
}
ALL_VARIABLES = set().union(*OWN_VARIABLES.values())

REAL_SECRET = "0f3c9a-not-public-signing-secret"
REAL_TOKEN = "xoxb-1234-not-public"
VALID = {
    "SLACK_SIGNING_SECRET": REAL_SECRET,
    "SLACK_BOT_TOKEN": REAL_TOKEN,
    "DATABASE_URL": "postgresql://app@db.internal:5432/app",
    "AGENT_URL": "http://agents.internal:2024",
}
"""What a process's required variables are set to when they are its own."""
FOREIGN = {
    "SLACK_SIGNING_SECRET": DEMO_SIGNING_SECRET,
    "SLACK_BOT_TOKEN": DEMO_BOT_TOKEN,
    "SLACK_CLIENT_ID": "foreign.client",
    "SLACK_CLIENT_SECRET": "",
    "SLACK_REDIRECT_URI": "https://foreign.invalid/slack/oauth_redirect",
    "SLACK_APP_TOKEN": DEMO_APP_TOKEN,
    "SLACK_API_URL": "http://foreign.invalid/api/",
    "DATABASE_URL": "",
    "REDIS_URL": "redis://foreign.invalid:6379/0",
    "SIGNAL_CHANNEL": "foreign:signals",
    "CHANNEL_AGENTS": "{not json",
    "PORT": "not-a-port",
    "HOST": "foreign.invalid",
    "MODEL": "foreign:model",
    "AGENT": "foreign.module:tools",
    "SYSTEM_PROMPT": "",
    "AGENT_NAME": "foreign",
    "POLICY": "/foreign/policy.yml",
    "APPROVALS_CHANNEL": "C0FOREIGN",
    "WORKSPACE_DIR": "/foreign/workspace",
    "POLL_INTERVAL_S": "-999",
    "LEASE_S": "-999",
    "METRICS_PORT": "not-a-port",
    "LOG_FORMAT": "xml",
    "MAX_CONCURRENT_RUNS": "-31337",
    "STOP_GRACE_S": "-999",
    "STEP_TIMEOUT_S": "-999",
    "CHECKPOINT_RETENTION_DAYS": "-999",
    "DATABASE_PREPARED_STATEMENTS": "maybe",
    "AGENT_URL": "http://foreign.invalid:1",
    "ASSISTANT_ID": "foreign",
    "LANGGRAPH_API_KEY": "foreign-langgraph-key",
}
"""Values a process would refuse or show if it read a variable that is not its own."""


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No settings variable from the developer's shell or CI reaches these tests."""
    for name in ALL_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("settings_type", list(OWN_VARIABLES), ids=lambda t: t.__name__)
def test_each_process_declares_only_its_own_variables(
    settings_type: type[BaseSettings],
) -> None:
    assert {name.upper() for name in settings_type.model_fields} == OWN_VARIABLES[settings_type]


@pytest.mark.parametrize("settings_type", list(OWN_VARIABLES), ids=lambda t: t.__name__)
def test_each_process_ignores_the_others_variables(
    settings_type: type[BaseSettings], monkeypatch: pytest.MonkeyPatch
) -> None:
    own = OWN_VARIABLES[settings_type]
    for name in ALL_VARIABLES:
        value = VALID.get(name) if name in own else FOREIGN[name]
        if value is not None:
            monkeypatch.setenv(name, value)
    settings = read_settings(settings_type)  # a foreign value it read would be refused
    shown = repr(settings.model_dump())
    assert not [v for n, v in FOREIGN.items() if n not in own and v and v in shown]


def test_the_worker_reads_no_signing_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", REAL_TOKEN)
    monkeypatch.setenv("DATABASE_URL", VALID["DATABASE_URL"])
    assert read_settings(WorkerSettings).slack_bot_token == REAL_TOKEN  # none set: fine
    monkeypatch.setenv("SLACK_SIGNING_SECRET", DEMO_SIGNING_SECRET)
    settings = read_settings(WorkerSettings)  # the demo's: not refused, as not read
    assert not hasattr(settings, "slack_signing_secret")


CREDENTIALS = [
    (WebSettings, "SLACK_SIGNING_SECRET"),
    (WebSettings, "SLACK_BOT_TOKEN"),
    (WorkerSettings, "SLACK_BOT_TOKEN"),
]
REFUSED = {
    "unset": (None, "is not set"),
    "empty": ("", "is empty"),
    "blank": ("  \n", "is empty"),
    "demo secret": (DEMO_SIGNING_SECRET, "is the demo's public value: set your app's"),
    "demo token": (DEMO_BOT_TOKEN, "is the demo's public value: set your app's"),
}


@pytest.mark.parametrize(("settings_type", "variable"), CREDENTIALS)
@pytest.mark.parametrize("case", list(REFUSED))
def test_production_refuses_a_missing_or_public_credential(
    settings_type: type[BaseSettings],
    variable: str,
    case: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in OWN_VARIABLES[settings_type] & VALID.keys():
        monkeypatch.setenv(name, VALID[name])
    value, said = REFUSED[case]
    if value is None:
        monkeypatch.delenv(variable)
    else:
        monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigurationError) as caught:
        read_settings(settings_type)
    message = str(caught.value)
    assert message.startswith(f"{variable} {said}"), message
    assert ";" not in message  # the other variables are fine: only this one is named
    for secret in (REAL_SECRET, REAL_TOKEN, DEMO_SIGNING_SECRET, DEMO_BOT_TOKEN):
        assert secret not in message
    # The pydantic error (whose text shows the input values) is not chained either.
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


@pytest.mark.parametrize(("settings_type", "variable"), CREDENTIALS)
def test_a_credential_pasted_with_a_newline_is_read_without_it(
    settings_type: type[BaseSettings], variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A secret written to a file with ``echo`` (or mounted from a Kubernetes secret)
    ends in a newline; kept, every request's signature would fail, and nothing says
    why. No credential has surrounding whitespace."""
    for name in OWN_VARIABLES[settings_type] & VALID.keys():
        monkeypatch.setenv(name, VALID[name])
    monkeypatch.setenv(variable, f" {VALID[variable]}\n")
    settings = read_settings(settings_type)
    assert getattr(settings, variable.lower()) == VALID[variable]


@pytest.mark.parametrize("settings_type", [WebSettings, WorkerSettings])
@pytest.mark.parametrize("with_token", [True, False], ids=["with a bot token", "alone"])
def test_an_empty_client_id_is_refused_not_taken_for_oauth(
    settings_type: type[BaseSettings], with_token: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``SLACK_CLIENT_ID=`` (a template's empty line) would switch on OAuth with no
    client ID: every run fails later with not_installed. It is refused, named alone."""
    for name in OWN_VARIABLES[settings_type] & VALID.keys():
        monkeypatch.setenv(name, VALID[name])
    if not with_token:
        monkeypatch.delenv("SLACK_BOT_TOKEN")
    monkeypatch.setenv("SLACK_CLIENT_ID", "")
    with pytest.raises(ConfigurationError) as caught:
        read_settings(settings_type)
    problems = str(caught.value).split("; ")
    assert problems[0].startswith("SLACK_CLIENT_ID is empty"), problems
    assert not [p for p in problems if "both set" in p], problems


def test_every_wrong_variable_is_named_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_SIGNING_SECRET", DEMO_SIGNING_SECRET)
    monkeypatch.setenv("PORT", "not-a-port")
    with pytest.raises(ConfigurationError) as caught:
        read_settings(WebSettings)
    problems = sorted(str(caught.value).split("; "))
    assert [p.split()[0].rstrip(":") for p in problems] == [
        "DATABASE_URL",
        "PORT",
        "SLACK_BOT_TOKEN",
        "SLACK_SIGNING_SECRET",
    ]
    assert "not-a-port" not in str(caught.value)


def test_web_worker_and_release_need_a_database_url() -> None:
    with pytest.raises(ConfigurationError, match=r"^DATABASE_URL is not set \(postgresql://"):
        read_settings(ReleaseSettings)


def test_the_demo_needs_nothing_and_reads_no_slack_credential(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert read_settings(DemoSettings) == DemoSettings()
    for name, value in {**VALID, "REDIS_URL": "redis://prod:6379/0"}.items():
        monkeypatch.setenv(name, value)
    settings = read_settings(DemoSettings)
    web = settings.web_config(api_url="http://127.0.0.1:1/api/", data_dir=tmp_path)
    worker = settings.worker_config(api_url="http://127.0.0.1:1/api/", data_dir=tmp_path)
    assert (web.slack_signing_secret, web.slack_bot_token) == (DEMO_SIGNING_SECRET, DEMO_BOT_TOKEN)
    assert worker.slack_bot_token == DEMO_BOT_TOKEN
    assert web.database_url == worker.database_url == f"sqlite:///{tmp_path / 'agent.db'}"
    assert web.redis_url is None and worker.redis_url is None
    assert worker.workspace_dir == tmp_path / "workspace"


def test_the_demo_runs_the_agent_it_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT", "tests.report_agent:tools")
    monkeypatch.setenv("POLICY", "tests/fixtures/report_policy.yml")
    worker = read_settings(DemoSettings).worker_config(
        api_url="http://127.0.0.1:1/api/", data_dir=Path("d")
    )
    assert (worker.agent, worker.policy) == (
        "tests.report_agent:tools",
        Path("tests/fixtures/report_policy.yml"),
    )


def test_credentials_are_not_in_the_settings_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in VALID.items():
        monkeypatch.setenv(name, value)
    shown = repr(read_settings(WebSettings)) + repr(read_settings(WorkerSettings))
    assert REAL_SECRET not in shown and REAL_TOKEN not in shown


def test_database_and_redis_passwords_are_not_in_the_settings_repr(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An ``AGENT`` callable gets the worker's config; printing it shows no password."""
    for name, value in VALID.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("DATABASE_URL", "postgresql://app:DBPASSWORD@db.internal:5432/app")
    monkeypatch.setenv("REDIS_URL", "redis://:REDISPASSWORD@cache:6379/0")
    worker = read_settings(WorkerSettings)
    assert worker.redis_url == "redis://:REDISPASSWORD@cache:6379/0"  # still there to use
    shown = repr(worker) + str(worker) + repr(read_settings(WebSettings))
    assert "DBPASSWORD" not in shown and "REDISPASSWORD" not in shown


@pytest.mark.parametrize("url", ["127.0.0.1:6379", "redis://cache:port/0", "http://cache/0"])
def test_a_redis_url_redis_cannot_read_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    for name, value in VALID.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("REDIS_URL", url)
    with pytest.raises(ConfigurationError, match="REDIS_URL") as refused:
        read_settings(WorkerSettings)
    assert url not in str(refused.value)


@pytest.mark.parametrize(
    ("variables", "said"),
    [
        ({"SLACK_CLIENT_ID": "1.2", "SLACK_CLIENT_SECRET": "s3cr3t"}, None),
        ({"SLACK_CLIENT_ID": "1.2"}, "SLACK_CLIENT_ID and SLACK_CLIENT_SECRET go together"),
        (
            {
                "SLACK_CLIENT_ID": "1.2",
                "SLACK_CLIENT_SECRET": "s3cr3t",
                "SLACK_BOT_TOKEN": "xoxb-9",
            },
            "SLACK_BOT_TOKEN and SLACK_CLIENT_ID are both set",
        ),
        ({"SLACK_CLIENT_SECRET": "s3cr3t"}, "SLACK_BOT_TOKEN is not set"),
    ],
)
def test_the_web_takes_one_bot_token_or_oauth_credentials(
    variables: dict[str, str], said: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLACK_SIGNING_SECRET", REAL_SECRET)
    monkeypatch.setenv("DATABASE_URL", VALID["DATABASE_URL"])
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    if said is None:
        settings = read_settings(WebSettings)
        assert settings.oauth and settings.slack_bot_token is None
        assert "s3cr3t" not in repr(settings)
        return
    with pytest.raises(ConfigurationError) as caught:
        read_settings(WebSettings)
    assert str(caught.value).startswith(said), caught.value
    assert "s3cr3t" not in str(caught.value) and "xo-9" not in str(caught.value)


def test_a_worker_in_oauth_mode_needs_only_the_client_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", VALID["DATABASE_URL"])
    monkeypatch.setenv("SLACK_CLIENT_ID", "1.2")
    settings = read_settings(WorkerSettings)
    assert settings.oauth and settings.slack_bot_token is None


@pytest.mark.parametrize(
    ("url", "refused"),
    [
        ("https://slack.com/api/", False),
        ("http://127.0.0.1:8765/api/", False),  # the sandbox
        ("http://localhost:8765/api/", False),
        ("http://slack.example.com/api/", True),  # the bot token in clear, to anyone between
        ("ftp://slack.com/api/", True),
        ("https:///api/", True),
    ],
)
def test_the_web_api_url_carries_tokens_over_tls_or_on_this_machine_only(
    monkeypatch: pytest.MonkeyPatch, url: str, refused: bool
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", REAL_TOKEN)
    monkeypatch.setenv("DATABASE_URL", VALID["DATABASE_URL"])
    monkeypatch.setenv("SLACK_API_URL", url)
    if not refused:
        assert read_settings(WorkerSettings).slack_api_url == url
        return
    with pytest.raises(ConfigurationError) as caught:
        read_settings(WorkerSettings)
    assert "SLACK_API_URL" in str(caught.value) and "https://" in str(caught.value)


@pytest.mark.parametrize("name", ["LEASE_S", "POLL_INTERVAL_S", "STOP_GRACE_S"])
@pytest.mark.parametrize("value", ["inf", "nan", "86400"])
def test_a_worker_timing_must_be_a_time_it_reaches(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    """An infinite lease leaves a dead worker's run to nobody; an infinite poll interval
    never sweeps for a lost signal."""
    monkeypatch.setenv("SLACK_BOT_TOKEN", REAL_TOKEN)
    monkeypatch.setenv("DATABASE_URL", VALID["DATABASE_URL"])
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError) as caught:
        read_settings(WorkerSettings)
    assert name in str(caught.value)

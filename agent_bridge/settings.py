"""Process configuration: what each process is wired with, and reading it from the environment.

Each process builds one settings object in its entry point (``read_settings``) and passes
it down; nothing else reads the environment. A process reads only its own variables:

- ``WebSettings`` and ``WorkerSettings``: production's ``web`` and ``worker``. Their Slack
  credentials have no default and the demo's public ones are refused, so a process started
  without them does not quietly trust requests signed with a secret printed in this file.
- ``ReleaseSettings``: the ``release`` step (``DATABASE_URL`` only).
- ``AttachSettings``: ``agent-bridge attach`` (``DATABASE_URL``, ``REDIS_URL``,
  ``SIGNAL_CHANNEL``).
- ``DemoSettings``: the demo, which embeds everything else (SQLite, the in-process bus, the
  local sandbox and its public credentials) and builds its own ``WebConfig`` and
  ``WorkerConfig`` from it.

``WebConfig`` and ``WorkerConfig`` are the shapes the composition root (``bot.processes``)
takes; they read nothing and check nothing beyond types, so the demo and the tests can
build them directly. Names are docs/architecture.md's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, ValidationError, ValidationInfo, field_validator
from pydantic_core import ErrorDetails, PydanticCustomError
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from agent_bridge.errors import ConfigurationError
from agent_bridge.models import DEFAULT_AGENT

DEMO_SIGNING_SECRET = "sandbox-signing-secret"
"""Signing secret shared by the demo's bot and its local Slack sandbox (never a real one)."""
DEMO_BOT_TOKEN = "xoxb-sandbox-token"
"""Bot token the sandbox accepts in the demo (never a real one)."""
DEMO_APP_TOKEN = "xapp-sandbox-token"
"""App-level token the sandbox accepts in the demo's Socket Mode (never a real one)."""
PUBLIC_VALUES = frozenset({DEMO_SIGNING_SECRET, DEMO_BOT_TOKEN, DEMO_APP_TOKEN})
"""Values anyone can read here; production's web and worker refuse them."""
DEMO_TOOLS = "agent_bridge.demo_tools:make_tools"
"""The demo's ``AGENT``, and the default one."""
SLACK_WEB_API_URL = "https://slack.com/api/"
DEFAULT_ASSISTANT_ID = "agent"
"""``ASSISTANT_ID``'s default: the demo agent's graph name in the repository's
``langgraph.json``."""
SECONDS_MAX = 3600.0
"""The longest a worker's timing setting may be, seconds: an infinite lease would leave a
dead worker's run to nobody, an infinite poll interval would never sweep for a lost
signal."""
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
"""Where ``SLACK_API_URL`` may be plain ``http``: this machine (the sandbox)."""

WHAT_TO_SET = {
    "slack_signing_secret": "the app's signing secret, from api.slack.com: Basic Information",
    "slack_bot_token": "the app's bot token, xoxb-..., from api.slack.com: OAuth & Permissions,"
    " or instead SLACK_CLIENT_ID (and, for web, SLACK_CLIENT_SECRET) to install it in many"
    " workspaces",
    # no user:password@ here: every message is scrubbed of URL passwords, and the hint
    # read "postgresql://user:[secret]@host:5432/db"
    "database_url": "postgresql://USER@HOST:5432/DB, with USER:PASSWORD if it needs one,"
    " or sqlite:///PATH",
}
"""What a required variable should hold, for the message when it is missing."""

READ_ENVIRONMENT = SettingsConfigDict(env_file=None, extra="ignore")


REDIS_SCHEMES = ("redis", "rediss", "unix")
"""What redis-py's ``from_url`` accepts."""


class ProcessConfig(BaseModel):
    """What both the ``web`` and the ``worker`` processes are wired with.

    Slack credentials come in one of two modes: one bot token (``SLACK_BOT_TOKEN``, the
    default: one workspace) or OAuth (``SLACK_CLIENT_ID``: the app installed in many
    workspaces, each one's bot token kept in the database by ``/slack/install``).
    """

    slack_client_id: str | None = None
    """The app's Client ID: set, the app is installed with OAuth (many workspaces)."""
    slack_bot_token: str | None = Field(default=None, repr=False, validate_default=True)
    """One workspace's bot token; unset in OAuth mode."""
    slack_api_url: str = SLACK_WEB_API_URL
    """Web API base URL; the local sandbox's in tests and the demo."""
    database_url: str = Field(repr=False)
    """``postgresql://...`` or ``sqlite:///path``; may hold a password, so never shown."""
    redis_url: str | None = Field(default=None, repr=False)
    """Unset: no signals between processes (the worker finds decisions by its sweep)."""
    signal_channel: str | None = None
    """The Redis pub/sub channel of this deployment's signals; unset: one named after
    ``DATABASE_URL``'s host, port and database (``agent_bridge.redis_bus.signal_channel``),
    so deployments sharing a Redis server do not wake each other's workers."""

    @property
    def oauth(self) -> bool:
        """Whether tokens come from the stored installations (OAuth), not ``SLACK_BOT_TOKEN``."""
        return self.slack_client_id is not None

    @field_validator("slack_api_url")
    @classmethod
    def _sent_tokens_over_tls(cls, value: str) -> str:
        """Every Web API call carries a bot token: ``https``, or ``http`` to this machine
        only (``LOOPBACK_HOSTS``: the sandbox)."""
        parts = urlsplit(value.strip())
        if parts.scheme == "https" and parts.hostname:
            return value
        if parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS:
            return value
        raise ValueError(
            "must be an https:// URL (every call carries the bot token), or an http:// one "
            "on this machine (localhost, 127.0.0.1, ::1: the sandbox)"
        )

    @field_validator("slack_bot_token")
    @classmethod
    def _one_token_mode(cls, value: str | None, info: ValidationInfo) -> str | None:
        """Exactly one mode: a bot token, or OAuth's client ID (the message names the
        variables, never a value)."""
        oauth = info.data.get("slack_client_id") is not None
        if value is None and not oauth:
            raise PydanticCustomError(
                "slack_mode",
                "SLACK_BOT_TOKEN is not set ({what})",
                {"what": WHAT_TO_SET["slack_bot_token"]},
            )
        if value is not None and oauth:
            raise PydanticCustomError(
                "slack_mode",
                "SLACK_BOT_TOKEN and SLACK_CLIENT_ID are both set: set the bot token for one"
                " workspace, or the client ID (and secret) for OAuth, not both",
            )
        return value

    @field_validator("redis_url")
    @classmethod
    def _a_redis_url(cls, value: str | None) -> str | None:
        """Refuse a ``REDIS_URL`` redis-py cannot read, naming it (never its value)."""
        if value is None:
            return None
        try:
            parts = urlsplit(value)
            _ = parts.port  # a port that is not a number raises here
        except ValueError:
            parts = None
        if parts is None or parts.scheme not in REDIS_SCHEMES:
            raise PydanticCustomError("redis_url", "is not a redis://host:port/db URL")
        return value


class WebConfig(ProcessConfig):
    """What the ``web`` process is wired with (``bot.processes.start_web``)."""

    slack_signing_secret: str = Field(repr=False)
    """Every request from Slack is verified with it."""
    slack_client_secret: str | None = Field(default=None, repr=False, validate_default=True)
    """The app's Client Secret (OAuth mode: ``oauth.v2.access`` is called with it)."""
    slack_redirect_uri: str | None = None
    """The app's Redirect URL, ``https://HOST/slack/oauth_redirect`` (OAuth mode);
    unset: the one the app registers."""

    @field_validator("slack_client_secret")
    @classmethod
    def _oauth_needs_secret(cls, value: str | None, info: ValidationInfo) -> str | None:
        """OAuth's client ID and secret come together."""
        if (info.data.get("slack_client_id") is None) != (value is None):
            raise PydanticCustomError(
                "slack_mode", "SLACK_CLIENT_ID and SLACK_CLIENT_SECRET go together: set both"
            )
        return value

    channel_agents: dict[str, str] = Field(default_factory=dict)
    """Channel ID -> agent name (JSON, e.g. ``{"C0DBA": "sql"}``); runs started in other
    channels go to the ``default`` agent."""
    port: int = 3000
    host: str = "0.0.0.0"
    slack_app_token: str | None = Field(default=None, repr=False)
    """An app-level token (``xapp-…``): Slack's deliveries come over Socket Mode
    (``bot.socket_mode``) and ``POST /slack/events`` is not served; unset: HTTP."""

    @field_validator("slack_app_token")
    @classmethod
    def _an_app_token(cls, value: str | None) -> str | None:
        """Refuse a token that is not app-level (a bot token pasted by mistake)."""
        if value is not None and not value.strip().startswith("xapp-"):
            raise PydanticCustomError("app_token", "is not an app-level token (xapp-...)")
        return value


class WorkerConfig(ProcessConfig):
    """What a ``worker`` is wired with (``bot.processes.build_worker``); an ``AGENT``
    callable receives it."""

    model: str = "scripted"
    """``scripted`` (offline) or ``provider:model`` for ``init_chat_model``."""
    agent: str = DEMO_TOOLS
    """``module:attribute``: a list of tools, a compiled LangGraph graph, or a callable
    taking this ``WorkerConfig`` (or nothing) and returning either (``agent_bridge.agent``)."""
    system_prompt: str | None = Field(default=None, min_length=1)
    """The system prompt of an agent built from a list of tools (or the policy's
    ``system_prompt``, not both); refused with a compiled graph, which has its own."""
    agent_name: str = DEFAULT_AGENT
    """The name of the agent it runs; it picks up only runs for that agent."""
    policy: Path | None = None
    """YAML approval policy; unset: the demo policy shipped with the package."""
    approvals_channel: str | None = None
    """Channel ID for approval messages; unset: each run's own Slack thread."""
    workspace_dir: Path = Path(".demo/workspace")
    """Where the demo tools write files and keep their SQLite database."""
    poll_interval_s: float = Field(default=5.0, gt=0, le=SECONDS_MAX)
    """How often the worker sweeps the database when no signal arrives, seconds."""
    metrics_port: int | None = None
    """Port of the worker's own ``/metrics`` (prometheus-client); unset: not served."""
    lease_s: float = Field(default=3.0, gt=0, le=SECONDS_MAX)
    """How long a worker's claim on a run lasts without a renewal, seconds; renewed every
    third of it. A dead worker's run is continued about this long after its last
    renewal; a worker that cannot renew stops driving the run before it ends."""
    max_concurrent_runs: int = Field(default=10, ge=1)
    """Runs one worker drives at once; more signalled runs wait, unclaimed, for room or
    for another worker. A slow tool keeps its run's room until it ends: raise this (and
    run more workers) for agents whose tools take minutes (``agent_bridge.worker``)."""
    step_timeout_s: float | None = Field(default=None, gt=0)
    """Longest a step of a graph the worker runs may take (a model turn, or a turn's tool
    calls; a node running a whole sub-agent is one step), seconds: LangGraph's
    ``step_timeout``, whose ``TimeoutError`` cancels the step's async tools and fails the
    run, its approved calls' cards saying they may have run. So an async tool that never
    returns frees its run's room (``max_concurrent_runs``) instead of holding it for good.
    What cannot be cancelled keeps what it holds: a sync tool's thread (of the event
    loop's default executor) runs on, and an async tool that catches the cancellation
    keeps its room. Unset: no limit (LangGraph's default). Not with ``agent_url``: the
    Agent Server runs that graph."""
    stop_grace_s: float = Field(default=20.0, gt=0, le=SECONDS_MAX)
    """How long a worker stopped by SIGTERM lets the runs it is driving finish, seconds;
    a run still driven then is given back to the queue (``agent_bridge.worker``)."""
    agent_url: str | None = Field(default=None, repr=False)
    """Base URL of a LangGraph Agent Server (``langgraph dev``, self-hosted or LangGraph
    Platform) serving the agent; set, runs are created and resumed there through
    ``langgraph-sdk`` (``agent_bridge.remote_agent``), the server keeps the checkpoints,
    and ``AGENT`` only gives the tools' argument schemas (edit forms). Unset: the worker
    builds the agent itself."""
    assistant_id: str = DEFAULT_ASSISTANT_ID
    """The assistant (or graph name in the server's ``langgraph.json``) runs are created
    with (``AGENT_URL`` only)."""
    langgraph_api_key: str | None = Field(default=None, repr=False)
    """The Agent Server's API key (LangGraph Platform's ``x-api-key``); a secret: never
    shown in logs or error messages."""
    checkpoint_retention_days: float = Field(default=30.0, ge=0)
    """How long the checkpoints of a finished (done or failed) run of this worker's agent
    (``AGENT_NAME``) are kept, days; then they are deleted (``agent_bridge.pruning``; its
    audit trail stays). 0: kept forever. Not with ``agent_url``: a deployed agent's
    checkpoints are its Agent Server's, kept as that server's own settings say."""
    database_prepared_statements: bool = False
    """PostgreSQL: prepare the checkpointer's statements on the server, as LangGraph's
    documentation configures its saver (``agent_bridge.postgres_db``): about half
    PostgreSQL's CPU per checkpoint read. Only on a direct connection or a pooler that
    tracks prepared statements (PgBouncer 1.21+ with ``max_prepared_statements``): behind
    PgBouncer 1.18 in transaction mode, checkpoint writes failed, hung and could bind to
    another client's statement, so it is off unless asked for."""


def refuse_public(value: str | None) -> str | None:
    """Return ``value`` without surrounding whitespace if it can be a production
    credential (set, and not the demo's); ``None`` (unset, where that is allowed) passes.
    No credential has surrounding whitespace: a secret written to a file with ``echo``
    (or mounted from a Kubernetes secret) ends in a newline, which would make every
    request's signature fail."""
    if value is None:
        return None
    if not value.strip():
        raise PydanticCustomError("empty", "is empty")
    if value.strip() in PUBLIC_VALUES:
        raise PydanticCustomError("public", "is the demo's public value")
    return value.strip()


def refuse_public_if_set(value: str | None) -> str | None:
    """``refuse_public`` for an optional credential: unset stays unset."""
    return None if value is None else refuse_public(value)


class WebSettings(BaseSettings, WebConfig):
    """The ``web`` process's ``WebConfig``, from the environment.

    ``SLACK_SIGNING_SECRET``, ``SLACK_BOT_TOKEN`` (or, for OAuth, ``SLACK_CLIENT_ID`` and
    ``SLACK_CLIENT_SECRET``) and ``DATABASE_URL`` are required; the demo's public
    credentials are refused (``SLACK_APP_TOKEN``'s too).
    """

    model_config = READ_ENVIRONMENT

    _credentials = field_validator(
        "slack_signing_secret", "slack_bot_token", "slack_client_secret"
    )(refuse_public)
    _optional = field_validator("slack_app_token", "slack_client_id")(refuse_public_if_set)


class WorkerSettings(BaseSettings, WorkerConfig):
    """A ``worker`` process's ``WorkerConfig``, from the environment.

    ``SLACK_BOT_TOKEN`` (or, for OAuth, ``SLACK_CLIENT_ID``: the tokens are then read
    from the database) and ``DATABASE_URL`` are required; the demo's public token is
    refused. The worker reads no ``SLACK_SIGNING_SECRET``: it only calls Slack, it never
    receives (or verifies) Slack's requests.
    """

    model_config = READ_ENVIRONMENT

    _credentials = field_validator("slack_bot_token")(refuse_public)
    _client_id = field_validator("slack_client_id")(refuse_public_if_set)


class LogSettings(BaseSettings):
    """How every process writes its log lines (read first, before the process's own
    settings, so their errors are logged the same way)."""

    model_config = READ_ENVIRONMENT

    log_format: Literal["text", "json"] = "text"
    """``json``: one JSON object per line (``agent_bridge.logs``); ``text``: plain lines."""


class ReleaseSettings(BaseSettings):
    """The ``release`` step's settings: the database it migrates (``agent-bridge audit
    export`` reads the same variable, the database it exports)."""

    model_config = READ_ENVIRONMENT

    database_url: str
    """``postgresql://...`` or ``sqlite:///path``."""


class AttachSettings(BaseSettings):
    """``agent-bridge attach``'s settings: the Agent Server the thread is on (asked
    whether it exists), the deployment's database (where the run is recorded) and,
    optionally, its Redis (a worker is signalled at once; without it, the next sweep
    takes the run)."""

    model_config = READ_ENVIRONMENT

    agent_url: str = Field(repr=False)
    """The LangGraph Agent Server of the thread (the workers' ``AGENT_URL``)."""
    langgraph_api_key: str | None = Field(default=None, repr=False)
    """Its API key, if it needs one (a secret)."""
    database_url: str = Field(repr=False)
    """``postgresql://...`` or ``sqlite:///path``."""
    redis_url: str | None = Field(default=None, repr=False)
    """The deployment's Redis, to wake a worker at once."""
    signal_channel: str | None = None
    """The deployment's pub/sub channel, as its workers' ``SIGNAL_CHANNEL``."""


class DemoSettings(BaseSettings):
    """The demo's settings: only what a developer may change, the agent (local, or
    deployed on a LangGraph Agent Server: ``AGENT_URL``).

    Everything else is embedded and read from nowhere: a fresh SQLite database and
    workspace in the demo's data folder, the in-process bus, the local sandbox and its
    public credentials (``DEMO_SIGNING_SECRET``, ``DEMO_BOT_TOKEN``). It reads no
    ``SLACK_*``, ``DATABASE_URL`` or ``REDIS_URL``, so it works with none set and never
    handles a real credential.
    """

    model_config = READ_ENVIRONMENT

    model: str = "scripted"
    """``scripted`` (offline) or ``provider:model`` for ``init_chat_model``."""
    agent: str = DEMO_TOOLS
    """``module:attribute``: a list of tools, a compiled graph, or a callable returning
    either (see ``WorkerConfig.agent``)."""
    system_prompt: str | None = Field(default=None, min_length=1)
    """The system prompt of a tools agent (see ``WorkerConfig.system_prompt``)."""
    policy: Path | None = None
    """YAML approval policy; unset: the demo policy."""
    agent_url: str | None = Field(default=None, repr=False)
    """A LangGraph Agent Server serving the agent (e.g. ``langgraph dev`` of this
    repository's ``langgraph.json``); unset: the demo builds the agent itself."""
    assistant_id: str = DEFAULT_ASSISTANT_ID
    """The assistant or graph name on ``AGENT_URL``."""
    langgraph_api_key: str | None = Field(default=None, repr=False)
    """``AGENT_URL``'s API key, if it needs one (a secret)."""

    def web_config(self, *, api_url: str, data_dir: Path, socket_mode: bool = False) -> WebConfig:
        """The demo's web part, on the sandbox at ``api_url`` and the data in ``data_dir``
        (``socket_mode``: over Socket Mode, with the demo's public app-level token)."""
        return WebConfig(
            slack_signing_secret=DEMO_SIGNING_SECRET,
            slack_bot_token=DEMO_BOT_TOKEN,
            slack_app_token=DEMO_APP_TOKEN if socket_mode else None,
            slack_api_url=api_url,
            database_url=demo_database_url(data_dir),
        )

    def worker_config(self, *, api_url: str, data_dir: Path) -> WorkerConfig:
        """The demo's worker, on the sandbox at ``api_url`` and the data in ``data_dir``."""
        return WorkerConfig(
            slack_bot_token=DEMO_BOT_TOKEN,
            slack_api_url=api_url,
            database_url=demo_database_url(data_dir),
            model=self.model,
            agent=self.agent,
            system_prompt=self.system_prompt,
            policy=self.policy,
            workspace_dir=data_dir / "workspace",
            poll_interval_s=1.0,
            agent_url=self.agent_url,
            assistant_id=self.assistant_id,
            langgraph_api_key=self.langgraph_api_key,
        )


def demo_database_url(data_dir: Path) -> str:
    """The demo's SQLite database in ``data_dir``."""
    return f"sqlite:///{data_dir / 'agent.db'}"


S = TypeVar("S", bound=BaseSettings)


def read_settings(settings_type: type[S]) -> S:
    """Build ``settings_type`` from the environment.

    Raises:
        ConfigurationError: If a variable is missing or wrong; the message names each such
            variable and never shows a value.
    """
    try:
        return settings_type()
    except ValidationError as exc:
        # ``from None``: the validation error's own text shows the values, secrets included.
        raise ConfigurationError("; ".join(map(describe_error, exc.errors()))) from None
    except SettingsError as exc:  # a JSON variable that is not JSON
        raise ConfigurationError(str(exc)) from None


def describe_error(error: ErrorDetails) -> str:
    """One variable's problem in words, without its value."""
    field = str(error["loc"][0]) if error["loc"] else ""
    variable = field.upper()
    what = WHAT_TO_SET.get(field)
    if error["type"] == "missing":
        return f"{variable} is not set" + (f" ({what})" if what else "")
    if error["type"] == "empty":
        return f"{variable} is empty" + (f" ({what})" if what else "")
    if error["type"] == "slack_mode":
        return error["msg"]
    if error["type"] == "public":
        kinds = {
            "slack_signing_secret": "signing secret",
            "slack_client_secret": "client secret",
            "slack_app_token": "app-level token",
        }
        kind = kinds.get(field, "bot token")
        return f"{variable} is the demo's public value: set your app's {kind}"
    return f"{variable}: {error['msg']}"

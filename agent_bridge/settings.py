"""Process configuration, read once from the environment with pydantic-settings.

Every process builds one ``Settings`` in its entry point and passes parts of it down;
nothing else reads the environment. Names are DESIGN.md's.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from agent_bridge.models import DEFAULT_AGENT

DEMO_SIGNING_SECRET = "sandbox-signing-secret"
"""Signing secret shared by the demo's bot and its local Slack sandbox (never a real one)."""
DEMO_BOT_TOKEN = "xoxb-sandbox-token"
"""Bot token the sandbox accepts in the demo (never a real one)."""


class Settings(BaseSettings):
    """Everything a process needs to know, from environment variables.

    Defaults are the embedded demo's: SQLite, in-process bus, the scripted model and
    the demo agent. Production sets ``DATABASE_URL=postgresql://...``, ``REDIS_URL`` and
    real Slack credentials.
    """

    model_config = SettingsConfigDict(env_file=None, extra="ignore")

    slack_bot_token: str = DEMO_BOT_TOKEN
    slack_signing_secret: str = DEMO_SIGNING_SECRET
    slack_app_token: str | None = None
    """App-level token for Socket Mode (``xapp-...``); unused over HTTP."""
    slack_api_url: str = "https://slack.com/api/"
    """Web API base URL; the local sandbox's in tests and the demo."""
    approvals_channel: str | None = None
    """Channel ID for approval messages; unset: each run's own Slack thread."""
    database_url: str = "sqlite:///.demo/agent.db"
    """``postgresql://...`` or ``sqlite:///path``."""
    redis_url: str | None = None
    """Unset: the in-process bus (only when web and worker share a process)."""
    model: str = "scripted"
    """``scripted`` (offline) or ``provider:model`` for ``init_chat_model``."""
    agent: str = "agent_bridge.demo_tools:make_tools"
    """``module:attribute``: a list of tools, or a callable ``(settings) -> tools``."""
    agent_name: str = DEFAULT_AGENT
    """Worker: the name of the agent it runs; it picks up only runs for that agent."""
    channel_agents: dict[str, str] = Field(default_factory=dict)
    """Web: channel ID -> agent name (JSON, e.g. ``{"C0DBA": "sql"}``); runs started
    in other channels go to the ``default`` agent."""
    policy: Path | None = None
    """YAML approval policy; unset: the demo policy shipped with the package."""
    workspace_dir: Path = Path(".demo/workspace")
    """Where the demo tools write files and keep their SQLite database."""
    port: int = 3000
    host: str = "0.0.0.0"
    poll_interval_s: float = Field(default=5.0, gt=0)
    """How often the worker sweeps the database when no signal arrives, seconds."""
    lease_s: float = Field(default=60.0, gt=0)
    """How long a worker's claim on a run lasts without a heartbeat, seconds."""

"""Real worker processes for the crash tests: start ``tests.crash_worker``, see it
killed, restart it, stop it."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from agent_bridge.settings import WebConfig, WorkerConfig
from tests.harness import Harness

REPO = Path(__file__).resolve().parent.parent
LEASE_S = 1.5
EXIT_TIMEOUT_S = 30.0
LEDGER_AGENT = {
    "AGENT": "tests.ledger_agent:make_tools",
    "POLICY": "tests/fixtures/ledger_policy.yml",
}
"""The agent whose ``append_line`` leaves a line per real execution."""
TWO_TURNS = {
    "tool_calls": [{"name": "append_line", "args": {"line": "first"}}],
    "then": [[{"name": "append_line", "args": {"line": "second"}}]],
}
"""A task whose next turn, once the first call's result is back, calls the tool again."""


def service_env(settings: WorkerConfig | WebConfig, channel: str) -> dict[str, str]:
    """This process's environment with what a product process started by a test needs
    of ``settings`` to reach the harness: its database, Redis and signal ``channel``, and
    the sandbox's Slack API and bot token."""
    return {
        **os.environ,
        "DATABASE_URL": settings.database_url,
        "REDIS_URL": settings.redis_url or "",
        "SIGNAL_CHANNEL": channel,
        "SLACK_API_URL": settings.slack_api_url,
        "SLACK_BOT_TOKEN": settings.slack_bot_token or "",
    }


async def start_worker(
    harness: Harness,
    log: Path,
    crash_at: str | None = None,
    agent: dict[str, str] | None = None,
    *,
    options: tuple[str, ...] = (),
    env_changes: dict[str, str | None] | None = None,
) -> asyncio.subprocess.Process:
    """Start ``tests.crash_worker`` as a real process with the harness's configuration
    (``agent``: ``AGENT`` and ``POLICY`` of another agent than the demo's; ``options``:
    more arguments; ``env_changes``: variables changed, or removed when ``None``)."""
    settings = harness.settings
    env = {
        **service_env(settings, harness.channel),
        "WORKSPACE_DIR": str(settings.workspace_dir),
        "POLICY": str(settings.policy or ""),
        "POLL_INTERVAL_S": "0.3",
        "LEASE_S": str(LEASE_S),
        **(agent or {}),
    }
    for name, value in (env_changes or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    args = [
        *(["--crash-at", crash_at] if crash_at else []),
        *("--bus-channel", harness.channel),
        *options,
    ]
    with log.open("ab") as out:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.crash_worker",
            *args,
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=out,
        )


async def start_cli_worker(
    harness: Harness, log: Path, env_changes: dict[str, str]
) -> asyncio.subprocess.Process:
    """Start ``python -m bot.cli worker`` (what the Procfile runs) as a real process on the
    harness's database, Redis channel, sandbox and workspace, with ``env_changes`` on top;
    its output appended to ``log``."""
    settings = harness.settings
    env = {
        **service_env(settings, harness.channel),
        "WORKSPACE_DIR": str(settings.workspace_dir),
        "POLICY": str(settings.policy or ""),
        "POLL_INTERVAL_S": "0.3",
        **env_changes,
    }
    with log.open("ab") as out:
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot.cli", "worker", cwd=REPO, env=env, stdout=out, stderr=out
        )


async def killed(process: asyncio.subprocess.Process) -> None:
    """Wait until the crashing worker has SIGKILLed itself."""
    code = await asyncio.wait_for(process.wait(), EXIT_TIMEOUT_S)
    assert code == -signal.SIGKILL, f"worker exited {code}, not by SIGKILL"


async def restarted(
    process: asyncio.subprocess.Process,
    harness: Harness,
    log: Path,
    agent: dict[str, str] | None = None,
) -> asyncio.subprocess.Process:
    """Wait for the crashing worker's SIGKILL, then start a plain one in its place."""
    await killed(process)
    return await start_worker(harness, log, agent=agent)


async def stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.wait(), EXIT_TIMEOUT_S)

"""A real ``agent-bridge web`` process on the harness's database, Redis and sandbox."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from pathlib import Path

import aiohttp

from bot.app import EVENTS_PATH, HEALTH_PATH
from tests.harness import Harness

REPO = Path(__file__).resolve().parent.parent
EXIT_TIMEOUT_S = 40.0


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def start_web_process(harness: Harness, log: Path) -> tuple[asyncio.subprocess.Process, str]:
    """Start ``python -m bot.cli web`` with the harness's settings, wait until it
    answers ``/healthz``, and point the sandbox's deliveries at it.

    Returns:
        The process and its base URL.
    """
    settings = harness.web_settings
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": settings.database_url,
        "REDIS_URL": settings.redis_url or "",
        "SIGNAL_CHANNEL": harness.channel,
        "SLACK_API_URL": settings.slack_api_url,
        "SLACK_BOT_TOKEN": settings.slack_bot_token or "",
        "SLACK_SIGNING_SECRET": settings.slack_signing_secret,
        "HOST": "127.0.0.1",
        "PORT": str(port),
    }
    with log.open("ab") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot.cli", "web", cwd=REPO, env=env, stdout=out, stderr=out
        )
    url = f"http://127.0.0.1:{port}"

    async def healthy() -> bool:
        assert process.returncode is None, log.read_text()
        return await answers(url)

    await harness.wait_for(healthy)
    harness.sandbox.request_url = url + EVENTS_PATH
    return process, url


async def answers(url: str) -> bool:
    """Whether a web process at ``url`` takes a new connection and answers ``/healthz``."""
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(url + HEALTH_PATH, timeout=aiohttp.ClientTimeout(total=2)) as response,
        ):
            return response.status == 200
    except (aiohttp.ClientError, TimeoutError):
        return False

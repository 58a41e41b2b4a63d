"""A real ``agent-bridge web`` process on the harness's database, Redis and sandbox."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import aiohttp

from bot.app import EVENTS_PATH, HEALTH_PATH
from tests.harness import Harness
from tests.ports import PORT_ATTEMPTS, free_port, port_taken
from tests.worker_processes import REPO, service_env

EXIT_TIMEOUT_S = 40.0


async def start_web_process(harness: Harness, log: Path) -> tuple[asyncio.subprocess.Process, str]:
    """Start ``python -m bot.cli web`` with the harness's settings on a free port (another
    if the first was taken before the process bound it: ``tests.ports``), wait until it
    answers ``/healthz``, and point the sandbox's deliveries at it.

    Returns:
        The process and its base URL.

    Raises:
        AssertionError: If the process exited for anything but a taken port, or found
            ``PORT_ATTEMPTS`` ports taken (its log is in the message).
    """
    for _ in range(PORT_ATTEMPTS):
        started = await _start_on(harness, free_port(), log)
        if started is not None:
            harness.sandbox.request_url = started[1] + EVENTS_PATH
            return started
    raise AssertionError(f"the web process found each port taken:\n{log.read_text()}")


async def _start_on(
    harness: Harness, port: int, log: Path
) -> tuple[asyncio.subprocess.Process, str] | None:
    """``start_web_process`` on ``port``; ``None`` if the process exited because the port
    was taken."""
    settings = harness.web_settings
    since = log.stat().st_size if log.exists() else 0
    env = {
        **service_env(settings, harness.channel),
        "SLACK_SIGNING_SECRET": settings.slack_signing_secret,
        "HOST": "127.0.0.1",
        "PORT": str(port),
    }
    with log.open("ab") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot.cli", "web", cwd=REPO, env=env, stdout=out, stderr=out
        )
    url = f"http://127.0.0.1:{port}"

    async def up_or_exited() -> bool:
        return process.returncode is not None or await answers(url)

    await harness.wait_for(up_or_exited)
    if process.returncode is None:
        return process, url
    assert port_taken(log, since), log.read_text()
    return None


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

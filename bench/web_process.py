"""The web app as its own process for the benchmark, as production runs it.

``web_process(harness)`` starts ``python -m bot.cli web`` (``bot.processes.run_web``)
on a free port against the harness's database, Redis signal channel and sandbox, points
the sandbox's request URL at it, and stops it on exit; ``bare_bolt_process`` does the
same for the baseline: a bare Bolt app whose one listener only acks, or does an
Approve's I/O bare (``bench.bare_bolt``), so both are served by a process of their own
and neither shares an event loop with the sandbox (Slack's side) or the benchmark.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from bench.bare_bolt import listener_marks
from bench.stats import until
from bot.app import EVENTS_PATH
from tests.harness import Harness
from tests.ports import free_port
from tests.worker_processes import REPO, stop


async def _listening(port: int, process: asyncio.subprocess.Process, log: Path) -> bool:
    if process.returncode is not None:
        raise RuntimeError(f"a web process exited {process.returncode}; see {log}")
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return False
    writer.close()
    await writer.wait_closed()
    return True


@dataclass
class Served:
    """A process serving HTTP on 127.0.0.1:``port``."""

    process: asyncio.subprocess.Process
    port: int


@contextlib.asynccontextmanager
async def _served(
    harness: Harness, module: str, env: dict[str, str], args: tuple[str, ...] = ()
) -> AsyncIterator[Served]:
    """Run ``python -m module`` with ``env`` on a free port (``PORT``) until the block
    ends, the sandbox's request URL pointing at it meanwhile."""
    log_dir = Path(tempfile.mkdtemp(prefix="bench-web-"))
    log = log_dir / "web.log"
    port = free_port()
    with log.open("ab") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            module,
            *args,
            cwd=REPO,
            env={**os.environ, **env, "HOST": "127.0.0.1", "PORT": str(port)},
            stdout=out,
            stderr=out,
        )
    before = harness.sandbox.request_url
    try:
        await until(lambda: _listening(port, process, log), poll_s=0.05)
        harness.sandbox.request_url = f"http://127.0.0.1:{port}{EVENTS_PATH}"
        yield Served(process, port)
    except BaseException as exc:
        exc.add_note(f"the web process's log: {log}")
        raise
    finally:
        harness.sandbox.request_url = before
        await stop(process)
    shutil.rmtree(log_dir, ignore_errors=True)


@contextlib.asynccontextmanager
async def web_process(harness: Harness) -> AsyncIterator[Served]:
    """The product's ``web`` process on the harness's database, Redis and sandbox, with
    production's settings; the sandbox sends it every request while the block runs. It
    serves its ``/metrics`` on the same port."""
    web = harness.web_settings
    env = {
        "DATABASE_URL": web.database_url,
        "REDIS_URL": web.redis_url or "",
        "SIGNAL_CHANNEL": harness.channel,
        "SLACK_API_URL": harness.sandbox.api_url,
        "SLACK_BOT_TOKEN": web.slack_bot_token or "",
        "SLACK_SIGNING_SECRET": web.slack_signing_secret,
    }
    async with _served(harness, "bot.cli", env, ("web",)) as served:
        yield served


@dataclass
class BareBolt:
    """A running bare Bolt app and the file its listener notes each click in."""

    process: asyncio.subprocess.Process
    marks: Path

    def reached(self) -> dict[str, float]:
        """``clicked message ts -> when its click reached the listener (wall clock, s)``
        since the last ``forget``."""
        return listener_marks(self.marks)

    def forget(self) -> None:
        """Drop the clicks noted so far."""
        self.marks.unlink(missing_ok=True)


@contextlib.asynccontextmanager
async def bare_bolt_process(
    harness: Harness, *, ack_first: bool = False, io: tuple[int, int] | None = None
) -> AsyncIterator[BareBolt]:
    """The baseline's bare Bolt app (``bench.bare_bolt``), served as the product is; the
    sandbox sends it every request while the block runs, and its listener notes when
    each click reached it (``BARE_MARKS``, in a directory removed on exit). With
    ``ack_first`` it acks each click as the product does, before its listener starts
    (``BARE_ACK=first``); with ``io``, ``(Slack calls, round trips)``, it acks first and
    does that I/O after each click, on the harness's database (``BARE_IO``)."""
    web = harness.web_settings
    marks = Path(tempfile.mkdtemp(prefix="bench-bare-")) / "marks.txt"
    env = {
        "SLACK_API_URL": harness.sandbox.api_url,
        "SLACK_BOT_TOKEN": web.slack_bot_token or "",
        "SLACK_SIGNING_SECRET": web.slack_signing_secret,
        "BARE_MARKS": str(marks),
        "BARE_ACK": "first" if ack_first else "listener",
    }
    if io is not None:
        env["BARE_IO"] = f"{io[0]} {io[1]}"
        env["DATABASE_URL"] = web.database_url
    try:
        async with _served(harness, "bench.bare_bolt", env) as served:
            yield BareBolt(served.process, marks)
    finally:
        shutil.rmtree(marks.parent, ignore_errors=True)

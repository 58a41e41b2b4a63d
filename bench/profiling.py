"""Sampling a worker process with py-spy while it applies decisions (``--profile DIR``).

py-spy (the ``bench`` extra) attaches to a running process from outside, so the worker
runs unchanged; the result is a speedscope file (open it at https://www.speedscope.app)
of the samples taken while a thread held the GIL (``--gil``).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from bench.errors import BenchError

SAMPLES_PER_S = 250
STOP_TIMEOUT_S = 30.0


def py_spy() -> str:
    """The py-spy executable (next to this Python, or on ``PATH``).

    Raises:
        BenchError: If it is not installed (``pip install -e ".[bench]"``).
    """
    beside = Path(sys.executable).with_name("py-spy")
    found = str(beside) if beside.exists() else shutil.which("py-spy")
    if not found:
        raise BenchError('--profile needs py-spy: .venv/bin/pip install -e ".[test,bench]"')
    return found


@contextlib.asynccontextmanager
async def sampled(pids: list[int], out_dir: Path | None, name: str) -> AsyncIterator[None]:
    """Sample each of ``pids`` while the block runs, into ``out_dir/<name>-<pid>.json``
    (nothing when ``out_dir`` is ``None``). py-spy attaches in the background: the block's
    first milliseconds may go unsampled.

    Raises:
        BenchError: If py-spy is missing or failed.
    """
    if out_dir is None:
        yield
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    samplers = []
    for pid in pids:
        sampler = await asyncio.create_subprocess_exec(
            py_spy(),
            "record",
            "--pid",
            str(pid),
            "--rate",
            str(SAMPLES_PER_S),
            "--nonblocking",  # never pauses the worker to sample it
            # Only while a thread holds the GIL: its CPU, not its waits to take the GIL
            # back after a C call (psycopg's libpq sends read 15x the SELECT 1s' without).
            "--gil",
            "--format",
            "speedscope",
            "--output",
            str(out_dir / f"{name}-{pid}.json"),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        samplers.append(sampler)
    try:
        yield
    finally:
        for sampler in samplers:
            if sampler.returncode is None:
                sampler.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
            _, errors = await asyncio.wait_for(sampler.communicate(), STOP_TIMEOUT_S)
            if sampler.returncode not in (0, -signal.SIGINT):
                raise BenchError(f"py-spy failed ({sampler.returncode}): {errors.decode()[-500:]}")

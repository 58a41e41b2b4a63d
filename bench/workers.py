"""Real worker processes for the benchmark, with production's timings.

``tests.crash_worker`` without a crash point is the ``worker`` process as production
builds it (``bot.processes.build_worker``), started by ``tests.worker_processes``; here
it runs the benchmark agent with the settings' default sweep period and lease (the
tests shorten both).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from asyncio.subprocess import Process
from collections.abc import AsyncIterator
from pathlib import Path

from agent_bridge.settings import WorkerConfig
from bench.agent import AGENT, POLICY
from bench.stats import until
from tests.harness import Harness
from tests.ports import free_port
from tests.worker_processes import start_worker, stop

DEFAULTS = {
    "POLL_INTERVAL_S": str(WorkerConfig.model_fields["poll_interval_s"].default),
    "LEASE_S": str(WorkerConfig.model_fields["lease_s"].default),
}
"""Production's sweep period and lease, seconds."""


class Workers:
    """Worker processes of one harness, started one by one, all stopped on exit."""

    def __init__(self, harness: Harness, log_dir: Path) -> None:
        self.harness = harness
        self.log_dir = log_dir
        self.processes: list[Process] = []
        self.metrics_ports: list[int] = []
        """Each worker's ``/metrics`` port (``METRICS_PORT``), in ``processes`` order."""

    @property
    def log(self) -> Path:
        """Where every worker's output goes."""
        return self.log_dir / "workers.log"

    async def add(self) -> Process:
        """Start one more worker process; return once it has finished its first sweep."""
        ready = self.log_dir / f"worker-{len(self.processes)}.ready"
        port = free_port()
        process = await start_worker(
            self.harness,
            self.log,
            agent={"AGENT": AGENT, "POLICY": str(POLICY)},
            options=("--ready-file", str(ready)),
            env_changes={**DEFAULTS, "METRICS_PORT": str(port)},
        )
        self.processes.append(process)
        self.metrics_ports.append(port)

        async def swept() -> bool:
            if process.returncode is not None:
                raise RuntimeError(f"a worker exited {process.returncode}; see {self.log}")
            return ready.exists()

        await until(swept, poll_s=0.05)
        return process

    async def swept_again(self) -> None:
        """Return once every worker has finished a whole sweep begun after this call (the
        second after it: one may have been under way)."""
        files = [self.log_dir / f"worker-{i}.ready" for i in range(len(self.processes))]
        wanted = [int(f.read_text() or 0) + 2 for f in files]

        async def swept() -> bool:
            return all(int(f.read_text() or 0) >= n for f, n in zip(files, wanted, strict=True))

        await until(swept, poll_s=0.1)


@contextlib.asynccontextmanager
async def workers(harness: Harness, count: int = 0) -> AsyncIterator[Workers]:
    """``count`` worker processes started (more with ``add``), stopped on exit; their log
    is removed then, unless the block failed (its path is in the error's notes)."""
    started = Workers(harness, Path(tempfile.mkdtemp(prefix="bench-workers-")))
    try:
        for _ in range(count):
            await started.add()
        yield started
    except BaseException as exc:
        exc.add_note(f"the workers' log: {started.log}")
        raise
    finally:
        for process in started.processes:
            await stop(process)
    shutil.rmtree(started.log_dir, ignore_errors=True)

"""The soak's chaos: a Redis of its own to flush and stop, and worker processes to kill
and replace, measuring how long the runs of a killed worker wait to be taken up."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import time
from pathlib import Path
from typing import Any

import redis

from tests.harness import Harness
from tests.ports import free_port
from tests.worker_processes import LEDGER_AGENT, killed, start_worker, stop

POLL_S = 0.05
WORKERS = 2


class OwnRedis:
    """A redis-server of the soak's own, so stopping it disturbs nobody else."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
        )
        client = redis.Redis.from_url(self.url)
        for _ in range(100):
            with contextlib.suppress(redis.ConnectionError):
                if client.ping():
                    return
            time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait()
            self.process = None

    def flush(self) -> None:
        with contextlib.suppress(redis.ConnectionError):
            redis.Redis.from_url(self.url).flushdb()


class Chaos:
    """Kills workers, flushes and stops Redis; measures how long killed runs wait."""

    def __init__(self, harness: Harness, own_redis: OwnRedis, log: Path, args: Any) -> None:
        self.harness = harness
        self.redis = own_redis
        self.log = log
        self.args = args
        self.workers: list[tuple[str, asyncio.subprocess.Process]] = []
        self.generation = 0
        self.killed_pids: set[int] = set()
        self.waits: list[float] = []
        self.tasks: list[asyncio.Task[None]] = []

    async def start_workers(self) -> None:
        for _ in range(WORKERS):
            self.workers.append(await self._new_worker())

    async def _new_worker(self) -> tuple[str, asyncio.subprocess.Process]:
        self.generation += 1
        owner = f"soak-worker-{self.generation}"
        process = await start_worker(
            self.harness,
            self.log,
            None,
            LEDGER_AGENT,
            options=("--owner", owner),
            env_changes={"LEASE_S": None, "POLL_INTERVAL_S": "1"},
        )
        return owner, process

    async def run(self, stop_event: asyncio.Event) -> None:
        started = time.monotonic()
        next_kill = started + self.args.kill_every_s
        next_flush = started + self.args.flush_every_s
        redis_down_at = started + self.args.redis_down_after_s
        redis_down = False
        while not stop_event.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop_event.wait(), 0.25)
            now = time.monotonic()
            if now >= next_kill:
                next_kill = now + self.args.kill_every_s
                await self._kill_one()
            if now >= next_flush:
                next_flush = now + self.args.flush_every_s
                await asyncio.to_thread(self.redis.flush)
            if not redis_down and now >= redis_down_at and redis_down_at > 0:
                redis_down = True
                await asyncio.to_thread(self.redis.stop)
                print(f"  chaos: Redis stopped for {self.args.redis_down_s:.0f} s", flush=True)
                self.tasks.append(asyncio.create_task(self._restart_redis()))

    async def _restart_redis(self) -> None:
        await asyncio.sleep(self.args.redis_down_s)  # the outage's length, not a wait for an event
        await asyncio.to_thread(self.redis.start)
        print("  chaos: Redis back", flush=True)

    async def _kill_one(self) -> None:
        index = self.generation % WORKERS
        owner, process = self.workers[index]
        held = await self.harness.store.db.fetch_all(
            "SELECT run_id FROM runs WHERE lease_owner = :owner AND state = 'running'",
            {"owner": owner},
        )
        process.kill()
        killed_at = time.monotonic()
        self.killed_pids.add(process.pid)
        await killed(process)
        self.workers[index] = await self._new_worker()
        for row in held:
            self.tasks.append(asyncio.create_task(self._measure(row["run_id"], owner, killed_at)))

    async def _measure(self, run_id: str, owner: str, killed_at: float) -> None:
        """How long the dead worker's run waited before another worker took it."""
        while True:
            row = await self.harness.store.db.fetch_one(
                "SELECT state, lease_owner FROM runs WHERE run_id = :run_id", {"run_id": run_id}
            )
            if row is None or row["state"] != "running" or row["lease_owner"] != owner:
                waited = time.monotonic() - killed_at
                self.waits.append(waited)
                if waited >= 5.0:
                    print(f"  slow take-over {run_id} of {owner}: {waited:.1f} s", flush=True)
                return
            await asyncio.sleep(POLL_S)

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        for _, process in self.workers:
            await stop(process)

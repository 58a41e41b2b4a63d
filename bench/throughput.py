"""Decisions applied per second by real worker processes, beside bare resumers.

- product: ``count`` runs paused on their cards, real worker processes
  (``bench.workers``) stopped with SIGSTOP while every decision is clicked and recorded, then
  let go (SIGCONT): decisions applied per second until every request is ``applied``,
  and the workers' CPU time per decision (``/proc/<pid>/stat``, user + system);
- baseline: the same number of ``thread_id``s resumed with bare ``Command(resume)``
  by the same number of ``bench.bare_resumer`` processes;
- floor: one, then two bare resumers doing invariant 3's steps (the checkpoint read
  before the resume, ``durability="sync"``), then the Slack calls and database round
  trips one decision made in the product (read from the worker's
  ``/metrics``, ``bench.io_counts``), bare: what that I/O costs with nothing of the
  product around it, and what a 2nd process gains when the sandbox Slack, which bare
  resumes never call, shares the 2 cores too;
- for each, the whole machine's CPU time meanwhile (``/proc/stat``): how many of its
  cores were busy, so what a 2nd process could add at most is read beside what it did;
- least: one, then two bare resumers doing invariant 3's steps and then the least I/O
  this design needs per decision (``LEAST_SLACK_CALLS``, ``LEAST_ROUND_TRIPS``): what
  the rate, CPU and 2nd-worker targets leave for everything else.

All of it in rounds (``--rate-rounds``), each measuring every rate once; a figure is the
median of the rounds, a ratio the median of the ratios taken within each round.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.bare_resumer import DecisionIo
from bench.cpu import CpuMeter, process_cpu_s
from bench.io_counts import IoCounts, io_counts
from bench.profiling import sampled
from bench.reviewers import click_all, paused_requests
from bench.stage import Stage
from bench.stats import until
from bench.workers import Workers, workers
from tests.harness import REVIEWER, Harness
from tests.worker_processes import REPO

CLICKS_AT_ONCE = 10
APPLIED_POLL_S = 0.02
"""How often the end of a product rate's window is polled for, seconds: each poll is a
``COUNT(*)`` on the product's PostgreSQL, on the cores being measured (every 5 ms it
cost 1-2 ms of PostgreSQL per decision, docs/benchmarks.md); the window comes out at most
this much too long: at most 0.5 % of 200 decisions' 4-6 s, and only against the product."""
APPLIED = "SELECT COUNT(*) AS n FROM approval_requests WHERE state = 'applied'"
UNFINISHED = "SELECT COUNT(*) AS n FROM runs WHERE state NOT IN ('done', 'failed')"
DECIDED = "SELECT COUNT(*) AS n FROM approval_requests WHERE state = 'decided'"
LEAST_SLACK_CALLS = 2
"""The Slack calls this design's worker cannot do without per applied decision of the
benchmark's runs (one gated call each): the card shows the outcome, and the run's answer
is posted (the tool's result, the progress message and the notices' crash-safety are the
product's own on top)."""
LEAST_ROUND_TRIPS = 2
"""The round trips this design's worker cannot do without per applied decision: the
run's lease claimed, and released with the decision marked applied (invariant 3,
docs/architecture.md)."""


@dataclass
class Rate:
    """How many items were done, in how long, for how much CPU time (seconds)."""

    count: int
    elapsed_s: float
    cpu_s: float
    io: IoCounts | None = None
    """Per item: the Slack calls and round trips made (the product's, 1 worker)."""
    machine_cpu_s: float = 0.0
    """CPU time of every process on the machine meanwhile (``machine_busy_s``): the
    measured processes and PostgreSQL, Redis, the sandbox Slack and this benchmark."""
    sandbox_cpu_s: float = 0.0
    """Of which this process's: the sandbox Slack, which runs here (and this benchmark's
    own waiting)."""

    @property
    def per_s(self) -> float:
        """Items per second."""
        return self.count / self.elapsed_s

    @property
    def cpu_per_item_s(self) -> float:
        """CPU seconds per item."""
        return self.cpu_s / self.count

    @property
    def machine_cpu_per_item_s(self) -> float:
        """CPU seconds of the whole machine per item."""
        return self.machine_cpu_s / self.count

    @property
    def cores_busy(self) -> float:
        """How many of the machine's cores were busy on average meanwhile."""
        return self.machine_cpu_s / self.elapsed_s


async def count_of(harness: Harness, sql: str) -> int:
    """The ``n`` of a ``COUNT(*) AS n`` query."""
    row = await harness.store.db.fetch_one(sql)
    return int(row["n"]) if row else 0


async def product_rate(
    harness: Harness, started: Workers, count: int, profile: Path | None = None
) -> Rate:
    """Pause ``count`` runs, record every decision while the ``started`` workers are
    stopped, then time them applying them (one worker is sampled with py-spy into
    ``profile``, if given: py-spy failed to attach a second time to a worker it had
    sampled). With one worker, its Slack calls and round trips per decision are read
    from its ``/metrics`` (from before it was stopped to after every run ended)."""
    workers = started.processes
    requests = await paused_requests(harness, count)
    applied_before = await count_of(harness, APPLIED)

    async def all_decided() -> bool:
        return await count_of(harness, DECIDED) >= count

    async def all_applied() -> bool:
        return await count_of(harness, APPLIED) - applied_before >= count

    async def all_ended() -> bool:  # the next measure starts with no run in flight
        return await count_of(harness, UNFINISHED) == 0

    pids = [w.pid for w in workers]
    sampling = profile if len(pids) == 1 else None  # the CPU-per-decision figure's phase
    io_before = await io_counts(started.metrics_ports[0]) if len(pids) == 1 else None
    async with sampled(pids, sampling, "worker"):  # attached while it runs
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        try:
            for start in range(0, count, CLICKS_AT_ONCE):
                chunk = requests[start : start + CLICKS_AT_ONCE]
                await click_all(harness, chunk, [REVIEWER] * len(chunk), "approve")
            await until(all_decided, poll_s=0.01)
            cpu_before = sum(process_cpu_s(pid) for pid in pids)
            meter = CpuMeter()
            went = time.time()
        finally:
            for pid in pids:
                os.kill(pid, signal.SIGCONT)
        await until(all_applied, poll_s=APPLIED_POLL_S)
        elapsed = time.time() - went
        busy, here = meter.spent()
        cpu = sum(process_cpu_s(pid) for pid in pids) - cpu_before
    await until(all_ended, poll_s=0.05)
    io = None
    if io_before is not None:
        io = io_before.per_item(await io_counts(started.metrics_ports[0]), count)
    return Rate(count, elapsed, cpu, io, machine_cpu_s=busy, sandbox_cpu_s=here)


async def bare_rate(
    stage: Stage, processes: int, count: int, *, io: DecisionIo | None = None
) -> Rate:
    """``processes`` bare resumers resuming ``count`` paused ``thread_id``s in all, each
    resume followed by ``io`` (bare), if given."""
    share = count // processes
    with_io = (
        (
            "--slack-url",
            io.slack_url,
            "--slack-calls",
            str(io.slack_calls),
            "--round-trips",
            str(io.round_trips),
        )
        if io
        else ()
    )
    resumers = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.bare_resumer",
            stage.settings.database_url,
            str(stage.workspace),
            f"bare{processes}x{i}-{time.time_ns()}",
            str(share),
            *with_io,
            cwd=REPO,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        for i in range(processes)
    ]
    for resumer in resumers:
        assert resumer.stdout is not None
        line = await resumer.stdout.readline()
        if line.strip() != b"ready":
            raise RuntimeError(f"a bare resumer failed to start: {line!r}")
    meter = CpuMeter()
    started = time.time()
    for resumer in resumers:
        assert resumer.stdin is not None
        resumer.stdin.write(b"go\n")
        await resumer.stdin.drain()
    reports = []
    for resumer in resumers:
        assert resumer.stdout is not None
        reports.append(json.loads(await resumer.stdout.readline()))
    busy, here = meter.spent()  # as the last resumer reported its end
    for resumer in resumers:
        await resumer.wait()
    ended = max(r["ended"] for r in reports)
    cpu = sum(r["cpu_s"] for r in reports)
    return Rate(share * processes, ended - started, cpu, machine_cpu_s=busy, sandbox_cpu_s=here)


def second_process_gain(rates: dict[int, Rate]) -> float:
    """What a 2nd process added to 1's rate, as a fraction (``0.5``: 50 % more)."""
    return rates[2].per_s / rates[1].per_s - 1


@dataclass
class Round:
    """One round's rates with 1 and 2 processes: the product's, the bare resumers', the
    floor's (bare resumers doing the product's per-decision I/O), and the least's (bare
    resumers doing the least I/O this design needs per decision)."""

    product: dict[int, Rate] = field(default_factory=dict)
    bare: dict[int, Rate] = field(default_factory=dict)
    floor: dict[int, Rate] = field(default_factory=dict)
    least: dict[int, Rate] = field(default_factory=dict)


@dataclass
class Scaling:
    """The rounds of product and bare rates, and the I/O the floor's resumers did."""

    rounds: list[Round]
    floor_io: DecisionIo | None = None
    """Per decision, rounded: the 1-worker product's I/O in the first round."""

    def median(self, figure: Callable[[Round], float]) -> float:
        """The median over the rounds of ``figure`` (a ratio is taken within each round,
        so a machine slower in one round than the next moves both its sides)."""
        return statistics.median(figure(r) for r in self.rounds)


async def measure(
    stage: Stage, harness: Harness, count: int, rounds: int, profile: Path | None = None
) -> Scaling:
    """``rounds`` rounds, each: rates with 1 worker process, then 2, then bare resumers
    alike, then the floor's (doing the I/O the first round's worker did per decision),
    then the least's.
    Interleaved rather than each measured once in a row, because this machine's speed
    drifts over minutes (bare resumes per second moved from 57 to 83 between two runs
    of the same code): a ratio is taken within a round. The first round's workers are
    sampled with py-spy into ``profile``, if given."""
    scaling = Scaling(rounds=[])
    for index in range(rounds):
        measured = Round()
        async with workers(harness) as started:
            for processes in (1, 2):
                await started.add()
                measured.product[processes] = await product_rate(
                    harness, started, count, profile if index == 0 else None
                )
        for processes in (1, 2):
            measured.bare[processes] = await bare_rate(stage, processes, count)
        io = measured.product[1].io
        if scaling.floor_io is None and io is not None:
            scaling.floor_io = DecisionIo(
                slack_url=harness.sandbox.api_url,
                slack_calls=round(io.slack_total),
                round_trips=round(io.round_trips),
            )
        if scaling.floor_io is not None:
            for processes in (1, 2):
                measured.floor[processes] = await bare_rate(
                    stage, processes, count, io=scaling.floor_io
                )
        least = DecisionIo(harness.sandbox.api_url, LEAST_SLACK_CALLS, LEAST_ROUND_TRIPS)
        for processes in (1, 2):
            measured.least[processes] = await bare_rate(stage, processes, count, io=least)
        scaling.rounds.append(measured)
    return scaling

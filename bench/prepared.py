"""PostgreSQL's CPU time per checkpoint read and per resume, with the saver's statements
prepared (a worker's pool with ``DATABASE_PREPARED_STATEMENTS=true``) and with nothing
prepared (the default, and every other process's pool).

In this process, on the benchmark agent's graph (``bench.latency.bare_graph``) over a
pool of each kind: ``THREADS`` ``thread_id``s paused on their gated call, then each one's
state read ``READS`` times (``aget_state(..., subgraphs=True)``, as the run driver reads
it) and each resumed to its end (``durability="sync"``, as the driver streams). The CPU
time PostgreSQL spent is the whole machine's (``/proc/stat``) less this process's, with
nothing else of the benchmark running. Pools alternate over ``ROUNDS`` rounds; a figure
is the median of its rounds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

from agent_bridge.postgres_db import open_pool
from bench.cpu import CpuMeter
from bench.latency import bare_graph, pause
from bench.stage import Stage

THREADS = 60
"""``thread_id``s paused per round and pool kind."""
READS = 3
"""State reads per ``thread_id`` (the driver reads it before and after each resume)."""
ROUNDS = 3


@dataclass
class Costs:
    """Seconds of CPU per call, one entry per round: PostgreSQL's and the caller's."""

    read_server: list[float] = field(default_factory=list)
    read_client: list[float] = field(default_factory=list)
    resume_server: list[float] = field(default_factory=list)
    resume_client: list[float] = field(default_factory=list)


def per_call(meter: CpuMeter, calls: int) -> tuple[float, float]:
    """(PostgreSQL's: the machine's less this process's, this process's) CPU seconds per
    call since ``meter`` was created."""
    machine, here = meter.spent()
    return (machine - here) / calls, here / calls


async def one_round(stage: Stage, prepared: bool, count: int, costs: Costs) -> None:
    """Measure one pool kind once, into ``costs``."""
    pool = await open_pool(stage.settings.database_url, prepared_statements=prepared)
    try:
        graph = bare_graph(stage.settings, AsyncPostgresSaver(conn=pool))
        paused = [
            await pause(graph, f"prepared-{prepared}-{i}-{time.time_ns()}") for i in range(count)
        ]
        meter = CpuMeter()
        for config, _ in paused:
            for _ in range(READS):
                await graph.aget_state(config, subgraphs=True)
        server, client = per_call(meter, count * READS)
        costs.read_server.append(server)
        costs.read_client.append(client)
        meter = CpuMeter()
        for config, command in paused:
            await graph.ainvoke(command, config, durability="sync")
        server, client = per_call(meter, count)
        costs.resume_server.append(server)
        costs.resume_client.append(client)
    finally:
        await pool.close()


async def measure(stage: Stage, count: int = THREADS) -> dict[bool, Costs]:
    """``ROUNDS`` rounds of both pool kinds, alternating: ``{prepared: costs}``."""
    costs = {False: Costs(), True: Costs()}
    for _ in range(ROUNDS):
        for prepared in (False, True):
            await one_round(stage, prepared, count, costs[prepared])
    return costs

"""The bus contract, against the in-process bus and real Redis."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from agent_bridge.bus import Bus, InProcessBus, Signal
from agent_bridge.redis_bus import RedisBus

LONG_WAIT_S = 60.0
"""A wait the tests never sit out: returning earlier means a signal ended it."""
WOKEN_WITHIN_S = 5.0


@pytest.fixture(params=["in_process", "redis"])
async def any_bus(request: pytest.FixtureRequest, bus: RedisBus) -> AsyncIterator[Bus]:
    if request.param == "redis":
        yield bus
        return
    in_process = InProcessBus()
    yield in_process
    await in_process.close()


async def test_a_signal_wakes_a_waiting_worker(any_bus: Bus) -> None:
    waiting = asyncio.Event()

    async def worker() -> list[Signal]:
        waiting.set()
        return await any_bus.wait(LONG_WAIT_S)

    waiter = asyncio.create_task(worker())
    await waiting.wait()  # resumes once the worker is suspended inside wait()
    assert not waiter.done()
    await any_bus.publish(Signal(kind="decision_recorded", run_id="run-1"))
    # Back well before its timeout: woken by the signal.
    assert await asyncio.wait_for(waiter, WOKEN_WITHIN_S) == [
        Signal(kind="decision_recorded", run_id="run-1")
    ]


async def test_wait_times_out_with_no_signal(any_bus: Bus) -> None:
    assert await any_bus.wait(0.2) == []


async def test_signals_sent_before_waiting_are_not_lost(any_bus: Bus) -> None:
    await any_bus.publish(Signal(kind="run_requested", run_id="a"))
    await any_bus.publish(Signal(kind="run_requested", run_id="b"))
    got: list[Signal] = []
    for _ in range(3):
        got += await any_bus.wait(1.0)
        if len(got) == 2:
            break
    assert [s.run_id for s in got] == ["a", "b"]


async def test_a_dead_redis_neither_raises_nor_blocks() -> None:
    bus = RedisBus("redis://127.0.0.1:1/0", channel="agent_bridge:signals:dead")
    await bus.publish(Signal(kind="run_requested", run_id="a"))
    assert await bus.wait(0.3) == []
    await bus.close()

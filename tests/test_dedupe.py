"""The Deduper contract, against the in-memory deduper and real Redis.

Time is moved, not waited for: the in-memory deduper is given a clock the test
advances; Redis's clock cannot be moved, so each of its keys' remaining TTL is cut
by the same amount instead (a key whose TTL runs out that way is deleted by Redis,
exactly as if the time had passed).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import pytest
import redis.asyncio as redis

from bot.dedupe import EVENT_TTL_S, KEY_PREFIX, Deduper, MemoryDeduper, RedisDeduper
from tests.clocks import ManualClock
from tests.harness import Harness

DEAD_REDIS = "redis://127.0.0.1:1/0"


@dataclass
class Subject:
    """A deduper under test, and how to make time pass for it.

    Attributes:
        deduper: The deduper.
        age: Make ``seconds`` pass for everything the deduper remembers.
        connections: The server-side connections the deduper holds now (none in memory).
        held: Which of ``connections`` the server still has open.
    """

    deduper: Deduper
    age: Callable[[float], Awaitable[None]]
    connections: Callable[[], Awaitable[set[int]]]
    held: Callable[[set[int]], Awaitable[set[int]]]


async def _nothing() -> set[int]:
    return set()


async def _none_held(ids: set[int]) -> set[int]:
    return set()


@pytest.fixture(params=["memory", "redis"])
async def subject(request: pytest.FixtureRequest) -> AsyncIterator[Subject]:
    if request.param == "memory":
        clock = ManualClock(1_000.0)

        async def advance(seconds: float) -> None:
            clock.now += seconds

        memory = MemoryDeduper(clock=clock)
        yield Subject(deduper=memory, age=advance, connections=_nothing, held=_none_held)
        await memory.close()
        return

    url = request.getfixturevalue("redis_bus_url")  # the tests' Redis database, flushed
    admin = redis.Redis.from_url(url)
    deduper = RedisDeduper(url)

    async def age(seconds: float) -> None:
        async for key in admin.scan_iter(match=KEY_PREFIX + "*"):
            left_ms = await admin.pttl(key)
            assert left_ms > 0, f"{key!r} has no TTL: it would never be forgotten"
            await admin.pexpire(key, left_ms - int(seconds * 1000))  # <= 0: deleted

    async def connections() -> set[int]:
        return {int(await deduper.client.client_id())}

    async def held(ids: set[int]) -> set[int]:
        return {int(c["id"]) for c in await admin.client_list() if int(c["id"]) in ids}

    yield Subject(deduper=deduper, age=age, connections=connections, held=held)
    await deduper.close()
    await admin.aclose()


async def test_a_key_is_new_the_first_time_only(subject: Subject) -> None:
    assert await subject.deduper.first_time("Ev1")
    assert not await subject.deduper.first_time("Ev1")
    assert not await subject.deduper.first_time("Ev1")


async def test_keys_are_remembered_one_by_one(subject: Subject) -> None:
    assert await subject.deduper.first_time("Ev1")
    assert await subject.deduper.first_time("Ev2")
    assert not await subject.deduper.first_time("Ev1")
    assert not await subject.deduper.first_time("Ev2")


async def test_a_key_is_remembered_for_its_whole_ttl(subject: Subject) -> None:
    assert await subject.deduper.first_time("Ev1")
    await subject.age(EVENT_TTL_S - 1)
    assert not await subject.deduper.first_time("Ev1")


async def test_a_key_is_forgotten_once_its_ttl_is_over(subject: Subject) -> None:
    assert await subject.deduper.first_time("Ev1")
    await subject.age(EVENT_TTL_S)
    assert await subject.deduper.first_time("Ev1")  # new again ...
    assert not await subject.deduper.first_time("Ev1")  # ... and remembered anew


async def test_a_repeat_does_not_extend_the_ttl(subject: Subject) -> None:
    """The TTL counts from the first sighting: Slack's retries stop within it."""
    assert await subject.deduper.first_time("Ev1")
    await subject.age(EVENT_TTL_S - 1)
    assert not await subject.deduper.first_time("Ev1")
    await subject.age(1)
    assert await subject.deduper.first_time("Ev1")


async def test_close_releases_what_it_holds(subject: Subject) -> None:
    assert await subject.deduper.first_time("Ev1")
    connections = await subject.connections()
    assert await subject.held(connections) == connections
    await subject.deduper.close()

    async def released() -> bool:  # the server notices a closed socket in its own time
        return not await subject.held(connections)

    assert await Harness.wait_for(released)


async def test_an_unreachable_redis_lets_every_delivery_through() -> None:
    """A rare duplicate beats a lost request: with Redis down nothing is deduplicated,
    and nothing raises."""
    deduper = RedisDeduper(DEAD_REDIS)
    try:
        assert await deduper.first_time("Ev1")
        assert await deduper.first_time("Ev1")
    finally:
        await deduper.close()

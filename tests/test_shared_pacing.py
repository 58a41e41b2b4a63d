"""Background Slack calls are paced on one schedule by every worker of a deployment.

Two ``RedisPacer``s (two workers) on the real Redis take slots for one channel's posts
and for the workspace's updates; their sleeps are recorded instead of slept, so the test
reads the schedule Redis handed out without waiting for it.
"""

from __future__ import annotations

import pytest

from agent_bridge.redis_pacing import RedisPacer
from tests import services

DEAD_REDIS = "redis://127.0.0.1:1/0"
INTERVAL_S = 10.0
"""Long enough that the few milliseconds between two calls cannot blur the schedule."""


class Sleeps:
    """A ``sleep`` that records how long it was asked to wait."""

    def __init__(self) -> None:
        self.asked: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)


def pacer(url: str, deployment: str, sleeps: Sleeps) -> RedisPacer:
    return RedisPacer(
        url,
        deployment=deployment,
        post_interval_s=INTERVAL_S,
        update_interval_s=INTERVAL_S,
        sleep=sleeps,
    )


async def test_two_workers_draw_their_background_posts_from_one_schedule(
    redis_bus_url: str,
) -> None:
    deployment = services.unique_name("deployment")
    sleeps_a, sleeps_b = Sleeps(), Sleeps()
    a, b = pacer(redis_bus_url, deployment, sleeps_a), pacer(redis_bus_url, deployment, sleeps_b)
    try:
        for worker in (a, b, a, b):
            await worker.post("C1")
        await b.post("C2")  # another channel has its own slots
    finally:
        await a.close()
        await b.close()
    # the first post went at once (no sleep); each next one a whole interval later,
    # whichever worker asked: b's first post waited for a's, a's second for b's...
    waits = sorted(sleeps_a.asked + sleeps_b.asked)
    assert len(waits) == 3
    for slot, wait in zip((1, 2, 3), waits, strict=True):
        assert wait == pytest.approx(slot * INTERVAL_S, abs=1.0)


async def test_deployments_sharing_a_redis_server_keep_their_own_schedules(
    redis_bus_url: str,
) -> None:
    sleeps = Sleeps()
    ours = pacer(redis_bus_url, services.unique_name("ours"), sleeps)
    theirs = pacer(redis_bus_url, services.unique_name("theirs"), sleeps)
    try:
        await ours.update()
        await theirs.update()
    finally:
        await ours.close()
        await theirs.close()
    assert sleeps.asked == []


async def test_a_worker_whose_redis_is_down_paces_itself_alone() -> None:
    sleeps = Sleeps()
    down = pacer(DEAD_REDIS, "down", sleeps)
    try:
        await down.update()
        await down.update()
    finally:
        await down.close()
    assert sleeps.asked == [pytest.approx(INTERVAL_S, abs=1.0)]

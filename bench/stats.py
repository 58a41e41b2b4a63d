"""Percentiles, waiting on events, and a quiet heap, for the benchmark."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from agent_bridge import heap

T = TypeVar("T")

POLL_S = 0.001
"""How often an awaited event is checked for, seconds (the figures' resolution)."""
WAIT_TIMEOUT_S = 120.0


def settle_heap() -> None:
    """Freeze what the benchmark's process holds so far (``agent_bridge.heap``), before a
    measure. The sandbox Slack runs in this process; a full garbage collection walking
    its messages (140-160 ms measured with fifty reviewers' cards) would land inside
    whatever was being timed."""
    heap.freeze_startup_objects()


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``values``, nearest rank.

    Raises:
        ValueError: If ``values`` is empty.
    """
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


async def until(
    probe: Callable[[], Awaitable[T | None]],
    *,
    poll_s: float = POLL_S,
    timeout_s: float = WAIT_TIMEOUT_S,
) -> T:
    """Poll ``probe`` every ``poll_s`` seconds until it returns something truthy.

    Raises:
        TimeoutError: After ``timeout_s`` seconds without it.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value = await probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout_s} s for {probe}")
        await asyncio.sleep(poll_s)

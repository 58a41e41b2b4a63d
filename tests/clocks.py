"""Clocks the test moves: for the store's Unix time and the group cache's monotonic time,
and the real time shifted, for the sandbox's events."""

from __future__ import annotations

import time


class ManualClock:
    """Seconds that move only when the test sets ``now``.

    Args:
        now: Where it starts (e.g. ``time.time()`` for Unix time, ``0`` for monotonic).
    """

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class ShiftedClock:
    """Unix time, ``shift`` seconds off the real one (the test sets it): what happens
    while it is negative happened that long ago."""

    def __init__(self) -> None:
        self.shift = 0.0

    def __call__(self) -> float:
        return time.time() + self.shift

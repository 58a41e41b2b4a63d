"""A clock the test moves, for the store's Unix time and the group cache's monotonic time."""

from __future__ import annotations


class ManualClock:
    """Seconds that move only when the test sets ``now``.

    Args:
        now: Where it starts (e.g. ``time.time()`` for Unix time, ``0`` for monotonic).
    """

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

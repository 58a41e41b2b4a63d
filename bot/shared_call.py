"""One call at a time, shared by whoever asks meanwhile: ``/metrics`` and ``/readyz``
answer anyone who can reach the web process's port, and each of their answers reads the
database (and Redis, Slack); without sharing, a flood of them would take every pooled
connection a reviewer's click records with."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class SharedCall(Generic[T]):
    """Calls ``fn`` when no call of it is in flight; a caller arriving while one is gets
    that call's result (or its error), so at most one runs at any time whatever the
    number of callers; and, with ``fresh_s``, a call that landed less than ``fresh_s``
    ago answers too, so one caller asking again and again (a loop, not a flood) starts
    at most one call per ``fresh_s``. A caller that is cancelled (its client went away)
    does not cancel the call the others wait for.

    Args:
        fn: What to call (no arguments): a fresh read each time it runs.
        fresh_s: How long a landed call's result (or error) still answers, seconds.
        clock: Monotonic seconds.
    """

    def __init__(
        self,
        fn: Callable[[], Awaitable[T]],
        *,
        fresh_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fn = fn
        self._fresh_s = fresh_s
        self._clock = clock
        self._flight: asyncio.Future[T] | None = None
        self._landed_at = -math.inf

    async def __call__(self) -> T:
        """The result of the call in flight or landed less than ``fresh_s`` ago, or of a
        new one."""
        if self._flight is None or (
            self._flight.done() and self._clock() - self._landed_at >= self._fresh_s
        ):
            flight = asyncio.ensure_future(self._fn())
            self._flight = flight
            flight.add_done_callback(self._landed)
        return await asyncio.shield(self._flight)

    def _landed(self, flight: asyncio.Future[T]) -> None:
        if self._flight is flight:
            self._landed_at = self._clock()
            if not self._fresh_s:
                self._flight = None

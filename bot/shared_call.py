"""One call at a time, shared by whoever asks meanwhile: ``/metrics`` and ``/readyz``
answer anyone who can reach the web process's port, and each of their answers reads the
database (and Redis, Slack); without sharing, a flood of them would take every pooled
connection a reviewer's click records with."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class SharedCall(Generic[T]):
    """Calls ``fn`` when no call of it is in flight; a caller arriving while one is gets
    that call's result (or its error), so at most one runs at any time whatever the
    number of callers. A caller that is cancelled (its client went away) does not
    cancel the call the others wait for.

    Args:
        fn: What to call (no arguments): a fresh read each time it runs.
    """

    def __init__(self, fn: Callable[[], Awaitable[T]]) -> None:
        self._fn = fn
        self._flight: asyncio.Future[T] | None = None

    async def __call__(self) -> T:
        """The result of the call in flight, or of a new one."""
        if self._flight is None:
            flight = asyncio.ensure_future(self._fn())
            self._flight = flight
            flight.add_done_callback(self._landed)
        return await asyncio.shield(self._flight)

    def _landed(self, flight: asyncio.Future[T]) -> None:
        if self._flight is flight:
            self._flight = None

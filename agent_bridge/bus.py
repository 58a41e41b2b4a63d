"""The bus port: wake-up signals from the web process to workers.

Redis (or, in one process, an ``asyncio.Event``) only rings the doorbell: the database
stays the truth, and a worker that misses a signal finds the work on its next sweep
(docs/architecture.md, invariant 5). So ``publish`` never raises, and ``wait`` returns on a signal,
on timeout, or early when the bus is broken.
"""

from __future__ import annotations

import asyncio
from typing import Literal, Protocol

from pydantic import BaseModel

SignalKind = Literal["run_requested", "decision_recorded"]


class Signal(BaseModel):
    """A hint that there is work: a run to start, or a decision to apply."""

    kind: SignalKind
    run_id: str


class Bus(Protocol):
    """Carries ``Signal``s from producers (web) to consumers (workers)."""

    async def publish(self, signal: Signal) -> None:
        """Send ``signal`` to every waiting worker; log and return if that fails."""
        ...

    async def wait(self, timeout_s: float) -> list[Signal]:
        """Return the signals that arrived, waiting up to ``timeout_s`` seconds for one."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


class InProcessBus:
    """The bus for one process (the demo, unit tests): an event and a list.

    Workers in other processes never hear it; they rely on their sweep.
    """

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._signals: list[Signal] = []

    async def publish(self, signal: Signal) -> None:
        """See ``Bus.publish``."""
        self._signals.append(signal)
        self._event.set()

    async def wait(self, timeout_s: float) -> list[Signal]:
        """See ``Bus.wait``."""
        if not self._signals:
            try:
                await asyncio.wait_for(self._event.wait(), timeout_s)
            except TimeoutError:
                return []
        self._event.clear()
        signals, self._signals = self._signals, []
        return signals

    async def close(self) -> None:
        """Nothing to release."""

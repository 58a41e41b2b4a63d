"""Slow and stalled Web API calls: a per-call latency, and a call held until released.

Real Slack takes 50-250 ms per call; a worker killed in the middle of one is the
window the crash tests need. ``Stall`` holds one chosen call (by method, and by the
key in its message metadata or the message it changes) either *lost* (it never takes effect; once
released it answers HTTP 500) or *applied* (the message lands, but the caller does not
hear back until the test releases it or the sandbox stops).
"""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Stall:
    """One Web API call to hold.

    Attributes:
        method: The Web API method, e.g. ``chat.postMessage``.
        key_contains: Only a call whose ``metadata.event_payload.key`` contains it.
        ts: Only a call on the message ``ts`` (``chat.update``, ``chat.delete``).
        applied: Hold it after applying it (``True``), or hold it and never apply it
            (``False``: answered HTTP 500 once released).
        answer_status: Applied, answer this HTTP status once released, as a gateway
            in front of Slack may after Slack acted (a 503, a timeout's 504).
        reached: Set once the call is being held.
        released: Set to let the call answer (``Sandbox.stop`` sets it too).
    """

    method: str
    key_contains: str | None = None
    ts: str | None = None
    applied: bool = True
    answer_status: int | None = None
    reached: asyncio.Event = field(default_factory=asyncio.Event)
    released: asyncio.Event = field(default_factory=asyncio.Event)

    def matches(self, method: str, args: dict[str, Any]) -> bool:
        """Whether the call ``method(args)`` is this stall's."""
        if method != self.method:
            return False
        if self.ts is not None and str(args.get("ts")) != self.ts:
            return False
        return self.key_contains is None or self.key_contains in metadata_key(args)

    async def hold(self) -> None:
        """Hold the call until released."""
        self.reached.set()
        await self.released.wait()


def metadata_key(args: dict[str, Any]) -> str:
    """The ``key`` in a call's ``metadata.event_payload`` (``""`` when it has none)."""
    metadata = args.get("metadata")
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except ValueError:
            return ""
    payload = metadata.get("event_payload") if isinstance(metadata, dict) else None
    key = payload.get("key") if isinstance(payload, dict) else None
    return key if isinstance(key, str) else ""


@dataclass
class Slowness:
    """The sandbox's latency and stalls.

    Attributes:
        latency_s: ``(low, high)``: each Web API call waits a uniform random time in
            between before it is answered, seconds (``(0, 0)``: at once).
        stalls: Calls to hold, each taken by the first call it matches.
        rng: The random source (seeded by the soak for a reproducible run).
    """

    latency_s: tuple[float, float] = (0.0, 0.0)
    stalls: list[Stall] = field(default_factory=list)
    rng: random.Random = field(default_factory=random.Random)

    async def delay(self) -> None:
        """Wait this call's latency."""
        low, high = self.latency_s
        if high > 0:
            await asyncio.sleep(self.rng.uniform(low, high))

    def take_stall(self, method: str, args: dict[str, Any]) -> Stall | None:
        """Return (and remove) the first stall the call ``method(args)`` matches."""
        for stall in self.stalls:
            if stall.matches(method, args):
                self.stalls.remove(stall)
                return stall
        return None

    def release_all(self) -> list[Stall]:
        """Let every held call answer; return the stalls still waiting for a call."""
        waiting = list(self.stalls)
        for stall in waiting:
            stall.released.set()
        return waiting

"""A deadline for the database work of one Slack request (Slack wants its answer in 3 s).

``within(seconds)`` sets it for the code it wraps (a ``contextvars`` value, so it
follows the awaits of that one request and no other). The PostgreSQL driver honours it
(``agent_bridge.postgres_db``): a transaction gets ``SET LOCAL lock_timeout`` and
``statement_timeout`` of the time left, so the database itself aborts it and a COMMIT
never races a cancelled client (nothing is half-recorded); a single statement, which
records nothing that matters on its own, is awaited at most the time left. Either way
the caller gets ``StoreUnavailableError`` and can still answer Slack in time. A user
group read from Slack under the deadline (``bot.directory``) is cut at it too, and counts
as unresolved (nobody is authorized by it).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_deadline: ContextVar[float | None] = ContextVar("db_deadline", default=None)


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Bound the database work inside the block to ``seconds`` from now (an inner
    ``within`` never extends an outer one)."""
    end = time.monotonic() + seconds
    outer = _deadline.get()
    token = _deadline.set(end if outer is None else min(outer, end))
    try:
        yield
    finally:
        _deadline.reset(token)


def time_left() -> float | None:
    """Seconds left before the current deadline (``<= 0``: passed), ``None``: none set."""
    end = _deadline.get()
    return None if end is None else end - time.monotonic()

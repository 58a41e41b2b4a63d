"""A library's warning repeated many times a minute is written once a minute, with its count.

During a database outage psycopg_pool warns at every failed connection attempt ("error
connecting in 'pool-1': connection refused"): about 120 lines a minute in a web process
answering a click every 0.3 s, the same line each time, which buries the lines that say
what the outage did (a click told to retry, a run sent back to the queue).
``RepeatedLines`` lets the first line of a kind through, holds back the same kind for
``interval_s``, and lets the next one after it through with the count of those held back.
Errors and worse always pass.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

REPEAT_INTERVAL_S = 60.0
FIRST_NOTE = " (lines like it: one every {interval:g} s at most)"
HELD_BACK_NOTE = (
    " (lines like it: one every {interval:g} s at most; {held} held back since the last)"
)


@dataclass
class _Window:
    start: float
    held: int = 0


class RepeatedLines(logging.Filter):
    """A ``logging.Filter`` writing each kind of warning (or lower) at most once per
    ``interval_s`` seconds: a kind is the logger and the message's template
    (``record.msg`` before its arguments), so "error connecting in %r: %s" is one kind
    whatever the reason it carries. A line let through says so, and after the first
    says how many were held back since the one before it.

    Args:
        interval_s: Seconds a kind is held back after one of its lines is written.
        clock: Monotonic seconds (a test's clock).
    """

    def __init__(
        self, interval_s: float = REPEAT_INTERVAL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.interval_s = interval_s
        self.clock = clock
        self._windows: dict[tuple[str, str], _Window] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether to write ``record``; one let through gets the note of its kind."""
        if record.levelno > logging.WARNING:
            return True
        key = (record.name, str(record.msg))
        now = self.clock()
        window = self._windows.get(key)
        if window is not None and now - window.start < self.interval_s:
            window.held += 1
            return False
        note = (
            HELD_BACK_NOTE.format(interval=self.interval_s, held=window.held)
            if window is not None
            else FIRST_NOTE.format(interval=self.interval_s)
        )
        self._windows[key] = _Window(start=now)
        record.msg = record.getMessage() + note
        record.args = None
        return True

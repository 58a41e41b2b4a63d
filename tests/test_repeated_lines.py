"""``RepeatedLines``: a library's warning repeated many times a minute is written once per
interval, with the count held back. The real pool's warnings during an outage are in
``tests/test_faults.py::test_the_first_statement_after_a_ten_second_outage_connects``."""

from __future__ import annotations

import io
import logging

from agent_bridge import logs
from agent_bridge.repeated_lines import RepeatedLines
from tests.clocks import ManualClock


def written(lines: RepeatedLines, logger: logging.Logger) -> io.StringIO:
    stream = io.StringIO()
    out = logging.StreamHandler(stream)
    out.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger.handlers[:] = [out]
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    logger.filters[:] = [lines]
    return stream


def test_a_repeated_warning_is_written_once_per_interval_with_the_count_held_back() -> None:
    clock = ManualClock(1_000.0)
    logger = logging.getLogger("tests.repeated.pool")
    stream = written(RepeatedLines(interval_s=60, clock=clock), logger)
    for second in range(0, 130, 2):  # a failed attempt every 2 s for 130 s
        clock.now = 1_000.0 + second
        logger.warning("error connecting in %r: %s", "pool-1", f"refused at {second}")
    logger.warning("discarding broken connection: %s", "<conn 7>")  # another kind: written
    logger.error("error connecting in %r: %s", "pool-1", "an error")  # errors: always
    assert stream.getvalue().splitlines() == [
        "WARNING error connecting in 'pool-1': refused at 0"
        " (lines like it: one every 60 s at most)",
        "WARNING error connecting in 'pool-1': refused at 60"
        " (lines like it: one every 60 s at most; 29 held back since the last)",
        "WARNING error connecting in 'pool-1': refused at 120"
        " (lines like it: one every 60 s at most; 29 held back since the last)",
        "WARNING discarding broken connection: <conn 7> (lines like it: one every 60 s at most)",
        "ERROR error connecting in 'pool-1': an error",
    ]


def test_the_pools_warnings_are_paced_once_however_often_logging_is_configured() -> None:
    pool_logger, root = logging.getLogger("psycopg.pool"), logging.getLogger()
    saved = pool_logger.filters[:], root.handlers[:], root.level
    try:
        logs.configure_logging(level="INFO", log_format="text")
        logs.configure_logging(level="INFO", log_format="json")
        paced = [f for f in pool_logger.filters if isinstance(f, RepeatedLines)]
    finally:
        pool_logger.filters[:] = saved[0]
        root.handlers[:] = saved[1]
        root.setLevel(saved[2])
    assert len(paced) == 1

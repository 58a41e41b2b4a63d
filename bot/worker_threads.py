"""The worker process's threads, so that a sync tool that never returns cannot keep a
stopped worker running.

The agent's sync tools run on the event loop's default executor (LangChain's
``run_in_executor``), and a thread cannot be stopped. asyncio's ``Runner.close``
(``shutdown_default_executor``) and Python's exit (``concurrent.futures``' exit hook,
then the join of every non-daemon thread) wait for every such thread, without a bound,
so a worker whose tool hung stayed up after SIGTERM, or after a tool's ``SystemExit``,
until its supervisor killed it. Here the worker's default executor is its own
(``WorkerThreads``), whose shutdown waits ``THREADS_STOP_S`` at most, and
``exit_within`` ends the process with its exit code once that long has passed, logging
the threads it leaves (the runs they served were given back or failed already).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

logger = logging.getLogger(__name__)

THREADS_STOP_S = 5.0
"""How long a stopped worker waits for its threads to end, seconds: an idle one ends at
once; one still running belongs to a sync tool that outlasted ``STOP_GRACE_S``."""
THREAD_NAME_PREFIX = "agent-bridge-worker"
"""The name prefix of ``WorkerThreads``' threads."""


class WorkerThreads(ThreadPoolExecutor):
    """The worker event loop's default executor (``loop.set_default_executor``: the
    agent's sync tools and ``asyncio.to_thread`` run on it), whose ``shutdown`` with
    ``wait`` waits for its threads ``THREADS_STOP_S`` at most, so that asyncio's
    ``Runner.close`` returns though a sync tool never does. ``ThreadPoolExecutor``'s
    default size; its threads are named ``THREAD_NAME_PREFIX``."""

    def __init__(self) -> None:
        super().__init__(thread_name_prefix=THREAD_NAME_PREFIX)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """As ``ThreadPoolExecutor.shutdown``, but waiting ``THREADS_STOP_S`` at most."""
        super().shutdown(wait=False, cancel_futures=cancel_futures)
        if not wait:
            return
        deadline = time.monotonic() + THREADS_STOP_S
        for thread in threading.enumerate():
            if thread.name.startswith(THREAD_NAME_PREFIX):
                thread.join(max(deadline - time.monotonic(), 0.0))


def exit_within(code: int) -> None:
    """Make sure this process ends with ``code`` at most ``THREADS_STOP_S`` from now: a
    daemon thread waits that long (Python's exit kills it sooner if nothing holds the
    exit), then logs the threads still running, flushes the log and the standard
    streams, and ends the process without them (``os._exit``: no exit hook runs; the
    worker closed its connections before)."""

    def end() -> None:
        time.sleep(THREADS_STOP_S)
        left = [
            t.name
            for t in threading.enumerate()
            if not t.daemon and t is not threading.main_thread()
        ]
        logger.error(
            "the worker stopped, but threads still run %g s later (a sync tool that never "
            "returns?): %s; exiting %d without them",
            THREADS_STOP_S,
            ", ".join(left) or "none",
            code,
        )
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # closed, or its reader gone: nothing to keep
                pass
        os._exit(code)

    threading.Thread(target=end, name="agent-bridge-exit", daemon=True).start()

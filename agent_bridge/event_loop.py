"""The event loops the product's processes run on.

``run``: uvloop (https://uvloop.readthedocs.io), a drop-in asyncio event loop on libuv,
for the worker and the one-shot commands: a decision costs the worker about twenty
database round trips and four Slack calls, and each socket wake-up, callback and task
switch costs less CPU on it (10-15 % less CPU per decision in the benchmark). Where
uvloop is not installed (Windows, which it does not support), asyncio's own loop.

``run_server``: asyncio's own loop, for the processes Slack sends requests to (``web``,
``demo``). When the process runs out of file descriptors, libuv accepts each waiting
connection and closes it at once, silently (a click refused, which Slack does not
retry), where asyncio leaves them in the listen backlog, logs, and serves them once a
descriptor is free (docs/reliability.md, "Too many open files").
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """``uvloop.new_event_loop`` if uvloop is installed, else ``None`` (asyncio's own)."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover (installed with the product on Linux and macOS)
        return None
    return uvloop.new_event_loop


def run(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` to completion on a new event loop (``loop_factory``: uvloop), as
    ``asyncio.run`` does, and return its result: the loop of the worker and of the
    one-shot commands.

    Raises:
        Exception: Whatever ``main`` raised.
    """
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)


def run_server(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` to completion on asyncio's own event loop (``asyncio.run``) and return
    its result: the loop of a process that accepts Slack's requests (see above).

    Raises:
        Exception: Whatever ``main`` raised.
    """
    return asyncio.run(main)

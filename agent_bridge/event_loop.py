"""The event loop the product's processes run on: uvloop where it is installed.

uvloop (https://uvloop.readthedocs.io) is a drop-in asyncio event loop on libuv; the
web process, the worker and every other ``agent-bridge`` command run their main
coroutine on it, so each socket wake-up, callback and task switch (a decision costs
about twenty database round trips and four Slack calls) costs less CPU. Where uvloop is
not installed (Windows, which it does not support), the standard loop is used: nothing
in the product depends on which loop it is.
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
    """Run ``main`` to completion on a new event loop (``loop_factory``), as
    ``asyncio.run`` does, and return its result.

    Raises:
        Exception: Whatever ``main`` raised.
    """
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)

"""The processes' event loops (agent_bridge/event_loop.py): uvloop, installed with the
product, for the worker; asyncio's own for the processes Slack sends requests to; a main
coroutine's result or error handed back as ``asyncio.run`` does."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from agent_bridge import event_loop


def test_a_main_coroutine_runs_on_uvloop_and_its_result_is_returned() -> None:
    async def main() -> type:
        return type(asyncio.get_running_loop())

    assert issubclass(event_loop.run(main()), uvloop.Loop)


def test_a_main_coroutines_error_is_raised() -> None:
    async def main() -> None:
        raise LookupError("from main")

    with pytest.raises(LookupError, match="from main"):
        event_loop.run(main())


def test_a_server_runs_on_asyncios_own_loop_not_uvloop() -> None:
    # Out of file descriptors, libuv closes waiting connections unlogged; asyncio keeps
    # them in the backlog (docs/reliability.md, "Too many open files").
    async def main() -> type:
        return type(asyncio.get_running_loop())

    served_on = event_loop.run_server(main())
    assert issubclass(served_on, asyncio.BaseEventLoop)
    assert not issubclass(served_on, uvloop.Loop)

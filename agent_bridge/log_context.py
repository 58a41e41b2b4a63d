"""The IDs every log line about an approval carries, bound once where they become known.

A ``contextvars`` context (structlog's ``bound_contextvars``), not arguments handed
down: what is bound inside a ``with`` block is on every log line written in it, by any
module, and in the asyncio tasks it starts, and is gone when the block ends. The log
formatter (``agent_bridge.logs``) puts them on each line: as JSON keys with
``LOG_FORMAT=json``, else as ``key=value`` after the message.

Keys (docs/architecture.md's words): ``run_id``, ``thread_id`` (LangGraph's),
``interrupt_id``, ``request_id``, ``team_id`` (the workspace) and ``user_id`` (the Slack
user acting: a reviewer clicking, a person starting a run).
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections.abc import Callable, Coroutine, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, ParamSpec, TypeVar

from structlog.contextvars import bind_contextvars, bound_contextvars

from agent_bridge.models import ApprovalRequest, Run

P = ParamSpec("P")
R = TypeVar("R")

KEYS = ("run_id", "thread_id", "interrupt_id", "request_id", "team_id", "user_id")
"""Every key this module binds, in the order log lines show them."""


@contextmanager
def bound(**ids: str | None) -> Iterator[None]:
    """Bind ``ids`` (``KEYS`` only; ``None`` values are left out) for the block."""
    with bound_contextvars(**_present(**ids)):
        yield


def about_request(request: ApprovalRequest) -> AbstractContextManager[None]:
    """Bind ``request``'s IDs: its run's, ``interrupt_id`` and ``request_id``."""
    return bound(
        run_id=request.run_id,
        thread_id=request.thread_id,
        interrupt_id=request.interrupt_id,
        request_id=request.request_id,
        team_id=request.team_id,
    )


def request_ids(
    method: Callable[P, Coroutine[Any, Any, R]],
) -> Callable[P, Coroutine[Any, Any, R]]:
    """Decorator: run an async function with the IDs of its ``request`` argument (an
    ``ApprovalRequest``) bound, as ``about_request`` does."""
    signature = inspect.signature(method)

    @functools.wraps(method)
    async def with_ids(*args: P.args, **kwargs: P.kwargs) -> R:
        request = signature.bind(*args, **kwargs).arguments["request"]
        with about_request(request):
            return await method(*args, **kwargs)

    return with_ids


def bind_run(run: Run) -> None:
    """Bind ``run``'s IDs for the rest of the current asyncio task (the top of a task
    doing one run's work: a worker's drive, a run start's listener)."""
    bind_contextvars(**_present(run_id=run.run_id, thread_id=run.thread_id, team_id=run.team_id))


def bind_actor(*, user_id: str | None, team_id: str | None) -> None:
    """Bind who acts for the rest of the current asyncio task (a request from Slack:
    aiohttp runs each in a task of its own, and Bolt's listeners inherit it)."""
    bind_contextvars(**_present(user_id=user_id, team_id=team_id))


def bind_request(request: ApprovalRequest) -> None:
    """Bind ``request``'s IDs for the rest of the current asyncio task (the top of a
    task doing one request's work: a click's or a submission's listener)."""
    bind_contextvars(
        **_present(
            run_id=request.run_id,
            thread_id=request.thread_id,
            interrupt_id=request.interrupt_id,
            request_id=request.request_id,
            team_id=request.team_id,
        )
    )


def task_context(**ids: str | None) -> contextvars.Context:
    """A copy of the current context with ``ids`` bound, for
    ``asyncio.create_task(..., context=...)``: the task's lines carry them, the
    caller's do not."""
    context = contextvars.copy_context()
    context.run(bind_contextvars, **_present(**ids))
    return context


def _present(**ids: str | None) -> dict[str, str]:
    unknown = set(ids) - set(KEYS)
    if unknown:
        raise ValueError(f"not a log context key: {sorted(unknown)}")
    return {k: v for k, v in ids.items() if v is not None}

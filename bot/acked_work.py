"""The work of requests the web process has already acked, so a stop can finish it.

Bolt answers Slack as soon as a listener calls ``ack()`` and runs the rest of the
listener in an asyncio task of its own (``process_before_response=False``: the
listener's body in ``AsyncioListenerRunner``, lazy listeners in
``AsyncioLazyListenerRunner``, both ``asyncio.ensure_future`` with nothing kept). For
Slack the click is then done; for us its decision is not recorded yet. A process that
exits at that moment loses an acked decision without a word. ``AckedWork`` keeps those
tasks: ``watch`` hooks Bolt's listener start handler (called first thing inside the
listener's task; a click acked before it by ``bot.actions.ack_first`` has that task
created before its 200 is returned) and its lazy-listener runner, and
``drain`` waits for every one of them (docs/architecture.md, "Stopping and starting").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.lazy_listener.async_internals import to_runnable_function
from slack_bolt.lazy_listener.asyncio_runner import AsyncioLazyListenerRunner
from slack_bolt.listener.async_listener_start_handler import AsyncListenerStartHandler
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

logger = logging.getLogger(__name__)


def describe(request: AsyncBoltRequest) -> str:
    """A short, secret-free name of a Slack request for the log: its type, the action's
    ``action_id`` and value (``<request_id>.<version>``) or the view's ``callback_id``,
    and the user ID (e.g. ``block_actions approve value=r1.v1 by U1``)."""
    body = request.body
    actions = body.get("actions")
    action = _mapping(actions[0] if isinstance(actions, list) and actions else None)
    view = _mapping(body.get("view"))
    user = _mapping(body.get("user"))
    parts = [
        str(body.get("type") or body.get("command") or "request"),
        str(action.get("action_id") or view.get("callback_id") or ""),
        f"value={action['value']}" if action.get("value") else "",
        f"by {user.get('id') or body.get('user_id') or '?'}",
    ]
    return " ".join(part for part in parts if part)


def _mapping(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one (a malformed body)."""
    return value if isinstance(value, dict) else {}


class AckedWork:
    """The tasks running acked listeners' work, and waiting for them at a stop.

    Use ``AckedWork.watch(app)`` once, after the Bolt app is built and before it serves.
    """

    def __init__(self) -> None:
        self._tasks: dict[asyncio.Task[Any], str] = {}

    @classmethod
    def watch(cls, app: AsyncApp) -> AckedWork:
        """Keep every listener's and lazy listener's task of ``app`` from now on.

        Bolt's ``AsyncApp.listener_runner`` is public and its start handler and lazy
        runner are its attributes (slack_bolt ``listener/asyncio_runner.py``); the
        handlers Bolt had are kept and still called.

        Returns:
            The ``AckedWork`` that ``drain`` waits on.
        """
        work = cls()
        runner = app.listener_runner
        runner.listener_start_handler = _Tracking(runner.listener_start_handler, work)
        lazy_logger = getattr(runner.lazy_listener_runner, "logger", logger)
        runner.lazy_listener_runner = _TrackedLazyRunner(lazy_logger, work)
        return work

    @property
    def pending(self) -> int:
        """How many acked requests' work is still running."""
        return len(self._tasks)

    def keep(self, task: asyncio.Task[Any], what: str) -> None:
        """Keep ``task`` (the work of the request named ``what``) until it ends."""
        self._tasks[task] = what
        task.add_done_callback(self._tasks.pop)

    async def drain(self, timeout_s: float) -> list[str]:
        """Wait until every kept task has ended, at most ``timeout_s`` seconds.

        It yields to the loop first: a click acked before its listener starts
        (``bot.actions.ack_first``) may have had its 200 returned while its listener's
        task, already created, has not taken the first step that keeps it.

        Returns:
            The names (``describe``) of the requests whose work had not ended by then,
            each also logged as an error: the process is about to lose them.
        """
        await asyncio.sleep(0)  # every task created before the drain keeps itself now
        if self._tasks:
            logger.info("stopping: finishing the work of %d acked requests", len(self._tasks))
            await asyncio.wait(list(self._tasks), timeout=timeout_s)
        left = sorted(self._tasks.values())
        for what in left:
            logger.error("stopped before the work of an acked request ended: %s", what)
        return left


class _Tracking(AsyncListenerStartHandler):
    """Bolt's listener start handler, keeping the listener's task first."""

    def __init__(self, inner: AsyncListenerStartHandler, work: AckedWork) -> None:
        self.inner = inner
        self.work = work

    async def handle(self, request: AsyncBoltRequest, response: BoltResponse | None) -> None:
        task = asyncio.current_task()
        if task is not None:
            self.work.keep(task, describe(request))
        await self.inner.handle(request=request, response=response)


class _TrackedLazyRunner(AsyncioLazyListenerRunner):
    """Bolt's lazy listener runner, keeping each lazy function's task."""

    def __init__(self, bolt_logger: logging.Logger, work: AckedWork) -> None:
        super().__init__(logger=bolt_logger)
        self.work = work

    def start(self, function: Callable[..., Awaitable[None]], request: AsyncBoltRequest) -> None:
        task = asyncio.ensure_future(
            to_runnable_function(internal_func=function, logger=self.logger, request=request)
        )
        self.work.keep(task, describe(request))

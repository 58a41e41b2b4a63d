"""The live progress message: a run's first message redrawn as the agent works.

``ProgressReporter`` is the driver's ``ProgressHook`` (each step of the stream; waiting
for approval at the end of a drive) and the notifier's way to the first message (done
and failed at the end).

``step`` never holds the graph back (LangGraph runs the next step only when the driver
asks for it): it keeps the step's state as the line's latest and returns. One drawer
task per run's line reads that state (which calls were reviewed: a store read when new
tool results appear) and draws it, one update at a time. A stream's steps are drawn at
most one ``chat.update`` per ``PROGRESS_INTERVAL_S`` per message (ours, so a burst of
steps costs one update; ``chat.update`` is Tier 3, 50+ a minute per workspace): steps
that come sooner, or while an update is in flight, are drawn as the latest of them when
the interval is over.

``waiting`` (the end of a drive that leaves the run waiting) and ``final`` take the line
over: after the update in flight, they stop its drawer (the older steps it had not drawn
are dropped) and draw their own state at once, so nothing older lands after them. A
progress update that fails is logged, and so is any other error of a drawer (progress
is only ever shown); the final one raises as the notifier asks.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_bridge import call_ids
from agent_bridge.errors import StoreUnavailableError
from agent_bridge.models import ApprovalRequest, ApprovalState, Run, RunState
from agent_bridge.progress import Phase, Progress, WaitingCard, progress_of, reviewed_calls
from agent_bridge.store import ApprovalStore
from bot.errors import SlackCallError
from bot.progress_blocks import CARDS_SHOWN_MAX, render_progress
from bot.slack_gateway import Slack

logger = logging.getLogger(__name__)

PROGRESS_INTERVAL_S = 1.0
"""Shortest gap between two updates of one run's first message, seconds."""
LINES_KEPT = 1000
"""Runs whose progress this process remembers (older ones start afresh)."""


@dataclass
class _Line:
    """One run's first message: its latest step, what it shows, when it was drawn.

    Attributes:
        run: The run, as last told.
        progress: The latest state read; drawn when ``stale``.
        messages: The latest step's messages; read into ``progress`` when ``unread``.
        unread: ``messages`` came after ``progress`` was read.
        stale: ``progress`` is not drawn yet.
        sent_at: When it was last drawn, the event loop's clock in seconds.
        drawer: The task reading and drawing it (done once nothing is left to draw).
        lock: Held while the message is updated, and by ``waiting`` and ``final``
            while they take the line over.
        reviewed: Tool call IDs that had an approval request.
        seen: Tool call IDs of results ``reviewed`` was read after.
        shown: What ``waiting`` last drew, if it is still the message's latest drawing:
            the unreviewed counts and each request's ID, state, revision and ts.
    """

    run: Run
    progress: Progress
    messages: Sequence[Any] = ()
    unread: bool = False
    stale: bool = False
    sent_at: float = float("-inf")
    drawer: asyncio.Task[None] | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    reviewed: set[str] = field(default_factory=set)
    seen: set[str] = field(default_factory=set)
    shown: tuple[Any, ...] | None = None


class ProgressReporter:
    """Draws runs' first messages as they progress, throttled per message, off the
    graph's path.

    Args:
        store: The approval store (which calls were reviewed; the cards waited on).
        slack: The Slack gateway.
        interval_s: See ``PROGRESS_INTERVAL_S``.
    """

    def __init__(
        self, *, store: ApprovalStore, slack: Slack, interval_s: float = PROGRESS_INTERVAL_S
    ) -> None:
        self.store = store
        self.slack = slack
        self.interval_s = interval_s
        self._lines: OrderedDict[str, _Line] = OrderedDict()
        self._links: dict[tuple[str, str], str] = {}
        self._drawers: set[asyncio.Task[None]] = set()  # kept until they end (evicted too)

    async def step(self, run: Run, messages: Sequence[Any]) -> None:
        """See ``agent_bridge.progress.ProgressHook.step``: thinking or running tools.

        Returns at once, waiting on neither the store nor Slack: the line's drawer
        reads and draws the latest step.
        """
        line = self._line(run)
        line.messages = messages
        line.unread = True
        line.shown = None  # the next drawing is this step's
        self._wake(line)

    async def waiting(self, run: Run, messages: Sequence[Any]) -> None:
        """See ``agent_bridge.progress.ProgressHook.waiting``: the run's pending cards,
        linked, and the tools that ran without review (counted in ``messages``, the
        checkpoint's, against all the run's requests: right in a worker that never
        streamed the run).

        Drawn now, after the update in flight and instead of the steps not drawn yet (all
        older), whatever the throttle (it coalesces a stream's steps; this is a drive's
        last drawing): the drive's lease is held until it has landed, so it never lands
        after what the run's next drive, maybe another worker's, draws. If the requests
        cannot be read, the drawer is stopped all the same (a step it held back must not
        land after the next drive's drawing) and nothing is drawn.

        Not drawn when this process last drew the same (a sweep driving a run whose card
        cannot be posted, a drive that changed nothing): the same counts, and every
        request of the run at the same state, revision and ``ts``. Revisions only grow,
        and another worker draws something else over the message only in a stream, which
        follows a change of a request's state (decided, then applied); a drive cut before
        its end (``Run.drives_before``) may have drawn anything, so after one it is drawn.
        Links are fetched for the cards shown (``CARDS_SHOWN_MAX``); one whose fetch
        failed for a passing reason is fetched and drawn again by the next drive. (Another
        worker's drawing of the same state whose fetch failed stays until the state
        changes or that worker drives again: the cards themselves are unaffected.)
        """
        line = self._line(run)
        try:
            requests = await self.store.requests_for_run(run.run_id)
        except StoreUnavailableError as exc:
            logger.warning("run=%s waiting cards not read: %s", run.run_id, exc)
            async with line.lock:
                if self._lines.get(run.run_id) is line:
                    await self._take_over(line)
            return
        unreviewed = progress_of(messages, reviewed=reviewed_calls(requests)).unreviewed
        shown = (
            unreviewed,
            tuple((r.request_id, r.state, r.revision, r.message_ts) for r in requests),
        )
        if line.shown == shown and not run.drives_before:
            return
        pending = [
            r for r in requests if r.state == ApprovalState.PENDING and r.message_ts is not None
        ]
        cards: list[WaitingCard] = []
        settled = True
        for index, request in enumerate(pending):
            link = None
            if index < CARDS_SHOWN_MAX:  # the others are counted, not linked
                link, found = await self._link(request)
                settled = settled and found
            cards.append(WaitingCard(request.tool_name, link))
        async with line.lock:
            if self._lines.get(run.run_id) is not line:
                return  # ended meanwhile: its final drawing stands
            await self._take_over(line)
            line.progress = Progress(Phase.WAITING, unreviewed=unreviewed, waiting=tuple(cards))
            if await self._send(line) and settled:
                line.shown = shown

    async def _take_over(self, line: _Line) -> None:
        """Stop ``line``'s drawer and drop what it had left to draw; the caller holds
        ``line.lock`` (no update is in flight)."""
        await self._stop(line)
        line.messages, line.unread, line.stale = (), False, False  # a waiting run keeps none
        line.shown = None

    async def final(self, run: Run, *, strict: bool = False) -> None:
        """Draw ``run``'s first message done or failed (``run.state``) now, after the
        update in flight; nothing its drawer had left is drawn after it.

        Raises:
            SlackCallError: With ``strict``, a retryable failure (the run is driven
                again, so the first message does not stay on "Working on").
        """
        phase = Phase.FAILED if run.state == RunState.FAILED else Phase.DONE
        line = self._lines.pop(run.run_id, None)
        lock = line.lock if line is not None else asyncio.Lock()
        async with lock:
            if line is not None:
                await self._stop(line)
            try:
                await self._update(run, Progress(phase))
            except SlackCallError as exc:
                if strict and exc.retryable:
                    raise
                logger.warning("run=%s first message not redrawn: %s", run.run_id, exc)

    def abandon(self, run: Run) -> None:
        """See ``agent_bridge.progress.ProgressHook.abandon``: the drive of ``run`` was
        cut; its drawer is cancelled and its line forgotten, so nothing this process had
        left to draw lands after what the run's next drive (maybe another worker's)
        draws."""
        line = self._lines.pop(run.run_id, None)
        if line is not None and line.drawer is not None:
            line.drawer.cancel()

    def _line(self, run: Run) -> _Line:
        line = self._lines.get(run.run_id)
        if line is None:
            line = _Line(run=run, progress=Progress(Phase.THINKING))
            self._lines[run.run_id] = line
            while len(self._lines) > LINES_KEPT:
                _, old = self._lines.popitem(last=False)
                if old.drawer is not None:
                    old.drawer.cancel()
        line.run = run
        return line

    def _wake(self, line: _Line) -> None:
        """Start ``line``'s drawer unless it is running (it reads the latest step
        before it draws)."""
        if line.drawer is None or line.drawer.done():
            line.drawer = asyncio.create_task(
                self._draw(line), name=f"progress run={line.run.run_id}"
            )
            self._drawers.add(line.drawer)
            line.drawer.add_done_callback(self._drawers.discard)

    async def _stop(self, line: _Line) -> None:
        """Cancel ``line``'s drawer and wait until it has ended. The caller holds
        ``line.lock``, so the drawer is not updating the message."""
        drawer, line.drawer = line.drawer, None
        if drawer is not None and not drawer.done():
            drawer.cancel()
            await asyncio.wait({drawer})

    async def _draw(self, line: _Line) -> None:
        """The drawer: read and draw ``line``'s latest state until it is drawn or the
        line ends, at most one update per interval. Never raises: an error is logged
        (it would otherwise be lost with the task)."""
        try:
            while self._lines.get(line.run.run_id) is line and (line.unread or line.stale):
                if line.unread:
                    await self._read(line)
                    if not line.stale:
                        continue  # not read (the store failed): nothing new to draw
                wait_s = self._wait_s(line)
                if wait_s > 0:
                    await asyncio.sleep(wait_s)  # the steps meanwhile are read first
                    continue
                async with line.lock:
                    if self._lines.get(line.run.run_id) is line:  # not ended meanwhile
                        await self._send(line)
        except Exception:
            logger.exception("run=%s progress not drawn", line.run.run_id)

    async def _read(self, line: _Line) -> None:
        """Read ``line``'s latest step into its ``progress``; a store outage is logged
        and the step skipped (a later one is read again). The step's messages are let
        go once read (a waiting run keeps none); a step that came during the read stays
        unread, and one whose read was cut (``waiting``, ``final``) stays for them."""
        messages = line.messages
        try:
            await self._learn_reviewed(line, messages)
        except StoreUnavailableError as exc:
            logger.warning("run=%s progress not read: %s", line.run.run_id, exc)
            self._read_out(line, messages)
            return
        line.progress = progress_of(messages, reviewed=line.reviewed)
        line.stale = True
        self._read_out(line, messages)

    @staticmethod
    def _read_out(line: _Line, messages: Sequence[Any]) -> None:
        """``messages`` were read (or skipped): unless a newer step came meanwhile, the
        line has nothing unread and keeps no messages."""
        if line.messages is messages:
            line.unread, line.messages = False, ()

    def _wait_s(self, line: _Line) -> float:
        """Seconds until ``line`` may be drawn again (zero or less: now)."""
        return line.sent_at + self.interval_s - asyncio.get_running_loop().time()

    async def _send(self, line: _Line) -> bool:
        """Draw ``line``'s progress; the caller holds ``line.lock``. Returns whether it
        was drawn; a failure is logged. What ``waiting`` had shown is no longer known to
        be shown."""
        line.stale = False
        line.shown = None
        line.sent_at = asyncio.get_running_loop().time()
        try:
            await self._update(line.run, line.progress)
        except (SlackCallError, StoreUnavailableError) as exc:  # the workspace's token read
            logger.warning("run=%s progress not shown: %s", line.run.run_id, exc)
            return False
        return True

    async def _update(self, run: Run, progress: Progress) -> None:
        if run.thread_ts is None:
            return
        text, blocks = render_progress(run, progress)
        await self.slack.update_message(
            team_id=run.team_id,
            channel_id=run.channel_id,
            ts=run.thread_ts,
            text=text,
            blocks=blocks,
        )

    async def _learn_reviewed(self, line: _Line, messages: Sequence[Any]) -> None:
        """Which of the state's tool calls had an approval request (read when new
        ones appear)."""
        ids = {r.call_id for r in call_ids.results(messages)}
        if ids <= line.seen:
            return
        requests = await self.store.requests_for_run(line.run.run_id)
        line.reviewed |= reviewed_calls(requests)
        line.seen |= ids

    async def _link(self, request: ApprovalRequest) -> tuple[str | None, bool]:
        """The permalink of ``request``'s card (``chat.getPermalink``, remembered), and
        whether that is settled: ``(None, True)`` when Slack refused it for good (the
        message is gone), ``(None, False)`` for a passing failure."""
        channel_id, ts = request.channel_id, request.message_ts
        if channel_id is None or ts is None:
            return None, True
        key = (channel_id, ts)
        if key not in self._links:
            try:
                self._links[key] = await self.slack.permalink(
                    team_id=request.team_id, channel_id=channel_id, ts=ts
                )
            except SlackCallError as exc:
                logger.info("card %s link not found: %s", ts, exc)
                return None, not exc.retryable
            except StoreUnavailableError as exc:  # the workspace's token read
                logger.info("card %s link not found: %s", ts, exc)
                return None, False
            if len(self._links) > LINES_KEPT * 4:
                self._links.pop(next(iter(self._links)))
        return self._links[key], True

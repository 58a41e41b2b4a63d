"""The live progress message: a run's first message redrawn as the agent works.

``ProgressReporter`` is the driver's ``ProgressHook`` (each step of the stream) and the
notifier's way to the first message (waiting for approval when cards are posted; done
and failed at the end). Updates of one message are throttled to one ``chat.update`` per
``PROGRESS_INTERVAL_S`` (Slack: about one update per second per message, and
``chat.update`` is Tier 3): a step that comes sooner is kept as the latest state and
drawn when the interval is over (a burst of steps is one update, showing its last
state). The final state is never dropped: ``final`` cancels what is waiting and draws
done or failed at once, after any update in flight, so nothing older lands after it.
A progress update that fails is logged (progress is only ever shown); the final one
raises as the notifier asks.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import ToolMessage

from agent_bridge.errors import StoreUnavailableError
from agent_bridge.models import ApprovalState, Run, RunState
from agent_bridge.progress import Phase, Progress, WaitingCard, progress_of
from agent_bridge.store import ApprovalStore
from bot.errors import SlackCallError
from bot.progress_blocks import render_progress
from bot.slack_gateway import Slack

logger = logging.getLogger(__name__)

PROGRESS_INTERVAL_S = 1.0
"""Shortest gap between two updates of one run's first message, seconds."""
LINES_KEPT = 1000
"""Runs whose progress this process remembers (older ones start afresh)."""


@dataclass
class _Line:
    """One run's first message: what it should show and when it was last drawn."""

    run: Run
    progress: Progress
    sent_at: float = float("-inf")
    due: asyncio.Task[None] | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    reviewed: set[str] = field(default_factory=set)
    seen: set[str] = field(default_factory=set)


class ProgressReporter:
    """Draws runs' first messages as they progress, throttled per message.

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

    async def step(self, run: Run, messages: Sequence[Any]) -> None:
        """See ``agent_bridge.progress.ProgressHook.step``: thinking or running tools."""
        line = self._line(run)
        try:
            await self._learn_reviewed(line, messages)
        except StoreUnavailableError as exc:
            logger.warning("run=%s progress not read: %s", run.run_id, exc)
            return
        await self._show(line, progress_of(messages, reviewed=line.reviewed))

    async def waiting(self, run: Run) -> None:
        """The run waits for approval: show its pending cards, linked."""
        line = self._line(run)
        try:
            requests = await self.store.requests_for_run(run.run_id)
        except StoreUnavailableError as exc:
            logger.warning("run=%s waiting cards not read: %s", run.run_id, exc)
            return
        cards = [
            WaitingCard(r.tool_name, await self._link(r.team_id, r.channel_id, r.message_ts))
            for r in requests
            if r.state == ApprovalState.PENDING and r.message_ts is not None
        ]
        unreviewed = line.progress.unreviewed
        await self._show(line, Progress(Phase.WAITING, unreviewed=unreviewed, waiting=tuple(cards)))

    async def final(self, run: Run, *, strict: bool = False) -> None:
        """Draw ``run``'s first message done or failed (``run.state``) now, after any
        update in flight; nothing waiting is drawn after it.

        Raises:
            SlackCallError: With ``strict``, a retryable failure (the run is driven
                again, so the first message does not stay on "Working on").
        """
        phase = Phase.FAILED if run.state == RunState.FAILED else Phase.DONE
        line = self._lines.pop(run.run_id, None)
        if line is not None and line.due is not None:
            line.due.cancel()
        lock = line.lock if line is not None else asyncio.Lock()
        async with lock:
            try:
                await self._update(run, Progress(phase))
            except SlackCallError as exc:
                if strict and exc.retryable:
                    raise
                logger.warning("run=%s first message not redrawn: %s", run.run_id, exc)

    def _line(self, run: Run) -> _Line:
        line = self._lines.get(run.run_id)
        if line is None:
            line = _Line(run=run, progress=Progress(Phase.THINKING))
            self._lines[run.run_id] = line
            while len(self._lines) > LINES_KEPT:
                _, old = self._lines.popitem(last=False)
                if old.due is not None:
                    old.due.cancel()
        line.run = run
        return line

    async def _show(self, line: _Line, progress: Progress) -> None:
        """Draw ``progress`` now if the interval is over, else once it is."""
        line.progress = progress
        if line.due is not None:
            return  # drawn when due, with the latest state
        wait = line.sent_at + self.interval_s - asyncio.get_running_loop().time()
        if wait > 0:
            line.due = asyncio.create_task(self._later(line, wait))
            return
        await self._send(line)

    async def _later(self, line: _Line, wait: float) -> None:
        await asyncio.sleep(wait)
        line.due = None
        await self._send(line)

    async def _send(self, line: _Line) -> None:
        async with line.lock:
            if self._lines.get(line.run.run_id) is not line:
                return  # ended meanwhile: its final drawing stands
            line.sent_at = asyncio.get_running_loop().time()
            try:
                await self._update(line.run, line.progress)
            except SlackCallError as exc:
                logger.warning("run=%s progress not shown: %s", line.run.run_id, exc)

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
        ids = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
        if ids <= line.seen:
            return
        requests = await self.store.requests_for_run(line.run.run_id)
        line.reviewed |= {r.tool_call_id for r in requests if r.tool_call_id}
        line.seen |= ids

    async def _link(
        self, team_id: str | None, channel_id: str | None, ts: str | None
    ) -> str | None:
        """A card's permalink (``chat.getPermalink``, remembered); ``None`` on failure."""
        if channel_id is None or ts is None:
            return None
        key = (channel_id, ts)
        if key not in self._links:
            try:
                self._links[key] = await self.slack.permalink(
                    team_id=team_id, channel_id=channel_id, ts=ts
                )
            except SlackCallError as exc:
                logger.info("card %s link not found: %s", ts, exc)
                return None
            if len(self._links) > LINES_KEPT * 4:
                self._links.pop(next(iter(self._links)))
        return self._links[key]

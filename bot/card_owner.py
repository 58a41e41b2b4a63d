"""The one owner of approval cards: posts them, redraws them from fresh state, re-posts
the deleted ones.

Both processes go through it: the web process after a decision, the worker after a
reopen, an expiry, a failed run or before a reminder. Every redraw reads the request,
its interrupt's siblings and its run from the store first and draws with
``bot.cards.draw_card``, so a card reads the same whoever redraws it. A pending card
whose message is gone (someone deleted it) is posted again wherever that is noticed,
in both interrupt modes.

A card posted outside its run's Slack thread (a tool's ``channel``, ``APPROVALS_CHANNEL``)
leaves a one-line pointer with its permalink in the run's thread; the pointer is redrawn
with the outcome once the card is decided (``bot.review_blocks.render_pointer``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from agent_bridge import log_context
from agent_bridge.models import ApprovalRequest, ApprovalState, Run
from agent_bridge.store import ApprovalStore
from bot.cards import draw_card
from bot.errors import MessageGoneError, SlackCallError
from bot.outbox import Outbox, metadata_key
from bot.review_blocks import render_pointer
from bot.slack_gateway import Slack

logger = logging.getLogger(__name__)

REDRAW_ROUNDS_MAX = 3
"""Most times ``redraw`` draws a card again because its batch changed while it drew."""
SIBLING_REDRAW_MAX = 10
"""Largest batch whose pending cards are all redrawn after a change to one of them:
redrawing every sibling on every click costs m² ``chat.update`` calls, and the method is
rate limited (Tier 3, about 50 a minute)."""


def card_key(request_id: str) -> str:
    """The outbox key of a request's card within its run."""
    return f"card:{request_id}"


def pointer_key(request_id: str) -> str:
    """The outbox key of the pointer to a request's card in its run's Slack thread."""
    return f"pointer:{request_id}"


class CardOwner:
    """Posts and redraws approval cards.

    Args:
        store: Where requests, their messages and runs are kept.
        slack: The Slack gateway.
        on_change: Told of each request whose card was posted or redrawn (the App Home
            inboxes, ``bot.home.HomePublisher.request_changed``); it must return at once.
    """

    def __init__(
        self,
        *,
        store: ApprovalStore,
        slack: Slack,
        on_change: Callable[[ApprovalRequest], None] | None = None,
    ) -> None:
        self.store = store
        self.slack = slack
        self.outbox = Outbox(store=store, slack=slack)
        self.on_change = on_change

    @log_context.request_ids
    async def post(self, request: ApprovalRequest, run: Run) -> ApprovalRequest:
        """Post ``request``'s card once and record where it is.

        Through the outbox: a card a dead worker posted without recording its ``ts`` is
        found by its metadata and adopted, never posted twice. If the request changed
        while the card was being posted (a reviewer clicked an adopted card before it
        was recorded), the card is redrawn at once.

        Args:
            request: A stored request without a message yet.
            run: Its run (the card goes to ``request.channel_id`` or the run's channel).

        Returns:
            The request with ``channel_id`` and ``message_ts`` set.

        Raises:
            SlackCallError: Slack did not take the card; nothing was recorded.
        """
        siblings = await self.store.requests_for_interrupt(request.interrupt_id)
        current = next((r for r in siblings if r.request_id == request.request_id), request)
        posted_at = self.store.clock()
        current = current.posted_at(posted_at)  # its first drawing shows its time limit
        channel_id = current.channel_id or run.channel_id
        if _elsewhere(current, run) and run.thread_link is None:
            run = await self._link_thread(run)
        text, blocks = draw_card(current, siblings, run)
        card = await self.outbox.post_once(
            run,
            card_key(current.request_id),
            channel_id=channel_id,
            text=text,
            blocks=blocks,
            thread_ts=current.thread_ts,
        )
        await self.store.set_message(
            current.request_id,
            channel_id=channel_id,
            message_ts=card.ts,
            posted_at=posted_at,
            adopted=not card.now,
        )
        posted = current.model_copy(update={"channel_id": channel_id, "message_ts": card.ts})
        if _elsewhere(posted, run) and posted.pointer_ts is None:
            await self._point(posted, run)
        if not card.now:
            # adopted: drawn by a dead worker (its time limit counted from now, a reviewer
            # may have decided it): lagging until this redraw, or time-keeping's, lands
            return await self.redraw(current.request_id, siblings=False) or posted
        revisions = await self.store.mark_drawn(current)  # and its batch as it is now
        if revisions != {r.request_id: r.revision for r in siblings}:
            # its batch changed while it was posted (its progress, or itself): draw anew
            return await self.redraw(current.request_id, siblings=False) or posted
        self._changed(posted)
        return posted

    async def _link_thread(self, run: Run) -> Run:
        """``run`` with the permalink of its first message, fetched and kept once, so a
        card posted elsewhere links back to the run; a failure is logged (the card still
        names the run)."""
        if run.thread_ts is None:
            return run
        try:
            link = await self.slack.permalink(
                team_id=run.team_id, channel_id=run.channel_id, ts=run.thread_ts
            )
        except SlackCallError as exc:
            logger.warning("run=%s no permalink of its Slack thread: %s", run.run_id, exc)
            return run
        await self.store.set_run_thread_link(run.run_id, link)
        return run.model_copy(update={"thread_link": link})

    async def _point(self, request: ApprovalRequest, run: Run) -> None:
        """Post, once (through the outbox), the pointer to a card posted elsewhere in the
        run's Slack thread; a failure is logged (the card itself is posted and mentions
        its approvers)."""
        assert request.channel_id is not None and request.message_ts is not None
        try:
            link = await self.slack.permalink(
                team_id=run.team_id, channel_id=request.channel_id, ts=request.message_ts
            )
        except SlackCallError as exc:
            logger.warning(
                "run=%s request=%s no permalink: %s", run.run_id, request.request_id, exc
            )
            link = None
        text, blocks = render_pointer(request.redacted(), link=link)
        try:
            pointer = await self.outbox.post_once(
                run,
                pointer_key(request.request_id),
                channel_id=run.channel_id,
                text=text,
                blocks=blocks,
                thread_ts=run.thread_ts,
            )
        except SlackCallError as exc:
            logger.warning(
                "run=%s request=%s pointer not posted: %s", run.run_id, request.request_id, exc
            )
            return
        await self.store.set_pointer(request.request_id, pointer_ts=pointer.ts, card_link=link)

    async def redraw(
        self,
        request_id: str,
        *,
        siblings: bool = True,
        known: ApprovalRequest | None = None,
        run: Run | None = None,
    ) -> ApprovalRequest | None:
        """Redraw the request's card from the store's current state and, with
        ``siblings`` (its interrupt's progress changed), its pending siblings in a batch of
        up to ``SIBLING_REDRAW_MAX``.

        Ordered: after drawing, the batch's revisions are read again (two columns, as
        the last card drawn is marked so: ``ApprovalStore.mark_drawn``), and the batch
        read and drawn again if they changed meanwhile (up to
        ``REDRAW_ROUNDS_MAX`` times), so a redraw from older state that
        lands after a newer one is always followed by a newer one. What still lags (a
        process died between a change and its redraw) the worker's sweep redraws
        (``drawn_revision`` < ``revision``). Slack failures are logged, not raised: what
        changed is already recorded.

        The run is read once, or not at all when the caller gives it: what a card shows
        of it (task, requester, thread) is set before its first card is posted, but for
        its Slack thread, so a run given without the thread (as claimed, before its
        drive posted it), or without the thread's link for a card posted outside the
        thread, is read again.

        Args:
            request_id: The request whose card to redraw.
            siblings: Whether its batch's pending cards are redrawn too.
            known: The request as the caller last read or wrote it, if it has it. Its run
                and interrupt are used, which never change; alone in its batch
                (``batch_size`` 1), it is also drawn as it is, without reading the batch:
                the revisions read as it is marked drawn say whether the store has
                changed since, and if so the card is drawn again from a fresh read.
            run: The request's run, if the caller has it.

        Returns:
            The request as it is now on Slack (``message_ts`` changes when its deleted
            card was posted again), or ``None`` if there is no such request.
        """
        first = known if known is not None else await self.store.get_request(request_id)
        if first is None:
            return None
        run, batch = await self._run_and_batch(first, known is not None, run)
        drawn: ApprovalRequest | None = None
        seen: dict[str, int] | None = None
        after: dict[str, int] | None = None  # the revisions as the last card was marked
        for round_ in range(REDRAW_ROUNDS_MAX):
            if round_:  # drawn once: read again only if the batch changed meanwhile
                if after is None:
                    after = await self.store.interrupt_revisions(first.interrupt_id)
                if after == seen:
                    break
                batch = await self.store.requests_for_interrupt(first.interrupt_id)
            revisions = {r.request_id: r.revision for r in batch}
            # a request is in its interrupt's batch (interrupt IDs never change)
            request = next((r for r in batch if r.request_id == request_id), None)
            if request is None:
                return None
            targets = [request]
            if siblings and len(batch) <= SIBLING_REDRAW_MAX:
                # pending siblings show the batch's progress; and a sibling drawn in an
                # earlier round that changed since must be drawn again, decided or not
                targets += [
                    r
                    for r in batch
                    if r.request_id != request_id
                    and (
                        r.state == ApprovalState.PENDING
                        or (seen is not None and seen.get(r.request_id) != r.revision)
                    )
                ]
            seen = revisions
            drawn, after = await self._redraw_one(request, batch, run)
            for sibling in targets[1:]:
                _, after = await self._redraw_one(sibling, batch, run)
        if drawn is not None:
            await self._redraw_pointer(drawn, run)
            self._changed(drawn)
        return drawn

    async def _run_and_batch(
        self, first: ApprovalRequest, given: bool, run: Run | None
    ) -> tuple[Run, list[ApprovalRequest]]:
        """What ``redraw`` draws from: ``first``'s run and its interrupt's batch, each
        read unless the caller gave it (``given``: ``first`` is the caller's own)."""
        if run is not None and run.run_id != first.run_id:
            run = None
        if given and first.batch_size == 1:
            batch = [first]
        elif run is None:
            return await asyncio.gather(  # two reads, neither needing the other
                self.store.get_run(first.run_id),
                self.store.requests_for_interrupt(first.interrupt_id),
            )
        else:
            batch = await self.store.requests_for_interrupt(first.interrupt_id)
        if run is None or not _shows_thread(run, batch):
            run = await self.store.get_run(first.run_id)
        return run, batch

    def _changed(self, request: ApprovalRequest) -> None:
        if self.on_change is not None:
            self.on_change(request)

    async def _redraw_pointer(self, request: ApprovalRequest, run: Run) -> None:
        """Show the card's outcome, escalation or reminder on its pointer in the run's
        thread; a pending request's pointer as posted needs no redraw, unless it was
        reopened (``note`` set: the pointer may show the outcome it had)."""
        if request.pointer_ts is None:
            return
        pending = request.state == ApprovalState.PENDING
        as_posted = request.escalated_at is None and request.reminded_at is None
        if pending and as_posted and not request.note:
            return
        text, blocks = render_pointer(request.redacted(), link=request.card_link)
        try:
            await self.slack.update_message(
                team_id=run.team_id,
                channel_id=run.channel_id,
                ts=request.pointer_ts,
                text=text,
                blocks=blocks,
            )
        except SlackCallError as exc:
            logger.warning(
                "run=%s request=%s pointer not redrawn: %s", run.run_id, request.request_id, exc
            )

    @log_context.request_ids
    async def _redraw_one(
        self, request: ApprovalRequest, batch: list[ApprovalRequest], run: Run
    ) -> tuple[ApprovalRequest, dict[str, int] | None]:
        """Draw ``request``'s card from ``batch`` and mark it drawn.

        Returns:
            The request as it is on Slack, and its batch's revisions as read when it was
            marked drawn (``ApprovalStore.mark_drawn``), or ``None`` if it was not.
        """
        if request.channel_id is None or request.message_ts is None:
            return request, None  # never posted: the worker's sweep posts it
        text, blocks = draw_card(request, batch, run)
        try:
            await self.slack.update_message(
                team_id=run.team_id,
                channel_id=request.channel_id,
                ts=request.message_ts,
                text=text,
                blocks=blocks,
            )
        except MessageGoneError:
            if request.state == ApprovalState.PENDING:
                return await self._repost(request, run), None
            return request, await self.store.mark_drawn(request)  # nothing to draw
        except SlackCallError as exc:
            logger.warning(
                "run=%s interrupt=%s request=%s card not redrawn: %s",
                request.run_id,
                request.interrupt_id,
                request.request_id,
                exc,
            )
            if not exc.retryable:  # Slack will never take it: do not retry every sweep
                return request, await self.store.mark_drawn(request)
            return request, None
        return request, await self.store.mark_drawn(request)

    async def _repost(self, gone: ApprovalRequest, run: Run) -> ApprovalRequest:
        """Post again a pending card someone deleted, so the request can still be decided.

        Only from fresh state, and only once: a re-post already in Slack after the
        deleted card (its answer lost, or its ``ts`` not recorded) is found by its key and
        recorded instead of posting another; the new message is recorded with a
        compare-and-set on the old one, and a process that loses that race deletes its
        own post. A request decided while its card was being posted again is redrawn at
        once, so no live buttons remain.
        """
        assert gone.channel_id is not None and gone.message_ts is not None
        current = await self.store.get_request(gone.request_id)
        if current is None or current.state != ApprovalState.PENDING:
            return current or gone
        if current.message_ts != gone.message_ts:
            return current  # someone else posted it again already
        batch = await self.store.requests_for_interrupt(current.interrupt_id)
        text, blocks = draw_card(current, batch, run)
        key = metadata_key(run.run_id, card_key(current.request_id))
        try:
            # a re-post whose answer was lost (a 503 after Slack posted), or whose ts was
            # never recorded, is the one to record: another would leave a card whose
            # buttons nobody's click is taken from
            found = await self.slack.find_message(
                team_id=run.team_id,
                channel_id=gone.channel_id,
                key=key,
                thread_ts=current.thread_ts,
                oldest=float(gone.message_ts),
            )
            ts = found or await self.slack.post_message(
                team_id=run.team_id,
                channel_id=gone.channel_id,
                text=text,
                blocks=blocks,
                thread_ts=current.thread_ts,
                key=key,
            )
        except SlackCallError as exc:
            logger.warning(
                "run=%s request=%s deleted card not re-posted: %s", run.run_id, gone.request_id, exc
            )
            return current
        if not await self.store.move_message(
            gone.request_id, old_ts=gone.message_ts, message_ts=ts
        ):
            if found is None:  # our own post lost the race: the winner's stays
                await self._take_back(run, gone.channel_id, ts)
            return await self.store.get_request(gone.request_id) or current
        logger.info("run=%s request=%s deleted card re-posted", run.run_id, gone.request_id)
        moved = await self.store.get_request(gone.request_id) or current
        if moved.state != ApprovalState.PENDING:
            batch = await self.store.requests_for_interrupt(moved.interrupt_id)
            return (await self._redraw_one(moved, batch, run))[0]
        return moved

    async def _take_back(self, run: Run, channel_id: str, ts: str) -> None:
        """Delete a re-post that lost the race to another one."""
        try:
            await self.slack.delete_message(team_id=run.team_id, channel_id=channel_id, ts=ts)
        except SlackCallError as exc:
            logger.warning("run=%s duplicate re-post %s not deleted: %s", run.run_id, ts, exc)


def _shows_thread(run: Run, batch: list[ApprovalRequest]) -> bool:
    """Whether a caller's ``run`` knows all a card of ``batch`` shows of the run's Slack
    thread: a run as it was claimed, before its drive posted the thread, does not; nor
    one without the thread's link, for a card outside the thread."""
    if run.thread_ts is None:
        return False
    return run.thread_link is not None or not any(_elsewhere(r, run) for r in batch)


def _elsewhere(request: ApprovalRequest, run: Run) -> bool:
    """Whether the card is outside the run's own Slack thread (so it leaves a pointer)."""
    return run.thread_ts is not None and (
        request.channel_id != run.channel_id or request.thread_ts != run.thread_ts
    )

"""The App Home tab: each reviewer's inbox, published with ``views.publish``.

Published when the user opens the tab (``app_home_opened``: ack first, then publish)
and again when a request they may decide is created or decided: the card owner tells
``HomePublisher.request_changed`` after every post and redraw, in the web process and
in the worker alike. Republishing is debounced per user (``HOME_DEBOUNCE_S``: a burst of
changes is one ``views.publish`` drawn from the state after it), done by one background
task, one Home at a time, so it never takes more than one database connection from the
clicks, and paced to Slack's limit for ``views.publish`` (Tier 4, 100+ a minute:
``PUBLISH_INTERVAL_S``).

Who is listed is the guard's rule (``Guard.may_decide`` over ``bot.authorization``),
checked per request for the viewer; whose Home a change touches: the request's
approvers (and backups once escalated), whoever acted on a request in the workspace
lately (``Inbox.recent_reviewers``, for requests anyone may decide), whoever opened the
tab in this process, and the person who decided it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from slack_bolt.async_app import AsyncApp

from agent_bridge import home_wording
from agent_bridge.errors import StoreUnavailableError
from agent_bridge.inbox import Inbox
from agent_bridge.models import ApprovalRequest
from agent_bridge.store import ApprovalStore
from bot.actions import Ack
from bot.authorization import Actor, Installation, backup_ids
from bot.errors import PayloadError, SlackCallError
from bot.guard import Guard, installation_of
from bot.home_blocks import InboxItem, render_home
from bot.mrkdwn import text_object
from bot.payloads import HomeOpenedCallback, parse
from bot.slack_gateway import Slack

logger = logging.getLogger(__name__)

HOME_DEBOUNCE_S = 0.5
"""How long a change waits for others before the user's Home is republished, seconds."""
PUBLISH_INTERVAL_S = 0.6
"""Shortest gap between two ``views.publish`` calls of this process, seconds (100 a
minute: Tier 4, https://docs.slack.dev/reference/methods/views.publish)."""
VIEWERS_KEPT = 1000
LINKS_KEPT = 2000
REVIEWERS_TTL_S = 60.0
"""How long the workspace's recent reviewers are reused before they are read again,
seconds."""
"""Users who opened the tab, and card permalinks, remembered by this process."""


class HomePublisher:
    """Draws and publishes users' Home inboxes.

    Args:
        store: The approval store.
        slack: The Slack gateway.
        guard: Says who may decide what (``Guard.may_decide``).
        clock: Unix time in seconds (ages, windows).
        debounce_s: See ``HOME_DEBOUNCE_S``.
        publish_interval_s: See ``PUBLISH_INTERVAL_S``.
    """

    def __init__(
        self,
        *,
        store: ApprovalStore,
        slack: Slack,
        guard: Guard,
        clock: Callable[[], float] = time.time,
        debounce_s: float = HOME_DEBOUNCE_S,
        publish_interval_s: float = PUBLISH_INTERVAL_S,
    ) -> None:
        self.store = store
        self.slack = slack
        self.guard = guard
        self.inbox = Inbox(db=store.db, clock=clock)
        self.clock = clock
        self.debounce_s = debounce_s
        self.publish_interval_s = publish_interval_s
        self.viewers: OrderedDict[tuple[str | None, str], None] = OrderedDict()
        self._links: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._changed: dict[str, ApprovalRequest] = {}
        self._dirty: OrderedDict[tuple[str | None, str], None] = OrderedDict()
        self._reviewers_read: dict[str | None, tuple[float, list[str]]] = {}
        self._runner: asyncio.Task[None] | None = None
        self._next_slot = 0.0

    def register(self, app: AsyncApp) -> None:
        """Attach the ``app_home_opened`` listener to ``app``."""
        app.event("app_home_opened")(self.on_home_opened)

    async def on_home_opened(self, ack: Ack, body: dict[str, Any], context: Any) -> None:
        """Publish the viewer's inbox (Events API ``app_home_opened``, ``tab: home``)."""
        await ack()
        try:
            event = parse(HomeOpenedCallback, body).event
        except PayloadError as exc:
            logger.warning("%s", exc)
            return
        installation = installation_of(context)
        if event.tab != "home" or installation.team_id is None:
            return
        self._remember(installation.team_id, event.user)
        await self.publish(event.user, installation=installation)

    def request_changed(self, request: ApprovalRequest) -> None:
        """Schedule the republishing of every Home ``request`` shows on, or should
        (called by ``CardOwner`` after a post or redraw; returns at once)."""
        self._changed[request.request_id] = request
        if self._runner is None or self._runner.done():
            self._runner = asyncio.create_task(self._run())

    async def idle(self) -> None:
        """Return once every change told so far is published (or failed and logged)."""
        while self._runner is not None and not self._runner.done():
            await asyncio.shield(self._runner)

    async def publish(self, user_id: str, *, installation: Installation) -> None:
        """Draw ``user_id``'s inbox from the store now and publish it; a database outage
        publishes a note saying so, a Slack failure is logged."""
        try:
            view = await self._draw(user_id, installation)
        except StoreUnavailableError as exc:
            logger.warning("Home of %s not drawn: %s", user_id, exc)
            view = _unavailable_view(user_id)
        await self._pace()
        try:
            await self.slack.publish_home(team_id=installation.team_id, user_id=user_id, view=view)
        except SlackCallError as exc:
            logger.warning("Home of %s not published: %s", user_id, exc)

    async def _draw(self, user_id: str, installation: Installation) -> dict[str, Any]:
        """The Home of ``user_id``: nothing of this workspace for a person of another
        (a Slack Connect guest), or one Slack would not place (fails closed)."""
        home_team = await self.guard.directory.team_of(installation.team_id, user_id)
        if home_team is None or home_team != installation.team_id:
            return render_home(user_id, pending=[], decided=[], now=self.clock())
        actor = Actor(
            user_id=user_id,
            team_id=installation.team_id,
            enterprise_id=installation.enterprise_id,
        )
        items = []
        for request in await self.inbox.pending(installation.team_id):
            if await self.guard.may_decide(actor, request, installation=installation):
                items.append(InboxItem(request, await self._link(request)))
        decided = await self.inbox.decided_by(user_id, installation.team_id)
        return render_home(user_id, pending=items, decided=decided, now=self.clock())

    async def _run(self) -> None:
        """Republish what changed, one Home at a time (one database connection and one
        ``views.publish`` at a time, off the click path): after a burst of changes has
        settled (``debounce_s``), find whose Homes they concern, then publish each once."""
        while self._changed or self._dirty:
            if self._changed:
                await asyncio.sleep(self.debounce_s)
                batch = list(self._changed.values())
                self._changed.clear()
                for request in batch:
                    await self._touch(request)
            while self._dirty and not self._changed:
                team_id, user_id = self._dirty.popitem(last=False)[0]
                await self.publish(user_id, installation=Installation(team_id=team_id))

    async def _touch(self, request: ApprovalRequest) -> None:
        """Mark dirty the Homes ``request`` concerns (see the module's docstring)."""
        team_id = request.team_id
        installation = Installation(team_id=team_id)
        try:
            candidates = set(await self._reviewers(team_id))
            named = (*(request.rules.approvers or ()), *backup_ids(request))
            if named:
                candidates |= (await self.guard.directory.members(team_id, named)).users
        except StoreUnavailableError as exc:
            logger.warning("request=%s Homes not refreshed: %s", request.request_id, exc)
            return
        candidates |= {user for team, user in self.viewers if team == team_id}
        for user_id in sorted(candidates):
            actor = Actor(user_id=user_id, team_id=team_id)
            shown = await self.guard.may_decide(actor, request, installation=installation)
            if shown or user_id == request.decided_by or user_id in request.approved_by:
                self._dirty[(team_id, user_id)] = None
        if request.decided_by is not None:
            self._dirty[(team_id, request.decided_by)] = None

    async def _reviewers(self, team_id: str | None) -> list[str]:
        """``Inbox.recent_reviewers``, read at most once per ``REVIEWERS_TTL_S``."""
        now = self.clock()
        cached = self._reviewers_read.get(team_id)
        if cached is not None and now - cached[0] < REVIEWERS_TTL_S:
            return cached[1]
        reviewers = await self.inbox.recent_reviewers(team_id)
        self._reviewers_read[team_id] = (now, reviewers)
        return reviewers

    async def _pace(self) -> None:
        """Wait for this process's next ``views.publish`` slot."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        slot = max(now, self._next_slot)
        self._next_slot = slot + self.publish_interval_s
        if slot > now:
            await asyncio.sleep(slot - now)

    async def _link(self, request: ApprovalRequest) -> str | None:
        """The card's permalink (``chat.getPermalink``, remembered per message)."""
        if request.channel_id is None or request.message_ts is None:
            return None
        key = (request.channel_id, request.message_ts)
        if key in self._links:
            return self._links[key]
        try:
            link = await self.slack.permalink(team_id=request.team_id, channel_id=key[0], ts=key[1])
        except SlackCallError as exc:
            logger.info("request=%s card link not found: %s", request.request_id, exc)
            return None
        self._links[key] = link
        while len(self._links) > LINKS_KEPT:
            self._links.popitem(last=False)
        return link

    def _remember(self, team_id: str | None, user_id: str) -> None:
        self.viewers[(team_id, user_id)] = None
        self.viewers.move_to_end((team_id, user_id))
        while len(self.viewers) > VIEWERS_KEPT:
            self.viewers.popitem(last=False)


def _unavailable_view(user_id: str) -> dict[str, Any]:
    """The Home view saying the inbox cannot be read now."""
    view = render_home(user_id, pending=[], decided=[], now=0.0)
    view["blocks"] = [{"type": "section", "text": text_object(home_wording.HOME_UNAVAILABLE)}]
    return view

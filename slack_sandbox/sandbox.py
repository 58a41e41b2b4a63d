"""The :class:`Sandbox`: a local fake Slack, and the API tests and the demo drive it by.

Example:
    sandbox = Sandbox(signing_secret="s", bot_token="xoxb-1", request_url=bot_url)
    await sandbox.start()
    client = AsyncWebClient(token="xoxb-1", base_url=sandbox.api_url)
    ...
    await sandbox.click(channel_id=..., ts=..., action_id="approval:approve", user_id=...)
    assert sandbox.violations == []
    await sandbox.stop()
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from typing import Any

from aiohttp import web

from slack_sandbox.acting import Acting
from slack_sandbox.conversing import Conversing
from slack_sandbox.core import Core, Failure
from slack_sandbox.delivery import ACK_DEADLINE_S, Delivery
from slack_sandbox.errors import SandboxError
from slack_sandbox.events import Events
from slack_sandbox.interactions import Interactions
from slack_sandbox.oauth import SESSION_COOKIE, OAuthApp
from slack_sandbox.server import Server, build_app
from slack_sandbox.socket_mode import SocketMode
from slack_sandbox.stalls import Stall
from slack_sandbox.state import (
    DEFAULT_CHANNELS,
    DEFAULT_USERS,
    OTHER_APP_ID,
    OTHER_BOT_ID,
    OTHER_BOT_USER_ID,
    Clock,
    Workspace,
)


class Sandbox(Acting):
    """A fake Slack workspace serving the Web API, delivering interactions, showing a page.

    What people do (``slash_command``, ``click``, ``submit_view``, ``mention``...) is
    in :class:`~slack_sandbox.acting.Acting`; this class sets the world up (people,
    channels, user groups, failures) and shows it.

    Args:
        signing_secret: The app's signing secret; every delivery is signed with it.
        bot_token: The bot token of the app installed in this workspace; ``None``: not
            installed until an OAuth install issues one (``register_oauth_app``). Every
            token works only in its own workspace.
        request_url: The bot's ``POST /slack/events`` URL (settable later).
        team_id: The workspace's team ID.
        enterprise_id: The Enterprise Grid org of the workspace (``E…``), if any; then
            payloads carry ``enterprise`` and ``team.enterprise_id``.
        enterprise_name: The org's name (``enterprise_id`` in lower case when None).
        users: ``user_id -> name`` of the workspace's own people; reviewer, dba and
            alice when None. Add others (guests, bots) with :meth:`add_user`.
        channels: ``channel_id -> name``; general and approvals when None.
        clock: Unix time in seconds (message ``ts``, trigger and response URL expiry);
            tests pass a fake one to expire a trigger without sleeping. Signatures
            always use the real time, because the bot checks them against its own.
        ack_deadline_s: How long the bot may take to answer a delivery (Slack: 3 s);
            a later answer is recorded as a violation and, like Slack, not applied.
        app_token: The app's app-level token (``xapp-…``): the app is in Socket Mode,
            ``apps.connections.open`` accepts this token, and every delivery goes over
            the websocket it opens (``socket_mode``) instead of to ``request_url``.
        joins: Another workspace's sandbox this one is a second workspace of (see
            ``add_workspace``): its server, deliveries, records, OAuth app and Socket
            Mode side (its app-level token) are shared.
        bot_scopes: The scopes ``bot_token`` was granted, said on each Web API answer
            to it (Slack's ``x-oauth-scopes`` header); ``None``: not said.
    """

    def __init__(
        self,
        *,
        signing_secret: str,
        bot_token: str | None,
        request_url: str | None = None,
        team_id: str = "T0SANDBOX",
        enterprise_id: str | None = None,
        enterprise_name: str | None = None,
        users: dict[str, str] | None = None,
        channels: dict[str, str] | None = None,
        clock: Clock = time.time,
        ack_deadline_s: float = ACK_DEADLINE_S,
        app_token: str | None = None,
        joins: Sandbox | None = None,
        bot_scopes: Sequence[str] | None = None,
    ) -> None:
        self._first: Sandbox = joins._first if joins else self
        self._request_url = request_url
        self._oauth_app: OAuthApp | None = None
        self._peers: list[Sandbox] = [self]
        workspace = Workspace(
            team_id=team_id,
            users=DEFAULT_USERS if users is None else users,
            channels=DEFAULT_CHANNELS if channels is None else channels,
            clock=clock,
            enterprise_id=enterprise_id,
            enterprise_name=enterprise_name,
        )
        self._core: Core = Core(
            workspace=workspace,
            bot_token=bot_token,
            app_token=app_token,
            joins=joins._core if joins else None,
        )
        if bot_token is not None and bot_scopes is not None:
            self._core.scopes[bot_token] = ",".join(bot_scopes)
        if joins is not None:
            self._first._peers.append(self)
        self._delivery = joins._delivery if joins else Delivery(signing_secret=signing_secret)
        self.socket_mode: SocketMode | None
        if joins is not None:
            self.socket_mode = joins.socket_mode  # one app, one websocket for every workspace
        elif app_token is not None:
            self.socket_mode = SocketMode(
                core=self._core, app_token=app_token, ack_deadline_s=ack_deadline_s
            )
        else:
            self.socket_mode = None
        """The Socket Mode side (connections, envelopes, acks, ``refresh``, ``drop``);
        None when the app uses HTTP."""
        self._interactions = Interactions(
            core=self._core,
            delivery=self._delivery,
            request_url=lambda: self.request_url,
            ack_deadline_s=ack_deadline_s,
            socket_mode=self.socket_mode,
        )
        self._conversing = Conversing(core=self._core, interactions=self._interactions)
        self._events = Events(
            core=self._core, interactions=self._interactions, sent=self._conversing.sent
        )
        self._app = build_app(
            core=self._core,
            interactions=self._interactions,
            request_url=lambda: self.request_url,
            oauth_app=lambda: self._first._oauth_app,
            socket_mode=self.socket_mode,
        )
        self._server = Server(self._app)

    # -- lifecycle ------------------------------------------------------------------

    @property
    def request_url(self) -> str | None:
        """The bot's ``POST /slack/events`` URL (every workspace's deliveries go there)."""
        return self._first._request_url

    @request_url.setter
    def request_url(self, url: str | None) -> None:
        self._first._request_url = url

    @property
    def base_url(self) -> str:
        """The sandbox's base URL, once started (every workspace's)."""
        return self._first._core.base_url

    @property
    def team_id(self) -> str:
        """This workspace's team ID."""
        return self._core.workspace.team_id

    @property
    def api_url(self) -> str:
        """The Web API base URL, for ``AsyncWebClient(base_url=...)``."""
        return f"{self.base_url}api/"

    def app(self) -> web.Application:
        """Return the aiohttp application (to mount or serve it yourself)."""
        return self._app

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve on ``host:port`` (0 = a free port); return ``base_url``.

        Raises:
            OSError: The port is taken.
        """
        base_url = await self._server.start(host, port)
        for peer in self._peers:
            peer._core.base_url = base_url
        return base_url

    async def stop(self) -> None:
        """Release held calls, stop serving and close the client session used for
        deliveries (a second workspace's sandbox stops with its first)."""
        if self._first is not self:
            return
        self._core.slowness.release_all()
        for stall in list(self._core.held):
            stall.released.set()
        if self.socket_mode is not None:
            await self.socket_mode.close()
        await self._server.stop()
        await self._delivery.close()

    # -- inspection -------------------------------------------------------------------

    @property
    def calls(self) -> list[dict[str, Any]]:
        """Every Web API call: ``{"method", "args", "ok", "error"?}``, oldest first."""
        return self._core.calls

    @property
    def violations(self) -> list[str]:
        """Every Block Kit, limit or protocol violation the bot committed."""
        return self._core.violations

    def channel_id(self, name: str) -> str:
        """Return the ID of channel ``name`` (``#`` optional), creating the channel."""
        return self._core.workspace.channel_id(name)

    def messages(self, channel_id: str) -> list[dict[str, Any]]:
        """Return a channel's messages and thread replies, in post order."""
        return copy.deepcopy(self._core.workspace.messages.get(channel_id, []))

    def thread(self, channel_id: str, thread_ts: str) -> list[dict[str, Any]]:
        """Return a thread: its parent first, then its replies."""
        return [
            m
            for m in self.messages(channel_id)
            if m["ts"] == thread_ts or m.get("thread_ts") == thread_ts
        ]

    def message(self, channel_id: str, ts: str) -> dict[str, Any]:
        """Return the message at ``ts``.

        Raises:
            SandboxError: There is no such message.
        """
        message = self._core.workspace.find(channel_id, ts)
        if message is None:
            raise SandboxError(f"no message {ts} in channel {channel_id}")
        return copy.deepcopy(message)

    def ephemerals(
        self, channel_id: str | None = None, user_id: str | None = None
    ) -> list[dict[str, Any]]:
        """Return the ephemerals (``user`` is who sees one), filtered if asked."""
        return [
            copy.deepcopy(m)
            for m in self._core.workspace.ephemerals
            if channel_id in (None, m["channel"]) and user_id in (None, m["user"])
        ]

    def home_view(self, user_id: str) -> dict[str, Any] | None:
        """The App Home view last published for ``user_id`` (a copy), if any."""
        view = self._core.homes.views.get(user_id)
        return copy.deepcopy(view) if view else None

    def dm_channel(self, user_id: str) -> str:
        """The ID of the app's DM with ``user_id`` (``D…``), opened if need be."""
        return self._conversing.dm_channel(user_id)

    def trigger_id(self, user_id: str) -> str:
        """A live ``trigger_id`` of ``user_id``, as their next click would carry (for a
        payload a test builds itself: a forged value on a real trigger)."""
        return self._core.modals.issue_trigger(user_id)

    def open_views(self, user_id: str) -> list[dict[str, Any]]:
        """Return ``user_id``'s modal stack, top last, each with its field ``errors``."""
        return copy.deepcopy(self._core.modals.stacks.get(user_id, []))

    # -- failures ---------------------------------------------------------------------

    def fail_next(
        self,
        method: str,
        *,
        status: int = 429,
        retry_after_s: int = 1,
        times: int = 1,
        error: str | None = None,
    ) -> None:
        """Make the next ``times`` calls of Web API ``method`` answer HTTP ``status``.

        Any method name works, known or not (``usergroups.users.list`` too). 429
        comes with ``Retry-After: retry_after_s`` and ``error: ratelimited``; any other
        status with ``error: internal_error`` (Slack's own passing trouble: an outage to
        the product, whatever the status), or ``error`` if given (e.g.
        ``status=200, error="missing_scope"``: Slack refusing a call the app's token
        may not make). The call is recorded in ``calls``.
        """
        self._core.failures[method] = Failure(
            status=status, retry_after_s=retry_after_s, remaining=times, error=error
        )

    def set_latency(self, low_s: float, high_s: float, *, seed: int | None = None) -> None:
        """Make every Web API call wait a uniform random time in ``[low_s, high_s]``
        seconds before it is answered, as real Slack's 50-250 ms do (``seed``: a
        reproducible sequence)."""
        self._core.slowness.latency_s = (low_s, high_s)
        if seed is not None:
            self._core.slowness.rng.seed(seed)

    def stall_next(
        self,
        method: str,
        *,
        key_contains: str | None = None,
        ts: str | None = None,
        applied: bool = True,
        answer_status: int | None = None,
    ) -> Stall:
        """Hold the next call of ``method`` that matches until the returned stall is
        released or the sandbox stops.

        Args:
            method: The Web API method, e.g. ``chat.postMessage``.
            key_contains: Match only calls whose ``metadata.event_payload.key``
                contains it.
            ts: Match only calls on the message ``ts`` (``chat.update``).
            applied: ``True``: the call takes effect (the message is posted), then waits
                before answering; ``False``: it is lost: it never takes effect, and once
                released it answers HTTP 500.
            answer_status: With ``applied``, the HTTP status it answers once released
                (a 503 after the message was posted); ``None``: Slack's own answer.

        Returns:
            The stall: ``await stall.reached.wait()`` to know the call is held;
            ``stall.released.set()`` to let it go on.
        """
        stall = Stall(
            method=method,
            key_contains=key_contains,
            ts=ts,
            applied=applied,
            answer_status=answer_status,
        )
        self._core.slowness.stalls.append(stall)
        return stall

    # -- people, channels, user groups ----------------------------------------------------

    def add_user(
        self,
        user_id: str,
        name: str,
        *,
        team_id: str | None = None,
        enterprise_id: str | None = None,
        is_bot: bool = False,
    ) -> None:
        """Add (or replace) a person who can act in the sandbox's channels.

        Args:
            user_id: ``U…`` (or ``W…`` on Enterprise Grid).
            name: Their ``name``/``display_name`` (``real_name`` is it title-cased).
            team_id: Their home team: the sandbox's when None; another ID is a Slack
                Connect guest's team (``T0OTHER``), or with ``enterprise_id`` another
                workspace of an org (the sandbox's own org, or a foreign one).
            enterprise_id: The org of a new ``team_id`` (ignored for a known team,
                unless it contradicts it).
            is_bot: A bot user of another app: ``users.info`` says ``is_bot`` and its
                mentions carry ``bot_id``, ``app_id`` (``B…``/``A…`` from the user ID)
                and ``bot_profile``.

        Raises:
            SandboxError: ``enterprise_id`` contradicts the known org of ``team_id``.
        """
        self._core.workspace.people.add(
            user_id, name, team_id=team_id, enterprise_id=enterprise_id, is_bot=is_bot
        )

    def add_channel(
        self, channel_id: str, name: str, *, private: bool = False, bot_member: bool = True
    ) -> None:
        """Create channel ``channel_id`` (or rename and reconfigure it).

        Args:
            channel_id: ``C…``.
            name: Its name, without ``#``.
            private: A private channel: while the bot is not in it, every Web API
                call on it answers ``channel_not_found``.
            bot_member: Whether the bot is in it. Posting (``chat.postMessage``,
                ``chat.postEphemeral``, ``chat.update``) into a public channel it is
                not in answers ``not_in_channel``, as does reading its history.
                Channels made implicitly (unknown IDs or names) always have the bot.
        """
        ws = self._core.workspace
        ws.add_channel(channel_id, name)
        ws.channels[channel_id] = name
        ws.set_membership(channel_id, private=private, bot_member=bot_member)

    def post_as_other_app(
        self,
        channel_id: str,
        *,
        text: str,
        metadata: dict[str, Any],
        thread_ts: str | None = None,
    ) -> str:
        """Another app of the workspace (its own bot, ``OTHER_BOT_ID``) posts ``text``
        with message ``metadata`` of its choosing, as any app may with
        ``chat.postMessage``; returns the message's ``ts``."""
        message = self._core.workspace.post(
            channel_id,
            text=text,
            blocks=None,
            thread_ts=thread_ts,
            user=OTHER_BOT_USER_ID,
            bot=False,
        )
        message |= {"bot_id": OTHER_BOT_ID, "app_id": OTHER_APP_ID, "metadata": metadata}
        return str(message["ts"])

    def invite_bot(self, channel_id: str) -> None:
        """Put the bot in ``channel_id`` (``/invite @bot``).

        Raises:
            SandboxError: There is no such channel.
        """
        ws = self._core.workspace
        if channel_id not in ws.channels:
            raise SandboxError(f"no channel {channel_id}; add it with add_channel")
        ws.outside.discard(channel_id)

    async def set_usergroup(
        self, group_id: str, handle: str, user_ids: list[str]
    ) -> tuple[int, str] | None:
        """Create or replace user group ``group_id`` (``@handle``) with ``user_ids``.

        When an existing group's members change, Slack's Events API event
        ``subteam_members_changed`` (``added_users``, ``removed_users``, their counts,
        ``date_previous_update``, ``date_update``) is delivered to the bot as a signed
        JSON ``event_callback``.

        Returns:
            The bot's ``(HTTP status, body)``, or None when nothing was delivered (a
            new group, or the same members).

        Raises:
            SandboxError: ``group_id`` does not look like ``S0DBA``.
            BotUnreachable: The members changed and the bot does not answer.
        """
        change = self._core.usergroups.set(group_id, handle, list(user_ids))
        if change is None:
            return None
        return await self._events.members_changed(change)

    def usergroup_users(self, group_id: str) -> list[str]:
        """Return the members of user group ``group_id``.

        Raises:
            SandboxError: There is no such group.
        """
        group = self._core.usergroups.groups.get(group_id)
        if group is None:
            raise SandboxError(f"no user group {group_id}")
        return list(group.users)

    # -- workspaces and OAuth installs ------------------------------------------------

    def add_workspace(
        self,
        team_id: str,
        *,
        users: dict[str, str],
        channels: dict[str, str],
        bot_token: str | None = None,
    ) -> Sandbox:
        """Add another workspace to this Slack and return its sandbox: the same server,
        signing secret, bot URL and records, its own people, channels and tokens (a
        token of one workspace is ``invalid_auth`` in no other; it only sees its own).

        Args:
            team_id: Its team ID (``T…``), unlike any other workspace's.
            users: ``user_id -> name`` of its people (IDs unlike the other workspaces').
            channels: ``channel_id -> name`` (IDs unlike the other workspaces').
            bot_token: A token installed there already; ``None``: installed by OAuth.

        Raises:
            SandboxError: ``team_id`` is a workspace of this sandbox already.
        """
        if team_id in self._core.teams:
            raise SandboxError(f"workspace {team_id} exists already")
        first = self._first
        return Sandbox(
            signing_secret="",
            bot_token=bot_token,
            team_id=team_id,
            users=users,
            channels=channels,
            clock=first._core.workspace.clock,
            ack_deadline_s=first._interactions.ack_deadline_s,
            joins=first,
        )

    def register_oauth_app(
        self, *, client_id: str, client_secret: str, redirect_urls: list[str]
    ) -> None:
        """Give the app OAuth credentials and its Redirect URLs (api.slack.com: Basic
        Information, OAuth & Permissions), so it can be installed in every workspace."""
        self._first._oauth_app = OAuthApp(
            client_id=client_id, client_secret=client_secret, redirect_urls=list(redirect_urls)
        )

    def browser_cookie(self, user_id: str) -> tuple[str, str]:
        """Sign ``user_id`` in to this workspace in a browser: the cookie's ``(name,
        value)`` to send to the sandbox (the authorize page installs for them).

        Raises:
            SandboxError: No OAuth app is registered.
        """
        app = self._first._oauth_app
        if app is None:
            raise SandboxError("register_oauth_app first")
        return SESSION_COOKIE, app.sign_in(self._core, user_id)

    @property
    def installs(self) -> list[tuple[str, str]]:
        """``(team_id, user_id)`` of each completed OAuth install, oldest first."""
        app = self._first._oauth_app
        return list(app.installs) if app else []

    async def uninstall(self) -> list[tuple[int, str, str]]:
        """Remove the app from this workspace: its bot tokens are revoked (Slack then
        answers them ``token_revoked``) and ``tokens_revoked`` and ``app_uninstalled``
        are delivered, each kept for :meth:`retry_event`.

        Returns:
            The bot's ``(HTTP status, body)`` and the ``event_id`` of each event; status
            0 (and why) for one the bot could not be reached for, which Slack would
            retry later (:meth:`retry_event`).
        """
        self._core.revoke_tokens()
        return await self._events.uninstalled()

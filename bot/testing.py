"""In-memory twins of the ports that have no embedded implementation of their own.

For fast unit tests; each twin passes the same contract suite as its real service
(``tests/test_slack_gateway.py`` runs ``MemoryGateway`` and ``SlackGateway`` over the
sandbox alike). The bus and the de-duplicator already have in-memory implementations
that the one-process demo runs on (``agent_bridge.bus.InProcessBus``,
``bot.dedupe.MemoryDeduper``); they are their ports' twins.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from slack_bolt.authorization import AuthorizeResult
from slack_bolt.context.async_context import AsyncBoltContext

from agent_bridge.models import ApprovalRequest, Run
from agent_bridge.notifier import Answered
from agent_bridge.store import ApprovalStore
from bot.errors import (
    ChannelUnreachableError,
    MessageGoneError,
    SlackRefusedError,
    SlackUnavailableError,
)


@dataclass
class MemoryGateway:
    """``bot.slack_gateway.SlackGateway``'s twin: a dict of channels' messages.

    Attributes:
        channels: Channel IDs that exist; posting elsewhere raises
            ``ChannelUnreachableError``.
        messages: ``(channel_id, ts) -> {"text", "blocks", "thread_ts", "team_id", "key"}``.
        ephemerals: ``(channel_id, user_id, text)`` in order.
        views: Views opened, in order.
        triggers: Trigger IDs ``open_view`` accepts (each once).
        outage: Calls left that fail as an outage would (``SlackUnavailableError``).
        responses: ``(response_url, text)`` of each command answer, in order.
        usergroups: ``usergroup_id -> member user IDs``; others are ``no_such_subteam``.
        names: ``user_id -> name`` for ``user_name``.
        teams: ``user_id -> workspace`` for ``user_team`` (default: the asked one).
        homes: ``user_id -> Home view`` last published.
    """

    channels: set[str] = field(default_factory=lambda: {"C1"})
    messages: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    ephemerals: list[tuple[str, str, str]] = field(default_factory=list)
    views: list[dict[str, Any]] = field(default_factory=list)
    triggers: set[str] = field(default_factory=set)
    outage: int = 0
    responses: list[tuple[str, str]] = field(default_factory=list)
    usergroups: dict[str, list[str]] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    teams: dict[str, str] = field(default_factory=dict)
    homes: dict[str, dict[str, Any]] = field(default_factory=dict)
    _last_us: int = 0

    async def post_message(
        self,
        *,
        team_id: str | None,
        channel_id: str,
        text: str,
        blocks: list[dict[str, Any]],
        thread_ts: str | None = None,
        key: str | None = None,
    ) -> str:
        """See ``SlackGateway.post_message``."""
        self._reachable("chat.postMessage", channel_id)
        if thread_ts is not None and (channel_id, thread_ts) not in self.messages:
            raise MessageGoneError(
                "chat.postMessage failed: thread_not_found",
                method="chat.postMessage",
                code="thread_not_found",
                retryable=False,
            )
        # Slack's ts: the Unix time of the post to the microsecond, unique
        self._last_us = max(time.time_ns() // 1000, self._last_us + 1)
        ts = f"{self._last_us // 1_000_000}.{self._last_us % 1_000_000:06d}"
        self.messages[(channel_id, ts)] = {
            "text": text,
            "blocks": blocks,
            "thread_ts": thread_ts,
            "team_id": team_id,
            "key": key,
        }
        return ts

    async def find_message(
        self,
        *,
        team_id: str | None,
        channel_id: str,
        key: str,
        thread_ts: str | None = None,
        oldest: float | None = None,
    ) -> str | None:
        """See ``SlackGateway.find_message``."""
        self._reachable("conversations.history", channel_id)
        if thread_ts is not None and (channel_id, thread_ts) not in self.messages:
            raise MessageGoneError(
                "conversations.replies failed: thread_not_found",
                method="conversations.replies",
                code="thread_not_found",
                retryable=False,
            )
        for (channel, ts), message in self.messages.items():
            in_thread = ts == thread_ts or message["thread_ts"] == thread_ts
            top_level = message["thread_ts"] is None
            if channel == channel_id and message["key"] == key and float(ts) > (oldest or 0.0):
                if in_thread if thread_ts is not None else top_level:
                    return ts
        return None

    async def update_message(
        self, *, team_id: str | None, channel_id: str, ts: str, text: str, blocks: list[Any]
    ) -> None:
        """See ``SlackGateway.update_message``."""
        self._reachable("chat.update", channel_id)
        message = self.messages.get((channel_id, ts))
        if message is None:
            raise MessageGoneError(
                "chat.update failed: message_not_found",
                method="chat.update",
                code="message_not_found",
                retryable=False,
            )
        message.update(text=text, blocks=blocks)

    async def delete_message(self, *, team_id: str | None, channel_id: str, ts: str) -> None:
        """See ``SlackGateway.delete_message``."""
        self._reachable("chat.delete", channel_id)
        if self.messages.pop((channel_id, ts), None) is None:
            raise MessageGoneError(
                "chat.delete failed: message_not_found",
                method="chat.delete",
                code="message_not_found",
                retryable=False,
            )

    async def post_ephemeral(
        self,
        *,
        team_id: str | None,
        channel_id: str,
        user_id: str,
        text: str,
        thread_ts: str | None = None,
    ) -> None:
        """See ``SlackGateway.post_ephemeral``."""
        self._reachable("chat.postEphemeral", channel_id)
        self.ephemerals.append((channel_id, user_id, text))

    async def open_view(self, *, team_id: str | None, trigger_id: str, view: dict[str, Any]) -> str:
        """See ``SlackGateway.open_view``."""
        if trigger_id not in self.triggers:
            raise SlackRefusedError(
                "views.open failed: invalid_trigger_id",
                method="views.open",
                code="invalid_trigger_id",
                retryable=False,
            )
        self.triggers.discard(trigger_id)
        self.views.append(view)
        return f"V{len(self.views):05d}"

    async def publish_home(
        self, *, team_id: str | None, user_id: str, view: dict[str, Any]
    ) -> None:
        """See ``SlackGateway.publish_home``."""
        if self.outage:
            self.outage -= 1
            raise SlackUnavailableError(
                "views.publish failed: outage", method="views.publish", retryable=True
            )
        self.homes[user_id] = view

    async def usergroup_members(self, *, team_id: str | None, usergroup_id: str) -> list[str]:
        """See ``SlackGateway.usergroup_members``."""
        self._reachable("usergroups.users.list", next(iter(self.channels)))
        if usergroup_id not in self.usergroups:
            raise SlackRefusedError(
                "usergroups.users.list failed: no_such_subteam",
                method="usergroups.users.list",
                code="no_such_subteam",
                retryable=False,
            )
        return list(self.usergroups[usergroup_id])

    async def permalink(self, *, team_id: str | None, channel_id: str, ts: str) -> str:
        """See ``SlackGateway.permalink``."""
        self._reachable("chat.getPermalink", channel_id)
        if (channel_id, ts) not in self.messages:
            raise MessageGoneError(
                "chat.getPermalink failed: message_not_found",
                method="chat.getPermalink",
                code="message_not_found",
                retryable=False,
            )
        return f"https://memory.slack/archives/{channel_id}/p{ts.replace('.', '')}"

    async def user_name(self, *, team_id: str | None, user_id: str) -> str:
        """See ``SlackGateway.user_name``: ``names[user_id]``, else the ID itself."""
        self._reachable("users.info", next(iter(self.channels)))
        return self.names.get(user_id, user_id)

    async def user_team(self, *, team_id: str | None, user_id: str) -> str | None:
        """See ``SlackGateway.user_team``: ``teams[user_id]``, else ``team_id``."""
        self._reachable("users.info", next(iter(self.channels)))
        return self.teams.get(user_id, team_id)

    async def respond(self, *, team_id: str | None, response_url: str, text: str) -> None:
        """See ``SlackGateway.respond``."""
        self._reachable("response_url", next(iter(self.channels)))
        self.responses.append((response_url, text))

    def delete(self, channel_id: str, ts: str) -> None:
        """Delete a message, as a person would in Slack."""
        del self.messages[(channel_id, ts)]

    def _reachable(self, method: str, channel_id: str) -> None:
        if self.outage > 0:
            self.outage -= 1
            raise SlackUnavailableError(
                f"{method} failed: HTTP 503 (HTTP 503)",
                method=method,
                code="HTTP 503",
                retryable=True,
            )
        if channel_id not in self.channels:
            raise ChannelUnreachableError(
                f"{method} failed: channel_not_found",
                method=method,
                code="channel_not_found",
                retryable=False,
            )


def installed_in(team_id: str, enterprise_id: str | None = None) -> AsyncBoltContext:
    """A Bolt context as ``auth.test`` of a bot token installed in ``team_id`` leaves it,
    for calling a listener directly."""
    context = AsyncBoltContext()
    context.set_authorize_result(AuthorizeResult(enterprise_id=enterprise_id, team_id=team_id))
    return context


class RecordingNotifier:
    """The ``Notifier`` port's twin: remembers what would have been posted.

    Args:
        store: Where ``approval_requested`` records each card's message, as the Slack
            notifier's card owner does.
    """

    def __init__(self, store: ApprovalStore) -> None:
        self.store = store
        self.events: list[tuple[str, Any]] = []
        self.keys: set[tuple[str, str]] = set()

    async def run_started(self, run: Run) -> str:
        """See ``Notifier.run_started``."""
        self.events.append(("started", run.run_id))
        return "1.000"

    async def approval_requested(self, request: ApprovalRequest, *, run: Run) -> None:
        """See ``Notifier.approval_requested``."""
        self.events.append(("card", request.request_id))
        ts = f"2.{len(self.events):03d}"
        await self.store.set_message(request.request_id, channel_id="C1", message_ts=ts)

    async def approval_updated(self, request: ApprovalRequest, *, run: Run) -> None:
        """See ``Notifier.approval_updated``."""
        self.events.append(("updated", request))

    async def reminder(self, request: ApprovalRequest, *, run: Run) -> None:
        """See ``Notifier.reminder``."""
        self.events.append(("reminder", request.request_id))

    async def escalated(self, request: ApprovalRequest, *, run: Run) -> None:
        """See ``Notifier.escalated``."""
        self.events.append(("escalated", request.request_id))

    async def ran_without_review(
        self, run: Run, *, key: str, tool_name: str, args: dict[str, Any]
    ) -> None:
        """See ``Notifier.ran_without_review``: once per ``key``."""
        if self._first(run, key):
            self.events.append(("unreviewed", (tool_name, args)))

    async def tool_ran(
        self,
        run: Run,
        *,
        key: str,
        tool_name: str,
        content: str | None,
        ok: bool,
        answered: Answered | None = None,
    ) -> None:
        """See ``Notifier.tool_ran``: once per ``key``."""
        if self._first(run, key):
            self.events.append(("result", (tool_name, content)))

    def _first(self, run: Run, key: str) -> bool:
        """Whether ``key`` of ``run`` is posted for the first time (and remember it)."""
        if (run.run_id, key) in self.keys:
            return False
        self.keys.add((run.run_id, key))
        return True

    async def run_finished(self, run: Run, *, answer: str) -> None:
        """See ``Notifier.run_finished``: the answer once."""
        if self._first(run, "final_answer"):
            self.events.append(("answer", answer))

    async def run_failed(self, run: Run) -> None:
        """See ``Notifier.run_failed``."""
        self.events.append(("failed", run.run_id))

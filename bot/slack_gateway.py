"""The Slack gateway: every Web API call the product makes, and its failures, in one place.

Listeners, the card owner and the worker's notifier call these methods, never an
``AsyncWebClient``; a failure comes out as one of ``bot.errors``'s ``SlackCallError``
kinds (unavailable, message gone, channel unreachable, refused), so no other module
imports ``slack_sdk`` errors or ``aiohttp``.

Every call names the workspace (``team_id``) it is for, and uses that workspace's bot
token: ``client_for`` returns the one token's client for every team (``single_workspace``,
``SLACK_BOT_TOKEN``) or the stored installation's (``bot.workspaces.TeamClients``, OAuth).

No message is ever unfurled: a URL in agent text must never be previewed, so every
post, update and answer sends ``unfurl_links=False, unfurl_media=False`` (documented for
chat.postMessage and incoming webhooks; chat.update and chat.postEphemeral take them as
extra arguments, so no message of ours is unfurled however Slack treats an edit).

Rate limits and transient failures are slack_sdk's retry handlers' job (see
``bot.slack_client``); what reaches this module has outlasted them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import ClientError
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse
from slack_sdk.webhook.async_client import AsyncWebhookClient

from agent_bridge import metrics
from bot.errors import (
    ChannelUnreachableError,
    MessageGoneError,
    SlackCallError,
    SlackRefusedError,
    SlackUnavailableError,
)
from bot.mrkdwn import text_object
from bot.slack_client import PASSING_CODES, REQUEST_TIMEOUT_S

MESSAGE_GONE_CODES = frozenset({"message_not_found", "thread_not_found"})
CHANNEL_UNREACHABLE_CODES = frozenset(
    {"channel_not_found", "not_in_channel", "is_archived", "channel_is_archived"}
)
"""Slack's ``error`` codes per kind (https://api.slack.com/methods/chat.postMessage#errors,
https://api.slack.com/methods/chat.update#errors); Slack's own passing trouble is
``bot.slack_client.PASSING_CODES``."""


class Slack(Protocol):
    """The gateway's port: the Web API calls the product makes. ``SlackGateway`` is the
    real one; ``bot.testing.MemoryGateway`` its twin (one contract suite runs both)."""

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
        """Post; return the new message's ``ts``. ``key`` goes in its metadata."""
        ...

    async def find_message(
        self,
        *,
        team_id: str | None,
        channel_id: str,
        key: str,
        thread_ts: str | None = None,
        oldest: float | None = None,
    ) -> str | None:
        """Return the ``ts`` of the bot's message whose metadata names ``key``, if any."""
        ...

    async def update_message(
        self, *, team_id: str | None, channel_id: str, ts: str, text: str, blocks: list[Any]
    ) -> None:
        """Replace a message's text and blocks."""
        ...

    async def delete_message(self, *, team_id: str | None, channel_id: str, ts: str) -> None:
        """Delete one of the bot's messages."""
        ...

    async def post_ephemeral(
        self,
        *,
        team_id: str | None,
        channel_id: str,
        user_id: str,
        text: str,
        thread_ts: str | None = None,
    ) -> None:
        """Post a message only ``user_id`` sees."""
        ...

    async def open_view(self, *, team_id: str | None, trigger_id: str, view: dict[str, Any]) -> str:
        """Open a modal with a click's ``trigger_id``; return Slack's ``view.id``."""
        ...

    async def usergroup_members(self, *, team_id: str | None, usergroup_id: str) -> list[str]:
        """Return the user IDs of a user group's members."""
        ...

    async def publish_home(
        self, *, team_id: str | None, user_id: str, view: dict[str, Any]
    ) -> None:
        """Set ``user_id``'s App Home tab to ``view``."""
        ...

    async def permalink(self, *, team_id: str | None, channel_id: str, ts: str) -> str:
        """Return a message's permalink."""
        ...

    async def user_name(self, *, team_id: str | None, user_id: str) -> str:
        """Return the name Slack shows for a user."""
        ...

    async def user_team(self, *, team_id: str | None, user_id: str) -> str | None:
        """Return the workspace a user belongs to (a Slack Connect guest's is another)."""
        ...

    async def respond(self, *, team_id: str | None, response_url: str, text: str) -> None:
        """Answer a command privately through its ``response_url``."""
        ...


METADATA_EVENT_TYPE = "agent_bridge_message"
"""The ``event_type`` of the metadata on every message the product posts."""
EPHEMERAL_BLOCK_MAX_CHARS = 3000
"""A section's text limit (https://docs.slack.dev/reference/block-kit/blocks/section-block)."""
FIND_PAGE_SIZE = 200
FIND_PAGES_MAX = 5
"""How far ``find_message`` reads back (``conversations.*`` pages of up to 200; Tier 3)."""


def message_metadata(key: str) -> dict[str, Any]:
    """Slack message metadata naming ``key`` (``{event_type, event_payload}``,
    https://docs.slack.dev/messaging/message-metadata)."""
    return {"event_type": METADATA_EVENT_TYPE, "event_payload": {"key": key}}


def message_key(message: dict[str, Any]) -> str | None:
    """The key a message's metadata names, if the product posted it."""
    metadata = message.get("metadata")
    if not isinstance(metadata, dict) or metadata.get("event_type") != METADATA_EVENT_TYPE:
        return None
    payload = metadata.get("event_payload")
    key = payload.get("key") if isinstance(payload, dict) else None
    return key if isinstance(key, str) else None


@dataclass(frozen=True)
class BotIdentity:
    """Who a bot token posts as: its ``bot_id`` (``B…``) and bot user (``U…``), as
    ``auth.test`` answers (either may be missing)."""

    bot_id: str | None
    user_id: str | None


def posted_by(message: dict[str, Any], bot: BotIdentity) -> bool:
    """Whether ``message`` (as ``conversations.*`` return it) was posted by ``bot``: by
    its ``bot_id`` when Slack gives one, else its ``user``."""
    if message.get("bot_id"):
        return bool(message["bot_id"] == bot.bot_id)
    return bot.user_id is not None and message.get("user") == bot.user_id


ClientFor = Callable[[str | None], Awaitable[AsyncWebClient]]
"""``team_id -> client`` with that workspace's bot token (``bot.workspaces``); it raises
``SlackRefusedError`` (``not_installed``) for a workspace the app is not installed in."""


def translate(method: str, exc: Exception) -> SlackCallError:
    """Return the project's error for a failed Web API call.

    Args:
        method: The Web API method, e.g. ``chat.postMessage``.
        exc: What slack_sdk or aiohttp raised (``SlackApiError``, ``ClientError``,
            ``TimeoutError``).

    Returns:
        A ``SlackUnavailableError`` for an outage, a 429/5xx or Slack's own passing
        error (``PASSING_CODES``), ``MessageGoneError``,
        ``ChannelUnreachableError``, or ``SlackRefusedError`` for anything else Slack
        answered about the request itself.
    """
    if not isinstance(exc, SlackApiError):
        return SlackUnavailableError(
            f"{method} failed: Slack unreachable ({type(exc).__name__})",
            method=method,
            retryable=True,
        )
    status = exc.response.status_code
    data = exc.response.data  # a proxy's 5xx may be text or bytes, not Slack's JSON
    error = data.get("error") if isinstance(data, dict) else None
    code = str(error or f"HTTP {status}")
    message = f"{method} failed: {code} (HTTP {status})"
    if status == 429 or status >= 500 or code in PASSING_CODES:
        return SlackUnavailableError(message, method=method, code=code, retryable=True)
    if code in MESSAGE_GONE_CODES:
        return MessageGoneError(message, method=method, code=code, retryable=False)
    if code in CHANNEL_UNREACHABLE_CODES:
        return ChannelUnreachableError(message, method=method, code=code, retryable=False)
    return SlackRefusedError(message, method=method, code=code, retryable=False)


def counted(error: SlackCallError) -> SlackCallError:
    """``error``, counted in ``agent_bridge_slack_api_errors_total`` by method and code."""
    metrics.SLACK_API_ERRORS.labels(method=error.method, error=error.code or "unreachable").inc()
    return error


class SlackGateway:
    """Makes the product's Web API calls for the workspace each names.

    Args:
        client_for: ``team_id -> AsyncWebClient`` (see ``single_workspace``).
    """

    def __init__(self, client_for: ClientFor) -> None:
        self._client_for = client_for
        self._bots: dict[str, BotIdentity] = {}

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
        """``chat.postMessage``; return the new message's ``ts``.

        Args:
            key: Named in the message's metadata (``message_metadata``), so that
                ``find_message`` can find it if the caller never heard back.

        Raises:
            SlackCallError: One of its kinds (see ``translate``).
        """
        response = await self._call(
            "chat.postMessage",
            (await self._client_for(team_id)).chat_postMessage(
                channel=channel_id,
                text=text,
                blocks=blocks,
                thread_ts=thread_ts,
                metadata=message_metadata(key) if key else None,
                unfurl_links=False,
                unfurl_media=False,
            ),
        )
        return str(response["ts"])

    async def find_message(
        self,
        *,
        team_id: str | None,
        channel_id: str,
        key: str,
        thread_ts: str | None = None,
        oldest: float | None = None,
    ) -> str | None:
        """Find the bot's message whose metadata names ``key`` among the messages after
        ``oldest`` (a Unix time in seconds; ``None``: from the start): in the Slack
        thread ``thread_ts`` (``conversations.replies``) or, without one, among the
        channel's top-level messages (``conversations.history``), both with
        ``include_all_metadata`` (Slack returns no metadata without it). Reads up to
        ``FIND_PAGES_MAX`` pages of ``FIND_PAGE_SIZE``: a thread of any length is read
        from ``oldest`` on, not from its start.

        Only a message this workspace's bot posted counts (its ``bot_id``, else its
        ``user``, as ``auth.test`` names the token's, asked once per token): anyone's
        app can post metadata naming the same key, and a message adopted as a card,
        an answer or a header would stand in for one never posted.

        Returns:
            The message's ``ts``, or ``None`` if it is not there.

        Raises:
            SlackCallError: One of its kinds; ``MessageGoneError`` if the thread is gone.
        """
        client = await self._client_for(team_id)
        own = await self._bot_of(client)
        cursor: str | None = None
        for _ in range(FIND_PAGES_MAX):
            if thread_ts is not None:
                method = "conversations.replies"
                call = client.conversations_replies(
                    channel=channel_id,
                    ts=thread_ts,
                    oldest=f"{oldest:.6f}" if oldest is not None else None,
                    include_all_metadata=True,
                    limit=FIND_PAGE_SIZE,
                    cursor=cursor,
                )
            else:
                method = "conversations.history"
                call = client.conversations_history(
                    channel=channel_id,
                    oldest=f"{oldest:.6f}" if oldest is not None else None,
                    include_all_metadata=True,
                    limit=FIND_PAGE_SIZE,
                    cursor=cursor,
                )
            response = await self._call(method, call)
            for message in response.get("messages") or []:
                if message_key(message) == key and posted_by(message, own):
                    return str(message["ts"])
            cursor = (response.get("response_metadata") or {}).get("next_cursor") or None
            if cursor is None:
                return None
        return None

    async def update_message(
        self, *, team_id: str | None, channel_id: str, ts: str, text: str, blocks: list[Any]
    ) -> None:
        """``chat.update`` of the message ``ts`` in ``channel_id``.

        Raises:
            MessageGoneError: The message was deleted.
            SlackCallError: Any other kind.
        """
        await self._call(
            "chat.update",
            (await self._client_for(team_id)).chat_update(
                channel=channel_id,
                ts=ts,
                text=text,
                blocks=blocks,
                unfurl_links=False,
                unfurl_media=False,
            ),
        )

    async def delete_message(self, *, team_id: str | None, channel_id: str, ts: str) -> None:
        """``chat.delete`` of the bot's own message ``ts`` in ``channel_id``.

        Raises:
            MessageGoneError: It was deleted already.
            SlackCallError: Any other kind.
        """
        await self._call(
            "chat.delete", (await self._client_for(team_id)).chat_delete(channel=channel_id, ts=ts)
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
        """``chat.postEphemeral``: a message only ``user_id`` sees, in ``channel_id``.

        ``text`` (mrkdwn, at most ``EPHEMERAL_BLOCK_MAX_CHARS``) is also sent as one
        section whose text object is verbatim (``bot.mrkdwn.text_object``): a
        message's top-level ``text`` has no ``verbatim``, and Slack would auto-link a
        URL quoted in it (a note can hold an error's text).

        Raises:
            SlackCallError: One of its kinds.
        """
        section = {"type": "section", "text": text_object(text)}
        await self._call(
            "chat.postEphemeral",
            (await self._client_for(team_id)).chat_postEphemeral(
                channel=channel_id,
                user=user_id,
                text=text,
                blocks=[section] if len(text) <= EPHEMERAL_BLOCK_MAX_CHARS else None,
                thread_ts=thread_ts,
                unfurl_links=False,
                unfurl_media=False,
            ),
        )

    async def open_view(self, *, team_id: str | None, trigger_id: str, view: dict[str, Any]) -> str:
        """``views.open`` with a click's ``trigger_id`` (valid for 3 s after the click);
        return the opened view's ``id``.

        Raises:
            SlackRefusedError: E.g. ``expired_trigger_id``.
            SlackCallError: Any other kind.
        """
        response = await self._call(
            "views.open",
            (await self._client_for(team_id)).views_open(trigger_id=trigger_id, view=view),
        )
        return str(response["view"]["id"])

    async def publish_home(
        self, *, team_id: str | None, user_id: str, view: dict[str, Any]
    ) -> None:
        """``views.publish``: set ``user_id``'s App Home tab (Tier 4: 100+ a minute;
        https://docs.slack.dev/reference/methods/views.publish).

        Raises:
            SlackRefusedError: E.g. ``invalid_arguments`` (a view Slack refuses).
            SlackCallError: Any other kind.
        """
        await self._call(
            "views.publish",
            (await self._client_for(team_id)).views_publish(user_id=user_id, view=view),
        )

    async def usergroup_members(self, *, team_id: str | None, usergroup_id: str) -> list[str]:
        """``usergroups.users.list``: the members of a user group (``S…``), disabled
        groups included (a disabled group then has none). Needs ``usergroups:read``.

        Raises:
            SlackRefusedError: E.g. ``no_such_subteam``.
            SlackCallError: Any other kind.
        """
        response = await self._call(
            "usergroups.users.list",
            (await self._client_for(team_id)).usergroups_users_list(
                usergroup=usergroup_id, include_disabled=True
            ),
        )
        return [str(user) for user in response.get("users") or []]

    async def permalink(self, *, team_id: str | None, channel_id: str, ts: str) -> str:
        """``chat.getPermalink`` of the message ``ts`` in ``channel_id``.

        Raises:
            MessageGoneError: There is no such message.
            SlackCallError: Any other kind.
        """
        response = await self._call(
            "chat.getPermalink",
            (await self._client_for(team_id)).chat_getPermalink(channel=channel_id, message_ts=ts),
        )
        return str(response["permalink"])

    async def user_name(self, *, team_id: str | None, user_id: str) -> str:
        """The name Slack shows for ``user_id`` (``users.info``): the profile's display
        name, else its real name, else the account name
        (https://docs.slack.dev/reference/methods/users.info).

        Raises:
            SlackCallError: Slack would not say (``user_not_found``, no ``users:read``).
        """
        response = await self._call(
            "users.info", (await self._client_for(team_id)).users_info(user=user_id)
        )
        user = response["user"]
        profile = user.get("profile") or {}
        return str(
            profile.get("display_name") or profile.get("real_name") or user.get("name") or user_id
        )

    async def user_team(self, *, team_id: str | None, user_id: str) -> str | None:
        """The workspace ``user_id`` belongs to (``users.info``'s ``user.team_id``; a
        Slack Connect guest's is their own, not ``team_id``'s), or ``None`` if not said
        (https://docs.slack.dev/reference/methods/users.info).

        Raises:
            SlackCallError: Slack would not say (``user_not_found``, no ``users:read``).
        """
        response = await self._call(
            "users.info", (await self._client_for(team_id)).users_info(user=user_id)
        )
        found = response["user"].get("team_id")
        return str(found) if found else None

    async def respond(self, *, team_id: str | None, response_url: str, text: str) -> None:
        """Answer a slash command privately, later than its ack, through its
        ``response_url`` (valid 30 minutes, up to 5 times: Slack's "Handling user
        interaction"); this works where the bot is not in the channel.

        Raises:
            SlackUnavailableError: Slack unreachable or answering 5xx.
            SlackRefusedError: The URL was refused (expired, used up).
        """
        method = "response_url"
        webhook = AsyncWebhookClient(response_url, timeout=REQUEST_TIMEOUT_S)
        try:
            response = await webhook.send(
                text=text, response_type="ephemeral", unfurl_links=False, unfurl_media=False
            )
        except (ClientError, TimeoutError) as exc:
            raise counted(translate(method, exc)) from exc
        if response.status_code == 200:
            return
        message = f"{method} failed: {response.body or 'no body'} (HTTP {response.status_code})"
        code = f"HTTP {response.status_code}"
        if response.status_code == 429 or response.status_code >= 500:
            raise counted(SlackUnavailableError(message, method=method, code=code, retryable=True))
        raise counted(SlackRefusedError(message, method=method, code=code, retryable=False))

    async def _bot_of(self, client: AsyncWebClient) -> BotIdentity:
        """Who ``client``'s token posts as (``auth.test``), remembered per token."""
        token = client.token or ""
        known = self._bots.get(token)
        if known is None:
            answer = await self._call("auth.test", client.auth_test())
            known = BotIdentity(bot_id=answer.get("bot_id"), user_id=answer.get("user_id"))
            self._bots[token] = known
        return known

    @staticmethod
    async def _call(method: str, call: Awaitable[AsyncSlackResponse]) -> AsyncSlackResponse:
        """Await one slack_sdk call, translating its failure (``translate``)."""
        metrics.SLACK_API_CALLS.labels(method=method).inc()
        try:
            return await call
        except (SlackApiError, ClientError, TimeoutError) as exc:
            raise counted(translate(method, exc)) from exc


def single_workspace(client: AsyncWebClient) -> SlackGateway:
    """Return a gateway whose every call uses ``client`` (one bot token, one workspace)."""

    async def client_for(_team_id: str | None) -> AsyncWebClient:
        return client

    return SlackGateway(client_for)

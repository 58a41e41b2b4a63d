"""What people do in the sandbox, delivered to the bot: the ``Sandbox`` facade's verbs.

:class:`Acting` is the half of :class:`~slack_sandbox.Sandbox` that sends: commands,
clicks, modal submissions and closes, mentions, and raw signed bodies, honest or
forged. Every delivery is signed as Slack signs it; an answer later than the ack
deadline, or not HTTP 200, is recorded in ``Sandbox.violations``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from slack_sandbox.conversing import Conversing
from slack_sandbox.delivery import FORM, Delivery
from slack_sandbox.events import Events
from slack_sandbox.interactions import Interactions


class Acting:
    """Deliveries to the bot on behalf of people (the base of ``Sandbox``).

    Every method raises :class:`~slack_sandbox.BotUnreachable` when ``request_url``
    is unset or the bot does not answer.
    """

    request_url: str | None
    _delivery: Delivery
    _interactions: Interactions
    _events: Events
    _conversing: Conversing

    async def slash_command(
        self, *, command: str, text: str, user_id: str, channel_id: str
    ) -> tuple[int, str]:
        """Run a slash command; return the bot's ``(HTTP status, body)``.

        The fields carry the user's home team (``team_id``, ``team_domain``, and
        ``enterprise_id``/``enterprise_name`` when it is in an org). A JSON or text
        answer is shown as Slack shows it (ephemeral unless ``in_channel``).
        """
        return await self._interactions.slash_command(
            command=command, text=text, user_id=user_id, channel_id=channel_id
        )

    async def click(
        self,
        *,
        channel_id: str,
        ts: str,
        action_id: str,
        user_id: str,
        value: str | None = None,
        forged_value: str | None = None,
    ) -> tuple[int, str]:
        """Click a button in a stored message; return the bot's ``(HTTP status, body)``.

        Args:
            channel_id: The message's channel.
            ts: The message's ``ts`` (a message or an ephemeral shown to ``user_id``).
            action_id: The button's ``action_id``.
            user_id: Who clicks; ``user.team_id`` is their home team, ``team`` the
                sandbox's workspace (with its org, if any).
            value: Pick the button with this ``value`` among same-``action_id`` ones.
            forged_value: Send this as the action's ``value`` instead of the button's
                (the payload's ``message`` still shows the real one): a tampered client.

        Raises:
            SandboxError: The message has no button ``action_id`` (with ``value``).
        """
        return await self._interactions.click(
            channel_id=channel_id,
            ts=ts,
            action_id=action_id,
            user_id=user_id,
            value=value,
            forged_value=forged_value,
        )

    async def submit_view(
        self, *, view_id: str, user_id: str, values: Mapping[str, object] | None = None
    ) -> tuple[int, dict[str, Any] | None]:
        """Submit an open modal; return the bot's HTTP status and parsed answer.

        ``values`` maps input ``block_id`` to a raw value (see
        :func:`~slack_sandbox.view_state.state_values`); other inputs keep what the
        modal shows. The bot's ``response_action`` is applied to the stack.

        Raises:
            SandboxError: The view is not open on top for the user, the values do
                not fit it, or Slack's client would not submit it (``NotSubmitted``).
        """
        return await self._interactions.submit_view(
            view_id=view_id, user_id=user_id, values=dict(values or {})
        )

    async def submit_unopened_view(
        self,
        *,
        user_id: str,
        view: dict[str, Any],
        values: Mapping[str, object] | None = None,
    ) -> tuple[int, dict[str, Any] | None]:
        """Deliver a ``view_submission`` of ``view`` by ``user_id``, though not on their stack.

        For forged or replayed modals: a copy of another user's view (from
        ``open_views``), or one with an edited ``id`` or ``private_metadata``. The
        payload is built exactly like :meth:`submit_view`'s, but Slack's client-side
        checks are skipped and the answer changes no stack.

        Returns:
            The bot's HTTP status and parsed answer (None if empty or not JSON).

        Raises:
            SandboxError: ``view`` has no ``id``, or ``values`` do not fit its inputs.
        """
        return await self._interactions.submit_unopened_view(
            user_id=user_id, view=view, values=dict(values or {})
        )

    async def close_view(self, *, view_id: str, user_id: str) -> None:
        """Dismiss an open modal (``view_closed`` is sent only if ``notify_on_close``).

        Raises:
            SandboxError: The view is not open on top for the user.
        """
        await self._interactions.close_view(view_id=view_id, user_id=user_id)

    async def mention(
        self, *, user_id: str, channel_id: str, text: str, thread_ts: str | None = None
    ) -> tuple[int, str]:
        """Write ``text`` mentioning the bot as ``user_id``; deliver the ``app_mention``.

        The message is stored in the channel (or the Slack thread ``thread_ts``) so the
        bot can reply to it; ``<@bot>`` is put first unless ``text`` mentions the bot.
        The JSON ``event_callback`` has the sandbox's ``team_id`` (and
        ``enterprise_id``); the event has ``team`` = the writer's home team, plus
        ``user_team``/``source_team`` for a guest of another team, and ``bot_id``,
        ``app_id``, ``bot_profile`` when the writer is a bot user (``add_user(...,
        is_bot=True)``). ``is_ext_shared_channel`` is true for a guest from outside the
        sandbox's org.

        Returns:
            The bot's ``(HTTP status, body)``.

        Raises:
            SandboxError: The bot is not in the channel (Slack would send nothing), or
                ``thread_ts`` is not a message in it.
        """
        return await self._events.mention(
            user_id=user_id, channel_id=channel_id, text=text, thread_ts=thread_ts
        )

    async def direct_message(self, *, user_id: str, text: str) -> tuple[int, str, str]:
        """Write ``text`` to the app in ``user_id``'s DM with it; deliver the ``message``
        event (``channel_type: "im"``). Returns the bot's ``(HTTP status, body)`` and the
        ``event_id`` (for :meth:`retry_event`)."""
        return await self._conversing.direct_message(user_id=user_id, text=text)

    async def reply(
        self, *, user_id: str, channel_id: str, thread_ts: str, text: str
    ) -> tuple[int, str, str]:
        """Reply ``text`` as ``user_id`` in the Slack thread ``thread_ts``; deliver the
        ``message`` event (with ``thread_ts``, ``parent_user_id``). Returns as
        :meth:`direct_message`.

        Raises:
            SandboxError: No such parent, or the bot is not in the channel.
        """
        return await self._conversing.reply(
            user_id=user_id, channel_id=channel_id, thread_ts=thread_ts, text=text
        )

    async def retry_event(self, event_id: str) -> tuple[int, str]:
        """Deliver an event again with the same ``event_id``, as Slack retries."""
        return await self._conversing.retry(event_id)

    async def open_home(self, *, user_id: str) -> tuple[int, str]:
        """``user_id`` opens the app's Home tab: deliver ``app_home_opened``."""
        return await self._conversing.open_home(user_id=user_id)

    async def click_home(
        self, *, user_id: str, action_id: str, value: str | None = None
    ) -> tuple[int, str]:
        """Click a button of ``user_id``'s Home tab (``container.type: "view"``).

        Raises:
            SandboxError: No Home view for the user, or no such button in it.
        """
        return await self._conversing.click_home(user_id=user_id, action_id=action_id, value=value)

    async def post_signed(
        self,
        body: bytes,
        *,
        content_type: str = FORM,
        timestamp: int | None = None,
        signature: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, str]:
        """Post raw ``body`` to the bot, signed correctly unless told otherwise.

        Nothing is recorded as a violation; the answer is returned as it came.
        """
        reply = await self._delivery.post(
            self.request_url,
            body,
            content_type=content_type,
            timestamp=timestamp,
            signature=signature,
            headers=headers,
        )
        return reply.status, reply.body

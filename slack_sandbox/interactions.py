"""What a person does in Slack, delivered to the bot: commands, clicks, submissions.

Each interaction gets a fresh ``trigger_id`` and ``response_url`` from the sandbox, is
signed and posted to the bot, and the bot's answer is applied as Slack applies it
(a slash command's body becomes a message; a view submission's ``response_action``
changes the modal stack). Slow or failed answers are recorded as violations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from slack_sandbox.core import Core
from slack_sandbox.delivery import (
    ACK_DEADLINE_S,
    FORM,
    Delivery,
    Reply,
    form_body,
    payload_body,
)
from slack_sandbox.errors import NotSubmitted, SandboxError
from slack_sandbox.payloads import (
    block_actions_payload,
    slash_command_fields,
    view_closed_payload,
    view_submission_payload,
)
from slack_sandbox.responses import slash_command_answer
from slack_sandbox.socket_mode import SocketMode
from slack_sandbox.view_responses import apply_view_response
from slack_sandbox.view_state import client_side_errors, state_values


class Interactions:
    """Delivers a person's actions to the bot and applies its answers.

    Args:
        core: The sandbox state.
        delivery: Signs and posts to the bot.
        request_url: Returns the bot's current request URL.
        ack_deadline_s: An answer later than this is a violation and is not applied.
        socket_mode: The app's Socket Mode side: when given, every delivery is an
            envelope on its websocket instead of a post to ``request_url``.
    """

    def __init__(
        self,
        *,
        core: Core,
        delivery: Delivery,
        request_url: Callable[[], str | None],
        ack_deadline_s: float = ACK_DEADLINE_S,
        socket_mode: SocketMode | None = None,
    ) -> None:
        self.core = core
        self.delivery = delivery
        self.request_url = request_url
        self.ack_deadline_s = ack_deadline_s
        self.socket_mode = socket_mode

    async def slash_command(
        self, *, command: str, text: str, user_id: str, channel_id: str
    ) -> tuple[int, str]:
        """Run ``command text`` as ``user_id`` in ``channel_id``; return the bot's answer."""
        ws = self.core.workspace
        channel_id = ws.resolve_channel(channel_id)
        user_name = self._user(user_id)
        team = ws.people.team_of(user_id)
        if not command.startswith("/"):
            command = f"/{command}"
        target = self.core.issue_response_url(
            channel_id=channel_id, user_id=user_id, message_ts=None, is_ephemeral=False
        )
        fields = slash_command_fields(
            team_id=team.id,
            team_domain=team.domain,
            enterprise_id=team.enterprise_id,
            enterprise_name=team.enterprise_name,
            channel_id=channel_id,
            channel_name=ws.channels[channel_id],
            user_id=user_id,
            user_name=user_name,
            command=command,
            text=text,
            response_url=target.url,
            trigger_id=self.core.modals.issue_trigger(user_id),
        )
        reply = await self.deliver(form_body(fields), f"slash command {command}")
        if self._acked(reply):
            slash_command_answer(self.core, target, reply.body)
        return reply.status, reply.body

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
        """Click the button ``action_id`` (with ``value``, if given) of a message.

        ``forged_value`` replaces the action's ``value`` in the payload (the message in
        it stays as stored): a tampered client.

        Raises:
            SandboxError: No such message, or no such button in it.
        """
        ws = self.core.workspace
        message, is_ephemeral = ws.find(channel_id, ts), False
        if message is None:
            message, is_ephemeral = ws.find_ephemeral(channel_id, ts), True
        if message is None:
            raise SandboxError(f"no message {ts} in channel {channel_id}")
        if is_ephemeral and message["user"] != user_id:
            raise SandboxError(f"ephemeral {ts} is visible to {message['user']}, not {user_id}")
        block, button = find_button(message, action_id, value)
        payload = block_actions_payload(
            team_id=ws.team_id,
            enterprise_id=ws.team.enterprise_id,
            enterprise_name=ws.team.enterprise_name,
            user_team_id=ws.people.team_of(user_id).id,
            user_id=user_id,
            user_name=self._user(user_id),
            channel_id=channel_id,
            channel_name=ws.channels.get(channel_id, channel_id),
            message=message,
            is_ephemeral=is_ephemeral,
            block=block,
            button=button,
            trigger_id=self.core.modals.issue_trigger(user_id),
            response_url=self.core.issue_response_url(
                channel_id=channel_id, user_id=user_id, message_ts=ts, is_ephemeral=is_ephemeral
            ).url,
            action_ts=f"{ws.clock():.6f}",
        )
        if forged_value is not None:
            payload["actions"][0]["value"] = forged_value
        reply = await self.deliver(payload_body(payload), f"click on {action_id} in {ts}")
        return reply.status, reply.body

    async def submit_view(
        self, *, view_id: str, user_id: str, values: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any] | None]:
        """Submit ``user_id``'s open view ``view_id`` with ``values`` (by ``block_id``).

        Raises:
            SandboxError: The view is not the user's top view, has no submit button,
                or ``values`` do not fit it.
            NotSubmitted: Slack's client would refuse to submit (a required input is
                empty, too long, not a number...); the errors are shown on the view.
        """
        view = self._top_view(view_id, user_id)
        if view.get("submit") is None:
            raise SandboxError(f"view {view_id} has no submit button")
        state = state_values(view, values)
        errors = client_side_errors(view, state)
        view["state"] = {"values": state}
        if errors:
            view["errors"] = errors
            raise NotSubmitted(view_id, errors)
        where = f"view_submission of {view_id} ({view.get('callback_id')})"
        reply, body = await self._submit(view, user_id, state, where)
        if reply is not None and self._acked(reply):
            apply_view_response(self.core, user_id, view, body, where=where)
        return (reply.status if reply else 200), body if isinstance(body, dict) else None

    async def submit_unopened_view(
        self, *, user_id: str, view: dict[str, Any], values: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any] | None]:
        """Submit ``view`` as ``user_id`` though it is not on their stack: a forged modal.

        The payload is built as for :meth:`submit_view` (the view's ``state`` from
        ``values`` and what it shows), but Slack's client-side checks are skipped, as a
        forger skips them, and the bot's answer changes no modal stack.

        Raises:
            SandboxError: ``view`` has no ``id``, or ``values`` do not fit its inputs.
        """
        if not isinstance(view.get("id"), str):
            raise SandboxError("the view to submit needs an 'id', as views.open returns it")
        forged = dict(view)
        forged.setdefault("type", "modal")
        state = state_values(forged, values)
        where = f"view_submission of unopened {view['id']} ({view.get('callback_id')})"
        reply, body = await self._submit(forged, user_id, state, where)
        return (reply.status if reply else 200), body if isinstance(body, dict) else None

    async def _submit(
        self, view: dict[str, Any], user_id: str, state: dict[str, Any], where: str
    ) -> tuple[Reply | None, Any]:
        """Deliver ``view``'s submission; return the reply and its JSON (None if not JSON)."""
        team = self.core.workspace.people.team_of(user_id)
        payload = view_submission_payload(
            team_id=team.id,
            team_domain=team.domain,
            enterprise_id=team.enterprise_id,
            enterprise_name=team.enterprise_name,
            user_id=user_id,
            user_name=self._user(user_id),
            view=view,
            values=state,
            trigger_id=self.core.modals.issue_trigger(user_id),
        )
        reply = await self.deliver(payload_body(payload), where)
        try:
            return reply, reply.json()
        except ValueError:
            self.core.violate(where, [f"the answer is not JSON: {reply.body[:200]!r}"])
            return None, None

    async def close_view(self, *, view_id: str, user_id: str) -> None:
        """Dismiss ``user_id``'s top view; send ``view_closed`` if it asked to be told.

        Raises:
            SandboxError: The view is not the user's top view.
        """
        view = self._top_view(view_id, user_id)
        modals = self.core.modals
        if view.get("clear_on_close"):
            modals.clear(user_id)
        else:
            modals.close(user_id, view_id)
        if view.get("notify_on_close"):
            team = self.core.workspace.people.team_of(user_id)
            payload = view_closed_payload(
                team_id=team.id,
                team_domain=team.domain,
                enterprise_id=team.enterprise_id,
                enterprise_name=team.enterprise_name,
                user_id=user_id,
                user_name=self._user(user_id),
                view=view,
                is_cleared=bool(view.get("clear_on_close")),
            )
            await self.deliver(payload_body(payload), f"view_closed of {view_id}")

    def _top_view(self, view_id: str, user_id: str) -> dict[str, Any]:
        stack = self.core.modals.stacks.get(user_id) or []
        if not stack or stack[-1]["id"] != view_id:
            shown = stack[-1]["id"] if stack else "none"
            raise SandboxError(f"view {view_id} is not open on top for {user_id} (top: {shown})")
        return stack[-1]

    def _user(self, user_id: str) -> str:
        return self.core.workspace.people.get(user_id).name

    def _acked(self, reply: Reply) -> bool:
        return reply.status == 200 and reply.elapsed_s <= self.ack_deadline_s

    async def deliver(self, body: bytes, where: str, *, content_type: str = FORM) -> Reply:
        """Post a signed ``body`` to the bot (in Socket Mode: send it as an envelope);
        record a late or failed answer as a violation.

        Raises:
            BotUnreachable: The bot's request URL is unset or does not answer (in Socket
                Mode: no connection is open, or no ack came).
        """
        if self.socket_mode is not None:
            reply = await self.socket_mode.deliver(body, content_type=content_type)
        else:
            reply = await self.delivery.post(self.request_url(), body, content_type=content_type)
        if reply.elapsed_s > self.ack_deadline_s:
            late = f"the bot answered after {reply.elapsed_s:.2f} s"
            self.core.violate(where, [f"{late}; Slack gives up after {self.ack_deadline_s:g} s"])
        if reply.status != 200:
            self.core.violate(where, [f"the bot answered HTTP {reply.status}: {reply.body[:200]}"])
        return reply


def find_button(
    message: dict[str, Any], action_id: str, value: str | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return ``(block, button)`` of the button ``action_id`` (and ``value``) in ``message``.

    Raises:
        SandboxError: No such button; the message says which buttons there are.
    """
    seen: list[str] = []
    for block in message.get("blocks") or []:
        for element in [block.get("accessory"), *(block.get("elements") or [])]:
            if not isinstance(element, dict) or element.get("type") != "button":
                continue
            seen.append(f"{element.get('action_id')}={element.get('value')!r}")
            if element.get("action_id") == action_id and (
                value is None or element.get("value") == value
            ):
                return block, element
    wanted = action_id if value is None else f"{action_id}={value!r}"
    raise SandboxError(f"no button {wanted} in message {message['ts']}; buttons: {seen}")

"""Authorizing one interaction before anything is recorded (``bot.authorization``'s
rule, with its I/O: resolving approver groups and keeping refusals in the audit trail).

Used by the click and submission listeners. It fails closed: an installation it cannot
name, or approver groups Slack will not list, refuse.
"""

from __future__ import annotations

import logging
from typing import Any

from agent_bridge import review_wording
from agent_bridge.models import ApprovalRequest
from agent_bridge.store import ApprovalStore
from bot import ids
from bot.authorization import (
    Actor,
    Clicked,
    Installation,
    backup_ids,
    home_action,
    needs_members,
    refusal,
    still_approving,
)
from bot.directory import Directory, Members
from bot.errors import ApprovalsUnjudgedError
from bot.payloads import BlockActions, MessageCallback, ViewSubmission

logger = logging.getLogger(__name__)


def installation_of(context: Any) -> Installation:
    """The installation Bolt authorized this request for (``context.authorize_result``,
    from ``auth.test`` of the bot token); unknown fields are ``None`` (which refuses)."""
    result = getattr(context, "authorize_result", None)
    if result is None:
        return Installation(team_id=None)
    return Installation(team_id=result.team_id, enterprise_id=result.enterprise_id)


def actor_of(payload: BlockActions | ViewSubmission) -> Actor:
    """Who acts, from a signed interaction payload."""
    return Actor(
        user_id=payload.user.id,
        team_id=payload.actor_team_id,
        enterprise_id=payload.enterprise_id,
    )


def author_of(callback: MessageCallback, user_id: str) -> Actor:
    """Who wrote a message event (``user_id``, its ``event.user``), as ``actor_of`` says
    who clicked: their workspace and, on Enterprise Grid, their org."""
    return Actor(
        user_id=user_id,
        team_id=callback.author_team_id,
        enterprise_id=callback.author_enterprise_id,
    )


def clicked_of(payload: BlockActions) -> Clicked:
    """Where the clicked button is (``container``): a message, or a Home view, whose
    owner is read from the signed view's ``private_metadata`` (a view that is not a Home
    view of ours names nobody, and matches no card)."""
    container = payload.container
    if container.type == "view":
        view = payload.view
        owner = (
            ids.home_owner(view.private_metadata)
            if view is not None and view.type == "home" and view.id == container.view_id
            else None
        )
        return Clicked(channel_id=None, message_ts=None, in_view=True, home_of=owner)
    return Clicked(channel_id=container.channel_id, message_ts=container.message_ts)


class Guard:
    """Says whether an actor may act on a request, and keeps every refusal.

    Args:
        store: The approval store (refusals go to its audit trail).
        directory: Resolves approver user groups.
    """

    def __init__(self, *, store: ApprovalStore, directory: Directory) -> None:
        self.store = store
        self.directory = directory

    async def refusal(
        self,
        actor: Actor,
        action: str,
        request: ApprovalRequest,
        *,
        installation: Installation,
        clicked: Clicked | None = None,
    ) -> str | None:
        """Return why ``actor`` may not ``action`` ``request`` (mrkdwn), or ``None``.

        A refusal is logged and appended to the audit trail (``refused``).

        Raises:
            StoreUnavailableError: The refusal could not be kept (nothing else changed).
        """
        members = backup = None
        if needs_members(request, action, actor):
            members, backup = await self._lists(request, installation)
        why = refusal(
            actor,
            action,
            request,
            installation=installation,
            members=members,
            backup=backup,
            clicked=clicked,
        )
        if why is None:
            return None
        await self._keep_refusal(actor, action, request, why)
        return why

    async def _keep_refusal(
        self, actor: Actor, action: str, request: ApprovalRequest, why: str
    ) -> None:
        """Log a refusal and append it to the audit trail."""
        logger.info(
            "run=%s interrupt=%s request=%s %s by %s (team %s) refused: %s",
            request.run_id,
            request.interrupt_id,
            request.request_id,
            action,
            actor.user_id,
            actor.team_id,
            why,
        )
        await self.store.record_refusal(
            request,
            user_id=actor.user_id,
            team_id=actor.team_id,
            action=action,
            reason=review_wording.plain(why),
        )

    async def may_decide(
        self, actor: Actor, request: ApprovalRequest, *, installation: Installation
    ) -> bool:
        """Whether ``actor`` may make some decision on ``request`` other than a reject
        of their own run (the App Home inbox lists those); nothing is recorded.

        Raises:
            StoreUnavailableError: Never (no write); Slack failures fail closed.
        """
        deciding = home_action(request)
        if actor.user_id == request.requester_id and not request.rules.requester_may_approve:
            return False
        members = backup = None
        if needs_members(request, deciding, actor):
            members, backup = await self._lists(request, installation)
        return (
            refusal(
                actor,
                deciding,
                request,
                installation=installation,
                members=members,
                backup=backup,
            )
            is None
        )

    async def current_approvers(
        self, request: ApprovalRequest, *, actor: Actor, installation: Installation
    ) -> frozenset[str] | None:
        """Who of ``request.approved_by`` may still approve it (a DBA who left the group
        since approving no longer counts: ``bot.authorization.still_approving``);
        ``None``: all of them (anyone may decide).

        Raises:
            ApprovalsUnjudgedError: An approver group Slack did not list may hold
                someone who approved earlier; ``actor``'s approval is refused, and the
                refusal kept in the audit trail.
            StoreUnavailableError: The refusal could not be kept.
        """
        if request.rules.approvers is None or not request.approved_by:
            return None
        members, backup = await self._lists(request, installation)
        try:
            return still_approving(request, [m for m in (members, backup) if m is not None])
        except ApprovalsUnjudgedError as exc:
            await self._keep_refusal(actor, "approve", request, exc.answer)
            raise

    async def _lists(
        self, request: ApprovalRequest, installation: Installation
    ) -> tuple[Members, Members | None]:
        """The request's approvers resolved, and its backup approvers once escalated."""
        team_id = installation.team_id
        members = await self.directory.members(team_id, request.rules.approvers or ())
        backup = backup_ids(request)
        return members, await self.directory.members(team_id, backup) if backup else None

"""Who may act on an approval request: a pure function of the signed payload and the
request's rules (docs/architecture.md, "Who decides").

Checked on every click, modal open and modal submission, before anything is recorded,
in this order; the first failure is the answer, in plain words
(``agent_bridge.review_wording``):

1. the actor's workspace (``user.team_id``, else ``team.id``) and Enterprise Grid org are
   the installation's (Bolt's ``authorize_result``, from ``auth.test``), and so is the
   request's;
2. a click is on the request's own card: the payload's ``container`` channel and
   ``message_ts`` are the request's (a modal submission is bound to its opened view by
   ``bot.submissions`` instead);
3. four eyes: the person who started the run may not approve, edit or respond unless
   ``requester_may_approve`` (rejecting stays allowed to them, and needs nothing more);
4. the actor is an approver (or, once escalated, a backup approver); if the lists
   could not be resolved, nobody is: it fails closed.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_bridge import review_wording
from agent_bridge.models import ApprovalRequest
from bot.directory import Members
from bot.mrkdwn import inline_code

TOOL_NAME_MAX_CHARS = 100
DECIDING_ACTIONS = frozenset({"approve", "edit", "respond"})
"""What four eyes forbids the requester (``reject`` stays allowed)."""


@dataclass(frozen=True)
class Actor:
    """The person acting, from the signed payload.

    Attributes:
        user_id: ``user.id``.
        team_id: Their own workspace: ``user.team_id``, else ``team.id``.
        enterprise_id: Their Enterprise Grid org (``enterprise.id``), if any.
    """

    user_id: str
    team_id: str | None
    enterprise_id: str | None = None


@dataclass(frozen=True)
class Installation:
    """The workspace (and org) the app is installed in, from Bolt's ``authorize_result``."""

    team_id: str | None
    enterprise_id: str | None = None


@dataclass(frozen=True)
class Clicked:
    """Where a clicked button lives (``container.channel_id`` / ``message_ts``)."""

    channel_id: str | None
    message_ts: str | None


def approver_ids(request: ApprovalRequest) -> tuple[str, ...] | None:
    """The IDs that may decide ``request`` now (``None``: anyone in the workspace):
    its approvers, and its backup approvers once it is escalated."""
    rules = request.rules
    if rules.approvers is None:
        return None
    backup = rules.escalate_to if request.escalated_at is not None else ()
    return tuple(dict.fromkeys((*rules.approvers, *backup)))


def needs_members(request: ApprovalRequest, action: str, actor: Actor) -> bool:
    """Whether deciding needs the approver list resolved (not for anyone-may lists,
    nor for the requester rejecting their own run)."""
    if approver_ids(request) is None:
        return False
    return not (action == "reject" and actor.user_id == request.requester_id)


def refusal(
    actor: Actor,
    action: str,
    request: ApprovalRequest,
    *,
    installation: Installation,
    members: Members | None,
    clicked: Clicked | None = None,
) -> str | None:
    """Return why ``actor`` may not ``action`` (``approve``, ``edit``, ``reject``,
    ``respond``, or ``view`` for reading the full arguments) ``request``, or ``None``.

    Args:
        actor: Who acts, from the signed payload.
        action: What they do.
        request: The request, as stored now.
        installation: The app's installation.
        members: ``approver_ids(request)`` resolved (``None`` when ``needs_members`` is
            false).
        clicked: For a click or a modal open: where the button was.

    Returns:
        A private answer (mrkdwn), or ``None`` when allowed.
    """
    if installation.team_id is None:
        return review_wording.UNKNOWN_INSTALLATION_TEXT
    if actor.team_id != installation.team_id or request.team_id not in (
        None,
        installation.team_id,
    ):
        return review_wording.OTHER_WORKSPACE_TEXT
    if (installation.enterprise_id or actor.enterprise_id) and (
        actor.enterprise_id != installation.enterprise_id
    ):
        return review_wording.OTHER_WORKSPACE_TEXT
    if clicked is not None and (
        clicked.channel_id != request.channel_id or clicked.message_ts != request.message_ts
    ):
        return review_wording.NOT_THIS_CARD_TEXT
    if action == "view":
        return None
    name = inline_code(request.tool_name, TOOL_NAME_MAX_CHARS)
    is_requester = actor.user_id == request.requester_id
    if is_requester and action in DECIDING_ACTIONS and not request.rules.requester_may_approve:
        return review_wording.four_eyes_text(name)
    if not needs_members(request, action, actor):
        return None
    if members is None or not members.resolved:
        groups = ", ".join(members.unresolved) if members else "?"
        return review_wording.cannot_check_text(groups)
    if actor.user_id not in members.users:
        return review_wording.not_approver_text(name)
    return None

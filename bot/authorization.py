"""Who may act on an approval request: a pure function of the signed payload and the
request's rules (docs/architecture.md, "Who decides").

Checked on every click, modal open and modal submission, before anything is recorded,
in this order; the first failure is the answer, in plain words
(``agent_bridge.review_wording``):

1. the actor's workspace (``user.team_id``, else ``team.id``) and Enterprise Grid org are
   the installation's (Bolt's ``authorize_result``, from ``auth.test``), and so is the
   request's; a request with no workspace (stored before requests kept one, and its run
   had none for the migration to copy: ``agent_bridge.migrations.BACKFILL_REQUEST_TEAMS``)
   is nobody's, so it refuses everyone (it fails closed);
2. a click is on the request's own card: the payload's ``container`` channel and
   ``message_ts`` are the request's; or in the actor's own App Home inbox: the
   container is a Home view whose ``private_metadata`` names the actor (``bot.home``
   publishes each user's view with it; Slack signs the payload). A modal submission is
   bound to its opened view by ``bot.submissions`` instead;
3. four eyes: the person who started the run may not approve, edit or respond unless
   ``requester_may_approve`` (rejecting stays allowed to them, and needs nothing more);
4. the actor is an approver (or, once escalated, a backup approver). Each list counts
   only when all of it was resolved: if the approvers' groups could not be read, nobody
   is authorized by them (it fails closed); a backup list that could not be read does
   not lock out approvers who are known.

Earlier approvals of a quorum count only while their people are still approvers
(``still_approving``): someone a list no longer names is dropped, but only when every
group that could hold them was read; if one could not be, the click that would count
with them is refused instead (it fails closed, and drops nobody's approval).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agent_bridge import review_wording
from agent_bridge.models import ApprovalRequest
from bot.directory import Members
from bot.errors import ApprovalsUnjudgedError
from bot.mrkdwn import inline_code

TOOL_NAME_MAX_CHARS = 100
DECIDING_ACTIONS = frozenset({"approve", "edit", "respond", "ignore"})
"""What four eyes forbids the requester. ``ignore`` is among them: what an ignored
Agent Inbox action leads to is the graph's choice (it goes on without it), so it steers
the run like an approval; only ``reject``, which runs nothing and tells the model so,
stays allowed."""
DECLINING_ACTIONS = frozenset({"reject"})
"""What the requester may do to their own run's requests whoever the approvers are."""


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
    """Where a clicked button lives (``container.channel_id`` / ``message_ts``), or
    in a view (``in_view``): then ``home_of`` is the user whose App Home view holds it
    (from the signed view), ``None`` for any other view."""

    channel_id: str | None
    message_ts: str | None
    in_view: bool = False
    home_of: str | None = None


def needs_members(request: ApprovalRequest, action: str, actor: Actor) -> bool:
    """Whether deciding needs the approver lists resolved (not for anyone-may requests,
    nor for the requester rejecting their own run's)."""
    if request.rules.approvers is None:
        return False
    return not (action in DECLINING_ACTIONS and actor.user_id == request.requester_id)


def home_action(request: ApprovalRequest) -> str:
    """The decision an App Home inbox lists ``request`` for: one other than a reject,
    if it offers one (a reject is open to the requester of their own run), else
    ``reject``. Whoever may make it may read the request's full arguments there."""
    return next((d for d in request.allowed_decisions if d != "reject"), "reject")


def backup_ids(request: ApprovalRequest) -> tuple[str, ...]:
    """The backup approvers who may decide ``request`` now (once it is escalated)."""
    return request.rules.escalate_to if request.escalated_at is not None else ()


def on_its_card(clicked: Clicked, request: ApprovalRequest, actor: Actor) -> bool:
    """Whether the click was on ``request``'s own card, or in the actor's own Home inbox."""
    if clicked.in_view:
        return clicked.home_of is not None and clicked.home_of == actor.user_id
    return clicked.channel_id == request.channel_id and clicked.message_ts == request.message_ts


def refusal(
    actor: Actor,
    action: str,
    request: ApprovalRequest,
    *,
    installation: Installation,
    members: Members | None,
    backup: Members | None = None,
    clicked: Clicked | None = None,
) -> str | None:
    """Return why ``actor`` may not ``action`` (``approve``, ``edit``, ``reject``,
    ``respond``, ``ignore``, or ``view`` for reading the full arguments) ``request``, or
    ``None``.

    Args:
        actor: Who acts, from the signed payload.
        action: What they do.
        request: The request, as stored now.
        installation: The app's installation.
        members: ``request.rules.approvers`` resolved (``None`` when ``needs_members``
            is false).
        backup: ``backup_ids(request)`` resolved, once the request is escalated.
        clicked: For a click or a modal open: where the button was.

    Returns:
        A private answer (mrkdwn), or ``None`` when allowed.
    """
    if installation.team_id is None:
        return review_wording.UNKNOWN_INSTALLATION_TEXT
    if request.team_id is None:
        return review_wording.NO_WORKSPACE_TEXT
    if actor.team_id != installation.team_id or request.team_id != installation.team_id:
        return review_wording.OTHER_WORKSPACE_TEXT
    if (installation.enterprise_id or actor.enterprise_id) and (
        actor.enterprise_id != installation.enterprise_id
    ):
        return review_wording.OTHER_WORKSPACE_TEXT
    if clicked is not None and not on_its_card(clicked, request, actor):
        return review_wording.NOT_THIS_CARD_TEXT
    if action == "view":
        if clicked is None or not clicked.in_view:
            return None  # the card's own button: whoever sees the card may read it
        # a Home view's button names its request in a value the client sends: it reads
        # only what that Home may list, what the actor may decide
        action = home_action(request)
    name = inline_code(request.tool_name, TOOL_NAME_MAX_CHARS)
    is_requester = actor.user_id == request.requester_id
    if is_requester and action in DECIDING_ACTIONS and not request.rules.requester_may_approve:
        can_reject = "reject" in request.allowed_decisions
        return review_wording.four_eyes_text(name, can_reject=can_reject)
    if not needs_members(request, action, actor):
        return None
    lists = [m for m in (members, backup) if m is not None]
    if any(m.resolved and actor.user_id in m.users for m in lists):
        return None
    if members is None:
        return review_wording.cannot_check_text("the approvers")
    unresolved = [m for m in lists if not m.resolved]
    unknown = [g for m in unresolved for g in m.unknown]
    if unknown:
        return review_wording.unknown_groups_text(", ".join(unknown))
    refused = [pair for m in unresolved for pair in m.refused]
    if refused:  # an admin must act: trying again will not help
        return review_wording.approvers_refused_text(refused_groups(refused))
    if unresolved:
        return review_wording.cannot_check_text(
            ", ".join(g for m in unresolved for g in m.unresolved)
        )
    return review_wording.not_approver_text(name)


def still_approving(request: ApprovalRequest, lists: Sequence[Members]) -> frozenset[str]:
    """Of ``request.approved_by``, the people the approver ``lists`` (its approvers and,
    once escalated, its backup approvers, as resolved now) still name.

    A list's ``users`` holds only people it surely names (user IDs it lists, members of
    the groups read), so they count whether or not the rest of it was read. Someone
    named by none is dropped when every group was read, or when Slack says the groups
    not read do not exist (nobody is in them).

    Raises:
        ApprovalsUnjudgedError: Someone is named by none of the lists read and a group
            that could hold them was not read (a passing failure): counting the click
            now would drop their approval on a guess.
    """
    named = frozenset().union(*(m.users for m in lists))
    gone = [u for u in request.approved_by if u not in named]
    unread = tuple(dict.fromkeys(g for m in lists for g in m.unresolved if g not in m.unknown))
    if gone and unread:
        refused = dict(pair for m in lists for pair in m.refused)
        raise ApprovalsUnjudgedError(unread, refused=refused_groups(refused.items()))
    return frozenset(u for u in request.approved_by if u in named)


def refused_groups(refused: Iterable[tuple[str, str]]) -> str:
    """``Members.refused`` as people read it, e.g. ``S0DBA (`missing_scope`)``; each
    group once ("" for none). Slack's codes are shown in code spans, escaped."""
    named = dict(refused)
    return ", ".join(f"{group} ({inline_code(code, 60)})" for group, code in named.items())

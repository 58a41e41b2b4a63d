"""Block Kit for who decides: approver mentions, quorum progress, escalation, and the
pointer a routed card leaves in its run's Slack thread (pure).

The mentions built here, from the policy's user and group IDs (validated when the policy
is loaded and again here), are the only live mentions the product sends: approvers are
notified when a card is posted, backup approvers when it is escalated. Agent text here
(the tool name, an edit's changes, a result) is escaped and framed by ``bot.mrkdwn``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from agent_bridge import review_wording, wording
from agent_bridge.models import ApprovalRequest, ApprovalState
from bot.mrkdwn import inline_code, quote, slack_date, text_object
from bot.outcome_blocks import changes_text, ran_result, result_text

TOOL_NAME_MAX_CHARS = 200
POINTER_WORDS_MAX_CHARS = 500
"""Characters of a reviewer's reason or answer repeated on the pointer."""
_USER = re.compile(r"[UW][A-Z0-9]{2,20}")
_GROUP = re.compile(r"S[A-Z0-9]{2,20}")


def mention(principal: str) -> str:
    """``<@U…>`` for a user, ``<!subteam^S…>`` for a user group; anything else is
    shown as inline code, never live."""
    if _USER.fullmatch(principal):
        return f"<@{principal}>"
    if _GROUP.fullmatch(principal):
        return f"<!subteam^{principal}>"
    return inline_code(principal, 40)


def mentions(principals: Iterable[str]) -> str:
    """Mentions of ``principals``, comma separated."""
    return ", ".join(mention(p) for p in principals)


def review_lines(request: ApprovalRequest) -> list[str]:
    """The lines a pending card adds about who decides and by when: approvers
    (mentioned), the pending edit, quorum progress, escalation, the time limit (and that
    a reminder went out), and why it offers no Edit (``models.EditWithheld``)."""
    rules = request.rules
    lines = []
    if rules.approvers is not None:
        lines.append(review_wording.approvers_line(mentions(rules.approvers)))
    if request.pending_edit is not None and request.approved_by:
        lines.append(review_wording.edit_pending_line(mention(request.approved_by[0])))
    required = request.approvals_required()
    if required > 1:
        lines.append(
            review_wording.quorum_line(
                mentions(request.approved_by), request.approvals_needed, required
            )
        )
    if request.escalated_at is not None and rules.escalate_to:
        lines.append(review_wording.escalated_line(mentions(rules.escalate_to)))
    lines.extend(time_limit(request, reminded=request.reminded_at is not None))
    withheld = edit_withheld_line(request)
    if withheld is not None:
        lines.append(withheld)
    return lines


def edit_withheld_line(request: ApprovalRequest) -> str | None:
    """Why a pending card offers no Edit, naming what the decisions it does offer would
    do (``review_wording.edit_withheld_line``); ``None`` when nothing is withheld."""
    if request.edit_withheld is None:
        return None
    return review_wording.edit_withheld_line(request.edit_withheld, request.allowed_decisions)


def time_limit(request: ApprovalRequest, *, reminded: bool = False) -> list[str]:
    """The request's review time limit as a line (none without one)."""
    if request.expires_at is None or request.timeout_decision is None:
        return []
    outcome = wording.OUTCOMES[request.timeout_decision.type][1].lower()
    when = slack_date(request.expires_at)
    return [review_wording.time_limit_line(when, outcome, reminded=reminded)]


def review_context(request: ApprovalRequest) -> list[dict[str, Any]]:
    """``review_lines`` as one context block (none when there is nothing to say)."""
    lines = review_lines(request) if request.state == ApprovalState.PENDING else []
    if not lines:
        return []
    return [{"type": "context", "elements": [text_object("\n".join(lines))]}]


def approvals_line(request: ApprovalRequest) -> str | None:
    """On a decided card decided by a quorum: who approved it."""
    if len(request.approved_by) < 2 or request.decision is None:
        return None
    if request.decision.type not in ("approve", "edit"):
        return None
    return review_wording.approvals_list(mentions(request.approved_by))


def notify_text(request: ApprovalRequest) -> str:
    """What the first post's notification adds: the approvers, mentioned."""
    if request.rules.approvers is None:
        return ""
    return f" {mentions(request.rules.approvers)}"


def render_pointer(
    request: ApprovalRequest, *, link: str | None
) -> tuple[str, list[dict[str, Any]]]:
    """The one line in the run's Slack thread about a card posted in another channel:
    where it waits, then its outcome (``link``: the card's permalink) and who decided it
    (every approver of a quorum, as its card lists them), with what an edit changed and,
    once the call ran, how it went; a card closed undecided or unapplied
    (its run failed) with its note, which says whether the call may have run."""
    name = inline_code(request.tool_name, TOOL_NAME_MAX_CHARS)
    channel = f"<#{request.channel_id}>" if request.channel_id else "?"
    if request.state == ApprovalState.PENDING and request.reminded_at is not None:
        deadline = " ".join(time_limit(request))  # the latest step: it says by when
        text = review_wording.pointer_reminded_text(name, channel, link, deadline)
    elif request.state == ApprovalState.PENDING and request.escalated_at is not None:
        text = review_wording.pointer_escalated_text(name, channel, link)
    elif request.state == ApprovalState.PENDING:
        text = review_wording.pointer_text(name, channel, link)
    else:
        decision = request.decision if request.state != ApprovalState.CANCELLED else None
        emoji, verb = wording.OUTCOMES[decision.type] if decision else wording.CLOSED_OUTCOME
        outcome = f"{emoji} {verb}"
        if decision is not None and request.decided_by is None:  # the policy's default
            outcome = review_wording.expired_outcome(outcome)
        text = review_wording.pointer_outcome_text(outcome, name, channel, link)
        by = request.decided_by
        if decision is not None and approvals_line(request) is not None:  # a quorum's
            text += f" {review_wording.decided_by_text(mentions(request.approved_by))}"
        elif decision is not None and by is not None and _USER.fullmatch(by):
            text += f" {review_wording.decided_by_text(mention(by))}"
        if decision is not None and decision.type in ("reject", "respond") and decision.message:
            text += f"\n{quote(decision.message, POINTER_WORDS_MAX_CHARS)[0]}"
        if decision is not None and decision.type == "edit":
            text += f"\n{wording.EDIT_CHANGED_LEAD}\n{changes_text(request, decision)[0]}"
        result = ran_result(request)
        if result is not None:
            text += f"\n{result_text(result, request.run_id)}"
        if request.state == ApprovalState.CANCELLED and request.note:
            text += f"\n{quote(request.note, POINTER_WORDS_MAX_CHARS)[0]}"  # why; if it ran
    return text, [{"type": "section", "text": text_object(text)}]


def render_escalation(request: ApprovalRequest, *, waited: str) -> tuple[str, list[dict[str, Any]]]:
    """Posted under the card when it is escalated, mentioning the backup approvers."""
    name = inline_code(request.tool_name, TOOL_NAME_MAX_CHARS)
    text = review_wording.escalation_text(name, mentions(request.rules.escalate_to), waited)
    return text, [{"type": "section", "text": text_object(text)}]

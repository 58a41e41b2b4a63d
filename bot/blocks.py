"""Block Kit messages: approval cards, their decided form, and a run's progress notes.

Pure functions of data (no client, no env, no I/O); the notifier posts what they return.
Every piece of agent text goes through a frame of ``bot.mrkdwn`` (escaped, marked, cut
between graphemes): names and labels in ``inline_code``, values, tool output and errors
in ``code_block``, the description, task, reason and answers in ``quote``; every mrkdwn
text object is a ``text_object`` (``verbatim``: no auto-linked URLs). The mentions
rendered are the reviewer's
``<@U…>``, whose ID comes from Slack, and the approvers' (``bot.review_blocks``), from
the policy; never the agent's.

Limits (https://api.slack.com/reference/block-kit/blocks): 50 blocks per message, 3,000
characters per section text, 2,000 per button value (ours is only the request ID);
fallback ``text`` is kept to 3,000 characters; a message's text in all stays under about
12,000 characters (``msg_blocks_too_long``, slackapi/bolt-js#2509), hence the budgets.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from agent_bridge import interrupt_wording, wording
from agent_bridge.interrupt_shapes import INTERRUPT_NAME
from agent_bridge.models import (
    ALL_DECISION_TYPES,
    ApprovalRequest,
    ApprovalState,
    DecisionType,
    Run,
    RunState,
)
from agent_bridge.notifier import Answered
from bot import ids
from bot.arg_blocks import SECTION_TEXT_MAX_CHARS, arg_sections, arg_text
from bot.context_blocks import context_blocks
from bot.mrkdwn import (
    code_block,
    escape,
    inline_code,
    one_line,
    quote,
    quote_pieces,
    slack_date,
    text_object,
)
from bot.outcome_blocks import changes_text, ran_result, result_text
from bot.review_blocks import approvals_line, notify_text, review_context
from bot.risk_blocks import risk_section

FALLBACK_TEXT_MAX_CHARS = 3000
DESCRIPTION_MAX_CHARS = 1000
ARGS_BUDGET_CHARS = 6000
"""Characters of argument values on one card; the rest of the ~12,000 is for the others."""
OUTCOME_MAX_CHARS = 2000
"""Reason, answer or an edit's changes shown on a decided card."""
ANSWER_BUDGET_CHARS = 9000
"""Characters of a final answer shown across its sections."""
LABEL_MAX_CHARS = 200
TASK_MAX_CHARS = 300
"""Characters of a run's task shown on its first message (the task can be huge)."""
TOOL_NAME_MAX_CHARS = 200
FIELD_NAME_MAX_CHARS = 60
FIELDS_SHOWN = 10
"""A pending form card lists at most this many of its fields' names, each cut here."""
ASKING_MODES = frozenset({"json_schema", "plain_value"})
"""Modes whose request asks the reviewer something rather than shows a call."""

Message = tuple[str, list[dict[str, Any]]]
"""``(fallback text, blocks)`` for ``chat.postMessage`` / ``chat.update``."""

_BUTTON_STYLES: dict[DecisionType, str] = {"approve": "primary", "reject": "danger"}
_SLACK_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")
"""A user ID that cannot break out of ``<@…>`` (no ``|``, ``<``, ``>``, ``&``, ``^``)."""


def render_approval(
    request: ApprovalRequest, *, run: Run, decided_count: int = 0
) -> list[dict[str, Any]]:
    """Render the card asking a reviewer to decide on one gated tool call.

    Args:
        request: the approval request; its ``allowed_decisions`` pick the buttons.
        run: its run (who asked, the task, its Slack thread: ``bot.context_blocks``).
        decided_count: how many calls of the same batch are decided (shown when
            ``request.batch_size > 1``).

    Returns:
        Blocks: heading (tool name and description), the context (who asked, the task,
        the run's thread, the model's reason), what a pending edit changed, one section
        per argument, a "View full arguments" button (``ids.VIEW_ARGS_ACTION``) when
        anything was cut, one button per allowed decision in the order approve, edit,
        reject, respond (action ``ids.decision_action_id(d)``, value
        ``<request_id>.<version>``), who decides, and the batch's progress.
    """
    blocks = _card(request, run, _pending_label(request), request.current_args)
    blocks.extend(decision_actions(request))
    progress = wording.progress_text(decided_count, request.batch_size)
    return blocks + review_context(request) + _context(request, progress)


def decision_actions(request: ApprovalRequest) -> list[dict[str, Any]]:
    """The card's decision buttons, one per allowed decision in the order approve, edit,
    reject, respond, ignore (action ``ids.decision_action_id(d)``, value
    ``<request_id>.<version>``), as one ``actions`` block; none when nothing is allowed.
    A form interrupt's edit button reads "Fill in". The App Home inbox shows the same
    buttons (``bot.home_blocks``)."""
    buttons = [
        _decision_button(d, ids.decision_value(request.request_id, request.version), request)
        for d in ALL_DECISION_TYPES
        if d in request.allowed_decisions
    ]
    return [{"type": "actions", "elements": buttons}] if buttons else []


def render_decided(request: ApprovalRequest, *, run: Run) -> list[dict[str, Any]]:
    """Render the card after a decision: no decision buttons, and who decided how, when.

    Args:
        request: a decided request (``decision``, ``decided_by``, ``decided_at``; its
            ``result`` once the call ran).
        run: as for :func:`render_approval`.

    Returns:
        The card's blocks (the "View full arguments" button stays when the card was
        cut), a section with the outcome: ✅ Approved / ✏️ Edited (what changed) /
        ❌ Rejected (reason) / 💬 Responded (answer), by ``<@reviewer>``, at a Slack date;
        and once the call ran, whether it succeeded (with the start of its output) or
        failed.
    """
    edit = request.decision if request.decision and request.decision.type == "edit" else None
    if edit is not None:  # the call as it ran; what the edit changed follows the outcome
        form = request.mode == "json_schema"
        label = interrupt_wording.FORM_DECIDED_LABEL if form else wording.CARD_EDITED_LABEL
        blocks = _card(request, run, label, edit.edited_args or {})
    else:
        blocks = _card(request, run, wording.CARD_DECIDED_LABEL, request.args)
    approvals = approvals_line(request)
    text = f"{_outcome_line(request)}{_outcome_details(request)}"
    blocks.append(_section(f"{text}\n{approvals}" if approvals else text))
    result = ran_result(request)
    if result is not None:
        blocks.append(_section(result_text(result, run.run_id)))
    return blocks + _context(request, None)


def approval_text(request: ApprovalRequest) -> str:
    """Notification text of an approval card (escaped, ≤ 3,000 characters)."""
    raw = wording.approval_fallback(request.tool_name, request.description)
    notify = notify_text(request)  # the approvers' mentions: built from the policy, live
    return _fallback(raw, FALLBACK_TEXT_MAX_CHARS - len(notify)) + notify


def decided_text(request: ApprovalRequest) -> str:
    """Notification text of a decided card, e.g. "✅ Approved: write_file"."""
    emoji, verb = _outcome(request)
    return _fallback(f"{emoji} {verb}: {request.tool_name}")


def already_decided_text(request: ApprovalRequest) -> str:
    """The private note for a click that lost the race: who decided, how and when
    (and why, when no one did: it expired, or its run failed)."""
    why = quote(request.note, 300)[0] if request.note and not request.decided_by else None
    return wording.already_decided_text(_outcome_line(request), why)


def already_decided_plain(request: ApprovalRequest) -> str:
    """The same note as plain text, for a modal field error (which shows no mrkdwn)."""
    _, verb = _outcome(request)
    when = ""
    if request.decided_at is not None:
        time_utc = datetime.fromtimestamp(request.decided_at, UTC).strftime("%H:%M UTC")
        when = wording.at_time_plain(time_utc)
    return wording.already_decided_plain(verb.lower(), when)


_RUN_STATUS: dict[RunState, tuple[str, str]] = {
    RunState.DONE: wording.RUN_DONE_STATUS,
    RunState.FAILED: wording.RUN_FAILED_STATUS,
}


def render_run_started(run: Run) -> Message:
    """Render the first message of a run (its Slack thread): status and task.

    Redrawn when the run ends, so the channel shows at a glance which runs are done.
    Returns ``(text, blocks)``.
    """
    status, verb = _RUN_STATUS.get(run.state, wording.RUN_WORKING_STATUS)
    task, _ = quote(run.task, TASK_MAX_CHARS)
    run_id = inline_code(run.run_id, 100)
    blocks = [
        _section(f"{status}\n{task}"),
        {"type": "context", "elements": [text_object(wording.run_context_text(run_id))]},
    ]
    return _fallback(f"{verb}: {run.task}", TASK_MAX_CHARS), blocks


def render_tool_result(
    tool_name: str,
    content: str | None,
    *,
    ok: bool,
    run_id: str = "",
    answered: Answered | None = None,
) -> Message:
    """Render a tool's output (or failure) in the run's Slack thread.

    Args:
        tool_name: The tool (agent text: shown as inline code).
        content: Its output; ``None``: not shown, one line instead: that it ran (the
            policy's ``post_results``) or that it failed, with the details in the
            worker's log under ``run_id``.
        ok: Whether it succeeded.
        run_id: The run, named in a failure's line.
        answered: The call did not run: a reviewer rejected it or answered instead, and
            ``content`` is their reason or answer (quoted).

    Returns:
        ``(text, blocks)``.
    """
    name = inline_code(tool_name, TOOL_NAME_MAX_CHARS)
    if content is None:
        line = (
            wording.output_not_posted_text(name)
            if ok
            else wording.tool_failed_text(name, inline_code(run_id, 100))
        )
        fallback = wording.tool_ran_fallback(tool_name, ok=ok)
        return _fallback(fallback), [_section(line)]
    if answered is not None:
        heading = wording.answered_heading(name, answered)
        words = quote(content, SECTION_TEXT_MAX_CHARS - len(heading) - 1)[0] if content else ""
        fallback = wording.answered_fallback(tool_name, answered)
        return _fallback(fallback), [_section(f"{heading}\n{words}" if words else heading)]
    heading = wording.tool_result_heading(name, ok=ok)
    body, cut = code_block(content, SECTION_TEXT_MAX_CHARS - len(heading) - 1)
    blocks = [_section(f"{heading}\n{body}" if content else f"{heading} {wording.NO_OUTPUT}")]
    if cut:
        blocks.append(_note(wording.output_shortened_text(len(content))))
    text = wording.tool_result_fallback(tool_name, content, ok=ok)
    return _fallback(text), blocks


def render_final_answer(text: str) -> Message:
    """Render the agent's final answer, split across sections. Returns ``(text, blocks)``."""
    pieces, cut = quote_pieces(text, ANSWER_BUDGET_CHARS, piece_chars=SECTION_TEXT_MAX_CHARS)
    blocks = [_section(piece) for piece in pieces or [wording.NO_ANSWER]]
    if cut:
        blocks.append(_note(wording.answer_shortened_text(len(text))))
    return _fallback(text or wording.NO_ANSWER), blocks


def render_run_failed(run_id: str) -> Message:
    """Render a run's failure: one sentence naming the run, never the error (exception
    text can hold server paths and data; it is in the worker's log). Returns
    ``(text, blocks)``."""
    text = wording.run_failed_text(inline_code(run_id, 100))
    return _fallback(wording.run_failed_fallback(run_id)), [_section(text)]


def render_reminder(request: ApprovalRequest) -> Message:
    """Render the half-time reminder of a request with a review time limit."""
    name = inline_code(request.tool_name, TOOL_NAME_MAX_CHARS)
    when = (
        slack_date(request.expires_at) if request.expires_at is not None else wording.REMINDER_SOON
    )
    outcome = (
        wording.OUTCOMES[request.timeout_decision.type][1].lower()
        if request.timeout_decision
        else wording.DECIDED_VERB
    )
    text = wording.reminder_text(name, when, outcome) + notify_text(request)
    fallback = _fallback(wording.reminder_fallback(request.tool_name))
    return fallback + notify_text(request), [_section(text)]


def render_ran_without_review(tool_name: str, args: dict[str, Any]) -> Message:
    """Render a note that a gated tool's call ran without review (its ``when`` predicate
    let it through). Returns ``(text, blocks)``."""
    name = inline_code(tool_name, TOOL_NAME_MAX_CHARS)
    heading = wording.ran_without_review_heading(name)
    body, cut = code_block(arg_text(args), SECTION_TEXT_MAX_CHARS - len(heading) - 1)
    blocks = [_section(f"{heading}\n{body}")]
    if cut:
        blocks.append(_note(wording.ARGUMENTS_SHORTENED))
    fallback = wording.ran_without_review_fallback(tool_name)
    return _fallback(fallback), blocks


def _card(
    request: ApprovalRequest, run: Run, label: str, args: dict[str, Any]
) -> list[dict[str, Any]]:
    """Heading, context, a pending edit's changes, ``args``' sections and, when anything
    was cut, the full-arguments button."""
    if request.tool_name == INTERRUPT_NAME and request.mode in ASKING_MODES:
        heading = label.removesuffix(":*") + "*"  # the graph named nothing: no name to show
    else:
        heading = f"{label} {inline_code(request.tool_name, TOOL_NAME_MAX_CHARS)}"
    description, description_cut = quote(request.description.strip(), DESCRIPTION_MAX_CHARS)
    blocks = [_section(f"{heading}\n{description}" if description else heading)]
    risk, risk_cut = risk_section(request)
    blocks.extend(risk)  # what the whole SQL would do, read first
    context, context_cut = context_blocks(request, run)
    blocks.extend(context)
    edit_cut = False
    if request.state == ApprovalState.PENDING and request.pending_edit is not None:
        changed, edit_cut = changes_text(request, request.pending_edit)
        blocks.append(_section(f"{wording.PENDING_EDIT_LEAD}\n{changed}"))
    args_cut = False
    if args or request.mode not in ASKING_MODES:  # a question or form has no call to show
        sections, args_cut = arg_sections(args, ARGS_BUDGET_CHARS)
        blocks.extend(sections)
    fields = _form_fields(request) if request.state == ApprovalState.PENDING else None
    if fields:
        blocks.append(_section(fields))
    cuts = (description_cut, context_cut, args_cut, edit_cut, risk_cut, _edited_cut(request))
    if any(cuts):
        blocks.append(
            {
                **_section(wording.CARD_SHORTENED),
                "accessory": {
                    "type": "button",
                    "action_id": ids.VIEW_ARGS_ACTION,
                    "text": _plain(wording.VIEW_FULL_ARGS_BUTTON),
                    "value": request.request_id,
                },
            }
        )
    return blocks


def _form_fields(request: ApprovalRequest) -> str | None:
    """What a pending form asks for (its schema's property names), or ``None``."""
    properties = request.args_schema.get("properties") if request.mode == "json_schema" else None
    if not isinstance(properties, dict) or not properties:
        return None
    names = [
        inline_code(str(name), FIELD_NAME_MAX_CHARS) for name in list(properties)[:FIELDS_SHOWN]
    ]
    return interrupt_wording.form_fields_line(names, more=len(properties) > FIELDS_SHOWN)


def _pending_label(request: ApprovalRequest) -> str:
    """A pending card's heading: a question, a form to fill in, or an approval."""
    if request.is_question():
        return wording.CARD_ASKS_LABEL
    if request.mode == "json_schema":
        return interrupt_wording.FORM_CARD_LABEL
    return wording.CARD_APPROVAL_LABEL


def _decision_button(
    decision: DecisionType, value: str, request: ApprovalRequest
) -> dict[str, Any]:
    form = decision == "edit" and request.mode == "json_schema"
    button = {
        "type": "button",
        "action_id": ids.decision_action_id(decision),
        "text": _plain(
            interrupt_wording.FORM_BUTTON if form else wording.DECISION_BUTTONS[decision]
        ),
        "value": value,
    }
    style = _BUTTON_STYLES.get(decision)
    return {**button, "style": style} if style else button


def _context(request: ApprovalRequest, progress: str | None) -> list[dict[str, Any]]:
    parts = []
    if request.batch_size > 1:
        if progress:
            parts.append(progress)
        parts.append(wording.call_position_text(request.index, request.batch_size))
    if not parts:
        return []
    return [{"type": "context", "elements": [text_object(" · ".join(parts))]}]


def _outcome(request: ApprovalRequest) -> tuple[str, str]:
    if request.decision is None:  # closed before anyone decided (its run failed)
        return wording.CLOSED_OUTCOME
    if request.decision.type == "edit" and request.mode == "json_schema":
        return interrupt_wording.FORM_OUTCOME
    return wording.OUTCOMES[request.decision.type]


def _outcome_line(request: ApprovalRequest) -> str:
    """``✅ *Approved* by <@U1> <!date^…>``: how, who (when a valid ID), when (if known)."""
    emoji, verb = _outcome(request)
    by = request.decided_by
    return wording.outcome_line(
        emoji,
        verb,
        user_id=by if by and _SLACK_ID.fullmatch(by) else None,
        when=slack_date(request.decided_at) if request.decided_at is not None else None,
    )


def _outcome_details(request: ApprovalRequest) -> str:
    decision = request.decision
    if decision is None:
        return ""
    if decision.type == "edit":
        changed, _ = changes_text(request, decision)
        form = request.mode == "json_schema"
        lead = interrupt_wording.FORM_CHANGED_LEAD if form else wording.EDIT_CHANGED_LEAD
        return f"\n{lead}\n{changed}"
    if decision.type in ("reject", "respond") and decision.message:
        lead = wording.REASON_LEAD if decision.type == "reject" else wording.ANSWER_LEAD
        return f"\n{lead}\n{quote(decision.message, OUTCOME_MAX_CHARS)[0]}"
    return ""


def _edited_cut(request: ApprovalRequest) -> bool:
    decision = request.decision
    if decision is None or decision.type != "edit":
        return False
    return changes_text(request, decision)[1]


def _fallback(raw: str, limit: int = FALLBACK_TEXT_MAX_CHARS) -> str:
    """A message's notification ``text`` (push, desktop, screen readers: no frames
    there): ``raw`` escaped on one line, so no line of agent text in it stands alone."""
    return one_line(raw, limit)[0]


def _note(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [text_object(escape(text))]}


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": text_object(text)}


def _plain(text: str) -> dict[str, str]:
    return {"type": "plain_text", "text": text}

"""Block Kit modals: edit, reject, respond, and the read-only full arguments.

Pure functions of an ``ApprovalRequest`` returning a view dict for ``views.open``. A
decision modal carries only its opened view's key in ``private_metadata``
(``agent_bridge.access_records.OpenedView``: the submission is accepted only for that
user, request and version), never the arguments; the read-only full-arguments modal
carries the request ID. Each has its ``callback_id`` from ``bot.ids``; agent text is
framed by ``bot.mrkdwn`` (the tool name in ``inline_code``, the description in
``quote``, arguments as in ``bot.arg_blocks``).

Limits (https://api.slack.com/reference/surfaces/views): title, submit and close ≤ 24
characters; at most 100 blocks; ``private_metadata`` ≤ 3,000 characters.
"""

from __future__ import annotations

import re
from typing import Any

from agent_bridge import interrupt_wording, wording
from agent_bridge.decisions import MESSAGE_MAX_CHARS
from agent_bridge.models import ApprovalRequest, Run
from agent_bridge.redaction import without_secret_defaults
from bot import ids
from bot.arg_blocks import SECTION_TEXT_MAX_CHARS, arg_sections, full_sections
from bot.context_blocks import FULL_TEXT_MAX_CHARS, full_context_sections
from bot.edit_form import render_inputs
from bot.mrkdwn import (
    QUOTE_PREFIX,
    ZERO_WIDTH_SPACE,
    inline_code,
    quote,
    quote_pieces,
    text_object,
    unescape,
)
from bot.risk_blocks import risk_blocks

VIEW_MAX_BLOCKS = 100
DESCRIPTION_MAX_CHARS = 1000
CALL_BUDGET_CHARS = 6000
"""Characters of argument values shown above the reason or answer box of a modal."""
_FENCES = re.compile(r"^```\n|\n```$", re.MULTILINE)


def render_edit_modal(request: ApprovalRequest, *, view_key: str) -> dict[str, Any]:
    """Render the modal to edit a call's arguments (``ids.EDIT_CALLBACK``).

    Returns:
        A view whose inputs come from ``bot.edit_form.render_inputs`` (typed from
        ``request.args_schema``, prefilled with ``request.args``); for a ``json_schema``
        interrupt, the form it asks for, in its words (``agent_bridge.interrupt_wording``).
    """
    form = request.mode == "json_schema"  # a form the agent asks for, not a call's edit
    lead = interrupt_wording.form_intro if form else wording.edit_intro
    intro = f"{lead(_tool(request))}{_description(request)}"
    schema = without_secret_defaults(request.args_schema, request.redact)
    blocks = [_section(intro), *render_inputs(schema, request.current_args)]
    title, submit = (
        (interrupt_wording.FORM_TITLE, interrupt_wording.FORM_SUBMIT)
        if form
        else (wording.EDIT_TITLE, wording.EDIT_SUBMIT)
    )
    return _modal(ids.EDIT_CALLBACK, title, blocks, view_key, submit=submit)


def render_reject_modal(request: ApprovalRequest, *, view_key: str) -> dict[str, Any]:
    """Render the modal asking for an optional reason (``ids.REJECT_CALLBACK``).

    Returns:
        A view showing the call it rejects (tool, description, arguments, escaped and
        cut) over one optional multiline input (``ids.REASON_BLOCK`` /
        ``ids.REASON_ACTION``); the reason is sent to the agent.
    """
    intro = f"{wording.reject_intro(_tool(request))}{_description(request)}"
    reason = _text_input(ids.REASON_BLOCK, ids.REASON_ACTION, wording.REASON_LABEL, optional=True)
    blocks = [_section(intro), *_call_blocks(request), reason]
    return _modal(
        ids.REJECT_CALLBACK, wording.REJECT_TITLE, blocks, view_key, submit=wording.REJECT_SUBMIT
    )


def render_respond_modal(request: ApprovalRequest, *, view_key: str) -> dict[str, Any]:
    """Render the modal answering the agent instead of running the call.

    Returns:
        A view (``ids.RESPOND_CALLBACK``) showing the question (the description and
        arguments, escaped and cut) and one required multiline input
        (``ids.ANSWER_BLOCK`` / ``ids.ANSWER_ACTION``).
    """
    heading = wording.respond_intro(_tool(request), asks=request.is_question())
    blocks = [_section(f"{heading}{_description(request)}"), *_call_blocks(request)]
    blocks.append(_text_input(ids.ANSWER_BLOCK, ids.ANSWER_ACTION, wording.ANSWER_LABEL))
    return _modal(
        ids.RESPOND_CALLBACK, wording.RESPOND_TITLE, blocks, view_key, submit=wording.RESPOND_SUBMIT
    )


def _call_blocks(request: ApprovalRequest) -> list[dict[str, Any]]:
    """The call a decision modal decides on: its SQL risk (``bot.risk_blocks``) and its
    arguments as they would run now, shortened to ``CALL_BUDGET_CHARS`` (a note says so:
    the card shows them whole)."""
    sections, cut = arg_sections(request.current_args, CALL_BUDGET_CHARS)
    shortened = [_context(wording.MODAL_SHORTENED)] if cut else []
    return [*risk_blocks(request), *sections, *shortened]


def render_full_args_modal(request: ApprovalRequest, run: Run | None) -> dict[str, Any]:
    """Render a read-only modal with every character of the call (no submit button).

    Args:
        request: The request.
        run: Its run, for the task (``None``: the task is left out).

    Returns:
        A view: the tool, the run's task and the model's reason whole
        (``bot.context_blocks.full_context_sections``), its whole description, every
        argument in full (split across as many sections as needed) and, after an edit,
        the new arguments in full. When that is more than 100 blocks, the last block says
        how many characters of the call are left out.
    """
    blocks = [_section(wording.full_args_intro(_tool(request))), *risk_blocks(request, whole=True)]
    blocks.extend(full_context_sections(request, run))
    pieces, _ = quote_pieces(
        request.description.strip(), FULL_TEXT_MAX_CHARS, piece_chars=SECTION_TEXT_MAX_CHARS
    )
    blocks.extend(_section(piece) for piece in pieces)
    blocks.extend(full_sections(request.args))
    decision = request.decision or request.pending_edit
    if decision is not None and decision.type == "edit":
        blocks.append(_section(wording.NEW_ARGUMENTS_HEADING))
        blocks.extend(full_sections(decision.edited_args or {}))
    if len(blocks) > VIEW_MAX_BLOCKS:
        left_out = sum(_raw_chars(b["text"]["text"]) for b in blocks[VIEW_MAX_BLOCKS - 1 :])
        blocks = blocks[: VIEW_MAX_BLOCKS - 1]
        blocks.append(_context(wording.left_out_text(left_out)))
    return _modal(
        None, wording.FULL_ARGS_TITLE, blocks, request.request_id, close=wording.CLOSE_BUTTON
    )


def _modal(
    callback_id: str | None,
    title: str,
    blocks: list[dict[str, Any]],
    private_metadata: str,
    *,
    submit: str | None = None,
    close: str = wording.CANCEL_BUTTON,
) -> dict[str, Any]:
    view: dict[str, Any] = {
        "type": "modal",
        "title": _plain(title),
        "close": _plain(close),
        "private_metadata": private_metadata,
        "blocks": blocks,
    }
    if callback_id:
        view["callback_id"] = callback_id
    if submit:
        view["submit"] = _plain(submit)
    return view


def _tool(request: ApprovalRequest) -> str:
    return inline_code(request.tool_name, 200)


def _description(request: ApprovalRequest) -> str:
    text, _ = quote(request.description.strip(), DESCRIPTION_MAX_CHARS)
    return f"\n{text}" if text else ""


def _text_input(
    block_id: str, action_id: str, label: str, *, optional: bool = False
) -> dict[str, Any]:
    return {
        "type": "input",
        "block_id": block_id,
        "label": _plain(label),
        "optional": optional,
        "element": {
            "type": "plain_text_input",
            "action_id": action_id,
            "multiline": True,
            "max_length": MESSAGE_MAX_CHARS,
        },
    }


def _raw_chars(text: str) -> int:
    """Roughly how many characters of agent text an escaped, fenced section holds."""
    text = _FENCES.sub("", text).replace(ZERO_WIDTH_SPACE, "")
    text = text.replace(f"\n{QUOTE_PREFIX}", "\n").removeprefix(QUOTE_PREFIX)
    return len(unescape(text))


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": text_object(text)}


def _context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [text_object(text)]}


def _plain(text: str) -> dict[str, str]:
    return {"type": "plain_text", "text": text}

"""A run's first message while it works: status, task, and what ran without review.

A pure function of data (``agent_bridge.progress.Progress``), like the cards. Tool names
are escaped inline code (``bot.mrkdwn``); links are Slack's own permalinks of the cards
(``bot.home_blocks.safe_link``). Done and failed are the first message's own final
drawing (``bot.blocks.render_run_started``).
"""

from __future__ import annotations

import re
from typing import Any

from agent_bridge import progress_wording, wording
from agent_bridge.models import Run, RunState
from agent_bridge.progress import Phase, Progress
from bot.blocks import TASK_MAX_CHARS, Message, render_run_started
from bot.home_blocks import safe_link
from bot.mrkdwn import inline_code, one_line, quote, text_object

TOOL_NAME_MAX_CHARS = 100
PLAIN_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,98}[A-Za-z0-9])?")
"""A tool name shown as a link's label: letters, digits, ``_``, ``.`` and ``-``, starting
and ending with a letter or digit, so no mrkdwn mark (``*``, ``~``, ``:``, a ``_`` at an
end, code marks) formats it; Slack formats a label's text (a compiled graph's interrupt
may name anything). Another name is shown as code, its link beside it."""
TOOLS_SHOWN_MAX = 8
CARDS_SHOWN_MAX = 10
"""Tools and card links named on the status line; the rest are counted."""
_FINAL = {Phase.DONE: RunState.DONE, Phase.FAILED: RunState.FAILED}


def render_progress(run: Run, progress: Progress) -> Message:
    """Render ``run``'s first message for ``progress``; returns ``(text, blocks)``.

    Thinking, running tools (named), waiting for approval (each card's tool, linked to
    the card), then the task, the tools that ran without review with their counts, and
    the run's ID. Done and failed are ``render_run_started`` of the ended run.
    """
    if progress.phase in _FINAL:
        return render_run_started(run.model_copy(update={"state": _FINAL[progress.phase]}))
    status, fallback = _status(progress)
    task, _ = quote(run.task, TASK_MAX_CHARS)
    blocks: list[dict[str, Any]] = [_section(f"{status}\n{task}")]
    if progress.unreviewed:
        ran = _names(
            [f"{inline_code(n, TOOL_NAME_MAX_CHARS)}{progress_wording.times_text(c)}"
             for n, c in progress.unreviewed]
        )  # fmt: skip
        blocks.append(_context(f"{progress_wording.UNREVIEWED_LEAD} {ran}"))
    run_id = inline_code(run.run_id, 100)
    blocks.append(_context(wording.run_context_text(run_id)))
    text, _ = one_line(f"{fallback}: {run.task}", TASK_MAX_CHARS)  # escaped, as a card's
    return text, blocks


def _status(progress: Progress) -> tuple[str, str]:
    if progress.phase == Phase.RUNNING_TOOLS:
        tools = _names([inline_code(n, TOOL_NAME_MAX_CHARS) for n in progress.running])
        return f"{progress_wording.RUNNING_STATUS} {tools}", progress_wording.WORKING_FALLBACK
    if progress.phase == Phase.WAITING:
        cards = []
        for card in progress.waiting:
            link = safe_link(card.link)
            name = inline_code(card.tool_name, TOOL_NAME_MAX_CHARS)
            if link and PLAIN_NAME.fullmatch(card.tool_name):
                cards.append(f"<{link}|{card.tool_name}>")  # the name itself, linked
            elif link:  # formatting in a label renders: the name as code, the link apart
                cards.append(f"{name} (<{link}|{progress_wording.OPEN_CARD}>)")
            else:
                cards.append(name)
        shown = _names(cards, CARDS_SHOWN_MAX)
        status = (
            f"{progress_wording.WAITING_STATUS}: {shown}"
            if shown
            else (progress_wording.WAITING_STATUS)
        )
        return status, progress_wording.WAITING_FALLBACK
    return progress_wording.THINKING_STATUS, progress_wording.WORKING_FALLBACK


def _names(names: list[str], limit: int = TOOLS_SHOWN_MAX) -> str:
    shown = ", ".join(names[:limit])
    if len(names) > limit:
        shown += " " + progress_wording.CARDS_MORE.format(count=len(names) - limit)
    return shown


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": text_object(text)}


def _context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [text_object(text)]}

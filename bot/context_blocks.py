"""What a card says about where a call comes from: who asked, the task, the run's Slack
thread, and the model's own reason for the call (pure).

A reviewer decides from the card alone (docs/architecture.md, "The card"), so every card
carries this, cut to Block Kit's limits; the full-arguments modal shows the task and the
reason whole. The requester is named as text, never ``<@U…>``: naming them must not
notify them (https://docs.slack.dev/messaging/formatting-message-text#mentioning-users).
Their name (Slack's), the task and the reason (the agent's) are data: escaped and framed
by ``bot.mrkdwn``. The one link is the run's first message's permalink, from Slack.
"""

from __future__ import annotations

import re
from typing import Any

from agent_bridge import wording
from agent_bridge.models import ApprovalRequest, Run
from bot.mrkdwn import inline_code, split_code_blocks, truncate

NAME_MAX_CHARS = 80
TASK_MAX_CHARS = 300
"""Characters of the run's task on a card (the whole task is in the full-arguments modal)."""
REASON_MAX_CHARS = 1500
"""Characters of the model's reason on a card; a section holds 3,000."""
RUN_ID_MAX_CHARS = 60
SECTION_TEXT_MAX_CHARS = 3000
_PERMALINK = re.compile(r"https?://[^\s|<>]+")
"""A link Slack gave (``chat.getPermalink``; the local sandbox's is ``http``) that cannot
break out of ``<url|label>``."""


def context_blocks(request: ApprovalRequest, run: Run) -> tuple[list[dict[str, Any]], bool]:
    """The card's context: one line of who asked and where the run is, the task, and the
    model's reason (when it gave one).

    Args:
        request: The request (its ``reason``, ``channel_id`` and ``thread_ts``).
        run: Its run (``requester_name``, ``user_id``, ``task``, ``thread_link``).

    Returns:
        ``(blocks, cut)``: a context block and, with a reason, a section quoting it;
        ``cut`` tells whether the task or the reason was shortened (the card then offers
        the full-arguments modal).
    """
    task, task_cut = one_line(run.task, TASK_MAX_CHARS)
    who = one_line(run.requester_name, NAME_MAX_CHARS)[0] if run.requester_name else None
    parts = [wording.asked_by_text(who or inline_code(run.user_id, 40))]
    parts.append(wording.run_context_text(inline_code(run.run_id, RUN_ID_MAX_CHARS)))
    link = run.thread_link
    if link and _PERMALINK.fullmatch(link) and request.thread_ts != run.thread_ts:
        parts.append(f"<{link}|{wording.RUN_THREAD_LINK}>")
    lines = [" · ".join(parts), wording.task_line(task)]
    blocks: list[dict[str, Any]] = [
        {"type": "context", "elements": [{"type": "mrkdwn", "text": "\n".join(lines)}]}
    ]
    reason_cut = False
    if request.reason:
        lead = wording.REASON_FROM_AGENT_LEAD
        reason, reason_cut = quote(request.reason, min(REASON_MAX_CHARS, 2900 - len(lead)))
        blocks.append(_section(f"{lead}\n{reason}"))
    return blocks, task_cut or reason_cut


def full_context_sections(request: ApprovalRequest, run: Run | None) -> list[dict[str, Any]]:
    """The task and the model's reason whole, for the full-arguments modal: as many
    sections as they need (the task is left out when the run is unknown)."""
    sections = []
    if run is not None:
        sections.append(_section(wording.TASK_HEADING))
        sections.extend(_pieces(run.task))
    if request.reason:
        sections.append(_section(wording.REASON_FROM_AGENT_LEAD))
        sections.extend(_pieces(request.reason))
    return sections


def _pieces(text: str) -> list[dict[str, Any]]:
    return [_section(piece) for piece in split_code_blocks(text, SECTION_TEXT_MAX_CHARS)]


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


# STAND-IN until the frames branch lands bot.mrkdwn's prose frames (merge: delete these).
def quote(text: str, limit: int) -> tuple[str, bool]:
    """Stand-in: ``text`` escaped as a block quote, every line prefixed."""
    shown, cut = truncate(text, max(limit - 2 * (text.count("\n") + 1), 10))
    return "\n".join(f"> {line}" for line in shown.split("\n")), cut


def one_line(text: str, limit: int) -> tuple[str, bool]:
    """Stand-in: ``text`` escaped on one line (line breaks shown as ⏎)."""
    return truncate(text.replace("\n", " ⏎ "), limit)

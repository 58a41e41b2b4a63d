"""The approval card of a request in its current state (pure).

``draw_card`` is the one drawing of a card: ``bot.card_owner`` calls it for the first
post and for every redraw, in the web process and the worker alike, so a card reads
the same whoever redraws it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_bridge import wording
from agent_bridge.models import ApprovalRequest, ApprovalState, Run
from bot.blocks import approval_text, decided_text, render_approval, render_decided
from bot.mrkdwn import quote, text_object

NOTE_MAX_CHARS = 2000
"""A context element holds 3,000 characters; the note is cut well inside that."""


def draw_card(
    request: ApprovalRequest, siblings: Sequence[ApprovalRequest], run: Run
) -> tuple[str, list[dict[str, Any]]]:
    """Return ``(fallback text, blocks)`` for the request as it stands.

    Args:
        request: The request.
        siblings: Every request of its interrupt, itself included (batched progress,
            "n of m decided", counts the decided ones).
        run: Its run (who asked, the task, its Slack thread).

    Drawn from ``request.redacted()``: no redacted argument value reaches a card.
    """
    request = request.redacted()
    if request.state == ApprovalState.PENDING:
        decided_count = sum(1 for r in siblings if r.state != ApprovalState.PENDING)
        blocks = render_approval(request, run=run, decided_count=decided_count)
        return approval_text(request), with_note(blocks, request.note, wording.REOPENED_LEAD)
    # Decided without a reviewer: expired, or closed because its run failed.
    return decided_text(request), with_note(
        render_decided(request, run=run), request.note, wording.DECIDED_NOTE_LEAD
    )


def with_note(blocks: list[dict[str, Any]], note: str | None, lead: str) -> list[dict[str, Any]]:
    """``blocks`` plus a context block: ``lead``, then ``note`` quoted (cut to
    ``NOTE_MAX_CHARS``: it can hold an error's text), if any."""
    if not note:
        return blocks
    text, _ = quote(note, NOTE_MAX_CHARS)
    return [*blocks, {"type": "context", "elements": [text_object(f"{lead}\n{text}")]}]

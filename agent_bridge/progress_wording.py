"""The sentences of a run's live progress message (its first message in Slack).

The product's own words; tool names are framed by the renderer
(``bot.progress_blocks``), never here.
"""

from __future__ import annotations

THINKING_STATUS = ":thought_balloon: *Thinking*"
RUNNING_STATUS = ":gear: *Running*"
WAITING_STATUS = ":raised_hand: *Waiting for approval*"
OPEN_CARD = "open the card"
"""The label of a waiting card's link beside a tool name that cannot be the label."""
WAITING_FALLBACK = "Waiting for approval"
WORKING_FALLBACK = "Working on"
UNREVIEWED_LEAD = "Ran without review:"
CARDS_MORE = "and {count} more"


def times_text(count: int) -> str:
    """`` (3 times)`` for a tool run three times (nothing for once)."""
    return f" ({count} times)" if count > 1 else ""

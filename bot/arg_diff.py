"""What an edit changed in a tool call, argument by argument (pure).

A reviewer who edits a call, and everyone reading the card or the run's Slack thread
after, needs to see what changed, not the whole new call: each changed argument is shown
as a diff in its own code block, ``-`` the proposed value and ``+`` the new one; a long or
multi-line text value as a line diff (``difflib.unified_diff``, one line of context) so a
one-word change in a long file or statement is found at a glance. Values are shown as
``bot.arg_blocks.arg_text`` shows them; every value is agent or reviewer text, escaped and
fenced by ``bot.mrkdwn``.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from agent_bridge import wording
from agent_bridge.binding import same_value
from bot.arg_blocks import arg_text
from bot.mrkdwn import code_block, inline_code

NAME_MAX_CHARS = 100
LINE_DIFF_MIN_CHARS = 120
"""A text value this long, or with a line break, is shown as a line diff."""
CONTEXT_LINES = 1
MIN_SHARE_CHARS = 80
"""Least room one argument's diff gets; arguments that do not fit are counted instead."""
ABSENT: Any = object()
"""The ``before`` of an added argument and the ``after`` of a removed one."""


@dataclass(frozen=True)
class ArgChange:
    """One argument an edit changed.

    Attributes:
        name: The argument's name.
        before: Its proposed value (``ABSENT``: the edit added it).
        after: Its new value (``ABSENT``: the edit removed it).
    """

    name: str
    before: Any
    after: Any

    @property
    def added(self) -> bool:
        """Whether the edit added this argument."""
        return self.before is ABSENT

    @property
    def removed(self) -> bool:
        """Whether the edit removed this argument."""
        return self.after is ABSENT


def arg_changes(before: dict[str, Any], after: dict[str, Any]) -> list[ArgChange]:
    """The arguments whose value differs between ``before`` and ``after``: in the new
    call's order, then the removed ones."""
    changed = [
        ArgChange(name, before.get(name, ABSENT), value)
        for name, value in after.items()
        if name not in before or not same_value(before[name], value)
    ]
    removed = [
        ArgChange(name, value, ABSENT) for name, value in before.items() if name not in after
    ]
    return changed + removed


def diff_lines(change: ArgChange) -> list[str]:
    """The diff of one change as lines: ``- old`` / ``+ new``, or a line diff of long text."""
    old = "" if change.added else arg_text(change.before)
    new = "" if change.removed else arg_text(change.after)
    if isinstance(change.before, str) and isinstance(change.after, str) and _long(old, new):
        diff = difflib.unified_diff(
            old.splitlines(), new.splitlines(), lineterm="", n=CONTEXT_LINES
        )
        return list(diff)[2:]  # without the "---" / "+++" file headers
    lines = [] if change.added else [f"- {line}" for line in old.splitlines() or [""]]
    return lines + ([] if change.removed else [f"+ {line}" for line in new.splitlines() or [""]])


def render_changes(changes: list[ArgChange], budget: int) -> tuple[str, bool]:
    """Show ``changes`` in at most about ``budget`` characters of mrkdwn.

    Returns:
        ``(text, cut)``: each changed argument's name (inline code, "added"/"removed" when
        so) over a code block of its diff, shared fairly, and how many more changed when
        not all fit; "No argument changed." when the edit kept the call; ``cut`` when
        something was shortened or left out.
    """
    if not changes:
        return wording.NOTHING_CHANGED, False
    share = max(budget // len(changes), MIN_SHARE_CHARS)
    parts: list[str] = []
    used, any_cut = 0, False
    for shown, change in enumerate(changes):
        name = inline_code(change.name, NAME_MAX_CHARS)
        title = wording.arg_added(name) if change.added else name
        title = wording.arg_removed(name) if change.removed else title
        body, cut = code_block("\n".join(diff_lines(change)), share)
        part = f"{title}\n{body}"
        if used + len(part) > budget:
            parts.append(wording.more_changes_text(len(changes) - shown))
            return "\n".join(parts), True
        any_cut = any_cut or cut
        parts.append(part)
        used += len(part) + 1
    return "\n".join(parts), any_cut


def _long(old: str, new: str) -> bool:
    return "\n" in old + new or max(len(old), len(new)) >= LINE_DIFF_MIN_CHARS

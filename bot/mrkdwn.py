"""Turn agent text into safe, length-limited Slack mrkdwn.

Everything the model produced (arguments, descriptions, answers, tool output) is data,
not markup: Slack reads ``<...>`` in mrkdwn as a control sequence (``<!channel>``,
``<!here>``, ``<@U123>``, ``<#C123>``, ``<!subteam^S1>``, ``<!date^...>``,
``<https://evil|innocent>``), so ``&``, ``<`` and ``>`` are replaced by the HTML
entities Slack documents (https://api.slack.com/reference/surfaces/formatting#escaping).
Nothing else is touched, so ``*bold*``, ``_italics_`` and line breaks stay readable and
none of them can mention anyone or hide a link behind a label.

Lengths are in characters (Python ``str`` length, code points), the unit Block Kit
limits are stated in and the one ``slack_sdk.models`` checks. Cuts are made *after*
escaping, never inside an entity such as ``&amp;`` and never between a character and the
combining marks or zero-width joiner that belong to it.

Code blocks: inside a ``` fence, a ``` in the value would close the fence early and turn
the rest of the value back into live mrkdwn. :func:`code_block` therefore puts a
zero-width space (U+200B) between every two adjacent backticks of the value. The value
looks the same on screen; a copy of it holds the invisible U+200B characters, which is the
price of never letting a value end its own fence. (A look-alike such as U+02CB would
change what the reviewer reads; breaking the run keeps every visible character.)
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime

ENTITIES: dict[str, str] = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
"""The only three characters Slack asks apps to escape in mrkdwn."""

ELLIPSIS = "…"
ZERO_WIDTH_SPACE = "\u200b"
FENCE = "```"
_CODE_OVERHEAD_CHARS = len(FENCE) * 2 + 2
"""Characters a code block adds around its body: the two fences and two line breaks."""
_ENTITY_MAX_CHARS = max(len(entity) for entity in ENTITIES.values())
_ADJACENT_BACKTICK = re.compile(r"`(?=`)")
_ZERO_WIDTH_JOINER = "\u200d"
_JOINERS = frozenset({_ZERO_WIDTH_JOINER, "\ufe0e", "\ufe0f"})
_BACKTICK_LOOKALIKE = "\u02cb"


_BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")


def escape(text: str) -> str:
    """Escape ``&``, ``<`` and ``>`` so ``text`` shows literally in mrkdwn, and make
    invisible bidirectional controls visible.

    Args:
        text: any agent text.

    Returns:
        ``text`` with ``&`` → ``&amp;``, ``<`` → ``&lt;``, ``>`` → ``&gt;`` (so it may be
        up to 5 times longer), and each bidi embedding, override or isolate control
        (U+202A-U+202E, U+2066-U+2069) shown as ``[U+202E]``: on an approval card such a
        character could make ``exe.live`` read as ``evil.exe`` (Trojan Source,
        CVE-2021-42574). Every other character is unchanged.
    """
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _BIDI_CONTROLS.sub(lambda m: f"[U+{ord(m.group()):04X}]", escaped)


def truncate(text: str, limit: int, *, marker: str = ELLIPSIS) -> tuple[str, bool]:
    """Escape ``text`` and cut it to at most ``limit`` characters.

    Args:
        text: raw agent text (not yet escaped).
        limit: the most characters the escaped result may have, ``marker`` included.
        marker: appended (as is, not escaped) when something was cut.

    Returns:
        ``(escaped, cut)``: the escaped text, or its longest prefix that fits together
        with ``marker`` without splitting an entity or a character from its combining
        marks; ``cut`` tells whether anything was left out.

    Raises:
        ValueError: if ``limit`` is smaller than ``len(marker)`` (nothing could fit).
    """
    escaped = escape(text)
    if len(escaped) <= limit:
        return escaped, False
    if limit < len(marker):
        raise ValueError(f"limit {limit} is shorter than the marker {marker!r}")
    return safe_prefix(escaped, limit - len(marker)) + marker, True


def code_block(text: str, limit: int, *, marker: str = ELLIPSIS) -> tuple[str, bool]:
    """Render ``text`` as an escaped ``` fenced block of at most ``limit`` characters.

    Args:
        text: raw agent text (not yet escaped); shown verbatim, line breaks kept.
        limit: the most characters of the whole block, fences and ``marker`` included.
        marker: put at the end of the body, inside the fence, when something was cut.

    Returns:
        ``(block, cut)``: ``"```\\n<body>\\n```"`` where the body is escaped and has a
        zero-width space between adjacent backticks (see the module docstring); ``cut``
        tells whether part of ``text`` was left out.

    Raises:
        ValueError: if ``limit`` cannot hold the two fences and ``marker``.
    """
    if limit < _CODE_OVERHEAD_CHARS + len(marker):
        raise ValueError(f"limit {limit} cannot hold a code block")
    body = break_fences(escape(text))
    room = limit - _CODE_OVERHEAD_CHARS
    cut = len(body) > room
    if cut:
        body = safe_prefix(body, room - len(marker)) + marker
    return f"{FENCE}\n{body}\n{FENCE}", cut


def split_code_blocks(text: str, limit: int) -> list[str]:
    """Render all of ``text`` as consecutive code blocks of at most ``limit`` characters.

    Used where a value must be shown in full (the full-arguments modal); see
    :func:`split_escaped` for where the pieces are cut.

    Args:
        text: raw agent text (not yet escaped).
        limit: the most characters of each block, fences included.

    Returns:
        One or more ``` fenced, escaped blocks that together hold all of ``text``.

    Raises:
        ValueError: if ``limit`` cannot hold the fences and one entity.
    """
    pieces = split_escaped(break_fences(escape(text)), limit - _CODE_OVERHEAD_CHARS)
    return [f"{FENCE}\n{piece}\n{FENCE}" for piece in pieces]


def split_escaped(escaped: str, limit: int) -> list[str]:
    """Cut already escaped text into pieces of at most ``limit`` characters.

    A piece ends at the last line break in its second half when there is one (that line
    break becomes the boundary between pieces), so long text reads naturally across
    blocks; pieces never split an entity.

    Args:
        escaped: text returned by :func:`escape`.
        limit: the most characters of each piece.

    Returns:
        One or more pieces (one empty piece for empty text).

    Raises:
        ValueError: if ``limit`` cannot hold one entity.
    """
    if limit < _ENTITY_MAX_CHARS + 1:
        raise ValueError(f"limit {limit} is too small to split text")
    pieces: list[str] = []
    while len(escaped) > limit:
        piece = safe_prefix(escaped, limit) or escaped[:limit]
        newline = piece.rfind("\n", limit // 2)
        if newline > 0:
            pieces.append(piece[:newline])
            escaped = escaped[newline + 1 :]
        else:
            pieces.append(piece)
            escaped = escaped[len(piece) :]
    pieces.append(escaped)
    return pieces


def inline_code(text: str, limit: int) -> str:
    """Render a short name (a tool or argument name) as escaped inline code.

    Backticks in ``text`` become the look-alike U+02CB so they cannot end the span.

    Args:
        text: raw name.
        limit: the most characters of the result, backticks included (at least 3).

    Returns:
        ``"`name`"``, cut with an ellipsis when too long.
    """
    cut, _ = truncate(text.replace("`", _BACKTICK_LOOKALIKE) or " ", limit - 2)
    return f"`{cut}`"


def break_fences(escaped: str) -> str:
    """Put a zero-width space between adjacent backticks so no ``` can form."""
    return _ADJACENT_BACKTICK.sub("`" + ZERO_WIDTH_SPACE, escaped)


def safe_prefix(escaped: str, size: int) -> str:
    """Return the longest prefix of ``escaped`` of at most ``size`` characters that ends
    neither inside an entity (``&amp;``, ``&lt;``, ``&gt;``) nor before a combining mark
    or after a zero-width joiner."""
    end = max(size, 0)
    if end >= len(escaped):
        return escaped
    while 0 < end and (_joins_previous(escaped[end]) or escaped[end - 1] == _ZERO_WIDTH_JOINER):
        end -= 1
    amp = escaped.rfind("&", max(0, end - _ENTITY_MAX_CHARS + 1), end)
    if amp != -1:
        entity = next((e for e in ENTITIES.values() if escaped.startswith(e, amp)), "&")
        if amp + len(entity) > end:
            end = amp
    return escaped[:end]


def _joins_previous(char: str) -> bool:
    """Tell whether ``char`` belongs to the character before it: a combining mark, a
    variation selector, an emoji skin-tone modifier or a zero-width joiner."""
    return (
        unicodedata.category(char) in ("Mn", "Mc", "Me")
        or char in _JOINERS
        or "\U0001f3fb" <= char <= "\U0001f3ff"
    )


def slack_date(unix_s: float) -> str:
    """Slack's localised date, e.g. ``<!date^1700000000^{date_short_pretty} {time}|…>``.

    The fallback (shown where Slack cannot localise) is the UTC time, ``2023-11-14 22:13
    UTC``. https://api.slack.com/reference/surfaces/formatting#date-formatting
    """
    fallback = datetime.fromtimestamp(unix_s, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{int(unix_s)}^{{date_short_pretty}} {{time}}|{fallback}>"

"""Frames that show agent text in Slack mrkdwn as data: escaped, visible, cut whole.

Everything the model produced (tool names, argument names and values, descriptions,
reasons, answers, tool output, errors) is data, not markup. It is shown in one of these
frames, and nothing in it can leave its frame:

- :func:`inline_code`, the **one-line frame** (names, labels): an inline code span. A
  line break shows as ``⏎`` and a backtick as ``[U+0060]``, so the span can neither end
  early nor break the line it sits on.
- :func:`one_line`, the one-line frame for short prose that must stay on the product's line (a
  requester's name, the task in a card's context): not code, so ``*bold*`` still
  renders, but a line break shows as ``⏎`` and a backtick as ``[U+0060]``.
- :func:`code_block`, the **block frame** (argument values, tool output, errors): a
  fenced block whose value cannot close it (a zero-width space, U+200B, is put between
  every two adjacent backticks of the value, so no ````` can form; every visible
  character is kept).
- :func:`quote`, the **prose frame** (descriptions, reasons, answers, the task): a block
  quote with *every* line prefixed by ``>``, so a line break in the text starts another
  quoted line, never a line of the product's own. Markup inside stays inside the quote.

In every frame:

- ``&``, ``<`` and ``>`` become the entities Slack documents, so no ``<!channel>``,
  ``<@U…>``, ``<!date^…>`` or ``<https://x|label>`` in agent text is live
  (https://docs.slack.dev/messaging/formatting-message-text#escaping).
- Invisible and format characters are shown as ``[U+XXXX]`` (:func:`visible`).
- Cuts fall between extended grapheme clusters (the ``regex`` module's ``\\X``, which
  follows Unicode's UAX #29: flags, ZWJ sequences, skin tones, keycaps, combining marks
  and Hangul syllables stay whole), never inside an entity or a ``[U+XXXX]`` marker.
- Bare URLs are not made links: every mrkdwn text object the product sends is built by
  :func:`text_object`, with ``verbatim: true``, which tells Slack not to auto-link URLs
  nor parse mentions in it while still rendering the product's own ``<@U…>``,
  ``<!subteam^…>`` and ``<!date^…>`` ("manual parsing strings",
  https://docs.slack.dev/reference/block-kit/composition-objects/text-object).

Lengths are in characters (Python ``str`` length, code points), the unit Block Kit
limits are stated in and the one ``slack_sdk.models`` checks; the limits count the text
after escaping and marking, frames included.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import regex

ENTITIES: dict[str, str] = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
"""The only three characters Slack asks apps to escape in mrkdwn."""
_CHARACTERS: dict[str, str] = {entity: char for char, entity in ENTITIES.items()}
_ENTITY = regex.compile("|".join(map(regex.escape, _CHARACTERS)))

ELLIPSIS = "…"
ZERO_WIDTH_SPACE = "\u200b"
HEAD_MARGIN_CHARS = 64
"""Raw characters escaped past a cut's limit (see ``_head``)."""
FENCE = "```"
LINE_BREAK_MARK = "⏎"
"""What a line break looks like in a one-line frame."""
QUOTE_PREFIX = "> "
"""What starts every line of the prose frame (Slack's block quote)."""
_CODE_OVERHEAD_CHARS = len(FENCE) * 2 + 2
"""Characters a code block adds around its body: the two fences and two line breaks."""
_MIN_PIECE_CHARS = 10
"""Least room a piece of split text needs: the longest marker, ``[U+10FFFF]``."""

_INVISIBLE = regex.compile(
    r"[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cs}\p{Cn}"
    r"\u034f\u115f\u1160\u3164\uffa0\ufe00-\ufe0f\U000e0100-\U000e01ef--[\n\t]]"
    r"|[\p{Zs}--[\x20]]",
    regex.V1,
)
"""Characters a reader cannot see or that change how text around them reads: controls
(but line break and tab), format characters (zero-width space, joiners, word joiner, soft
hyphen, directional marks and controls, BOM, tag characters), line and paragraph
separators, private-use, surrogate and unassigned code points, every space but U+0020,
the combining grapheme joiner, the Hangul fillers and the variation selectors."""
_EMOJI_BASE = regex.compile(r"\p{Extended_Pictographic}|\p{Regional_Indicator}|\u20e3")
_PICTOGRAPH = regex.compile(r"\p{Extended_Pictographic}")
_TAG_FLAG = regex.compile(r"\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]{1,6}\U000e007f")
"""A subdivision flag such as 🏴󠁧󠁢󠁳󠁣󠁴󠁿 (Scotland): black flag, tag letters or digits, cancel tag."""
_GRAPHEME = regex.compile(r"\X")
_UNIT = regex.compile(r"(?:&(?:amp|lt|gt);|\[U\+[0-9A-F]{4,6}\])\p{M}*|\X")
"""What a cut never splits: an entity or a marker (with any marks after it), or a grapheme."""
_ATOM = regex.compile(r"&(?:amp|lt|gt);|\[U\+[0-9A-F]{4,6}\]|.", regex.DOTALL)
"""The fallback inside a grapheme too long to keep whole: an entity, a marker, a character."""
_ADJACENT_BACKTICK = regex.compile(r"`(?=`)")


def visible(text: str) -> str:
    """Show each invisible or format character of ``text`` as ``[U+XXXX]``.

    Such a character could hide text (tag characters, zero-width characters), make two
    different names look the same, or reorder what is shown (a right-to-left override
    can make ``exe.live`` read as ``evil.exe``: Trojan Source, CVE-2021-42574). The one
    exception is a character that is part of an emoji grapheme, which renders
    unchanged: the zero-width joiner between two pictographs (👨‍👩‍👧), a variation
    selector 15 or 16 after a visible character (❤️, 1️⃣), and the tag characters of a
    subdivision flag (🏴󠁧󠁢󠁳󠁣󠁴󠁿).

    Args:
        text: any agent text.

    Returns:
        ``text`` with every such character (see ``_INVISIBLE``) replaced by its marker,
        e.g. ``"a\\u200bb"`` → ``"a[U+200B]b"``; line breaks and tabs are kept.
    """
    if _INVISIBLE.search(text) is None:
        return text
    return "".join(_visible_grapheme(g) for g in _GRAPHEME.findall(text))


def escape(text: str) -> str:
    """Escape ``&``, ``<`` and ``>`` and mark invisible characters (:func:`visible`).

    Args:
        text: any agent text.

    Returns:
        ``text`` with ``&`` → ``&amp;``, ``<`` → ``&lt;``, ``>`` → ``&gt;`` and each
        invisible character as ``[U+XXXX]`` (so it may be up to 10 times longer).
    """
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return visible(escaped)


def unescape(text: str) -> str:
    """What a person typed, from the ``text`` Slack delivers: Slack sends ``&``, ``<`` and
    ``>`` typed in a message as ``&amp;``, ``&lt;`` and ``&gt;`` ("Formatting text for app
    surfaces": https://docs.slack.dev/messaging/formatting-message-text#escaping), and
    slack_sdk has no helper to decode them.

    Args:
        text: A message's ``text`` as Slack sends it.

    Returns:
        ``text`` with those three entities decoded, in one pass (``&amp;lt;`` is what
        ``&lt;`` typed looks like, and stays ``&lt;``); nothing else is touched.
    """
    return str(_ENTITY.sub(lambda match: _CHARACTERS[match.group(0)], text))


def truncate(text: str, limit: int, *, marker: str = ELLIPSIS) -> tuple[str, bool]:
    """Escape ``text`` and cut it to at most ``limit`` characters, unframed.

    For text that is not shown as mrkdwn in a message (notification fallbacks); agent
    text on a card goes in a frame (:func:`inline_code`, :func:`code_block`,
    :func:`quote`).

    Args:
        text: raw agent text (not yet escaped).
        limit: the most characters the escaped result may have, ``marker`` included.
        marker: appended (as is, not escaped) when something was cut.

    Returns:
        ``(escaped, cut)``: the escaped text, or its longest prefix of whole graphemes
        that fits together with ``marker``; ``cut`` tells whether anything was left out.

    Raises:
        ValueError: if ``limit`` is smaller than ``len(marker)`` (nothing could fit).
    """
    return _cut(escape(_head(text, limit)), limit, marker)


def inline_code(text: str, limit: int) -> str:
    """The one-line frame: ``text`` as escaped inline code on the line it is put in.

    Use it for names and short labels (a tool or argument name, a run label). A line
    break in ``text`` shows as ``⏎`` and a backtick as ``[U+0060]`` (Slack has no escape
    for a backtick inside a code span), so nothing in ``text`` can end the span or
    start a line.

    Args:
        text: raw name.
        limit: the most characters of the result, backticks included (at least 3).

    Returns:
        ``"`name`"``, cut with an ellipsis (between graphemes) when too long; ``"` `"``
        for an empty name.
    """
    shown, _ = _cut(_flat(escape(_head(text, limit))) or " ", limit - 2, ELLIPSIS)
    return f"`{shown}`"


def one_line(text: str, limit: int, *, marker: str = ELLIPSIS) -> tuple[str, bool]:
    """The one-line frame without code: ``text`` escaped on the line it is put in.

    Use it for short prose that reads better as text than as code (a person's name,
    the task on a card's context line). A line break shows as ``⏎`` and a backtick as
    ``[U+0060]``, so nothing in ``text`` can start a line or open a code span that
    would swallow the product's text after it; ``*bold*`` or ``_italics_`` still render,
    on that line only.

    Args:
        text: raw text (not yet escaped).
        limit: the most characters of the result, ``marker`` included.
        marker: appended when something was cut.

    Returns:
        ``(shown, cut)``: the text, cut between graphemes, and whether anything was
        left out.

    Raises:
        ValueError: if ``limit`` is smaller than ``len(marker)``.
    """
    return _cut(_flat(escape(_head(text, limit))), limit, marker)


def code_block(text: str, limit: int, *, marker: str = ELLIPSIS) -> tuple[str, bool]:
    """The block frame: ``text`` as an escaped ``` fenced block of at most ``limit``
    characters.

    Args:
        text: raw agent text (not yet escaped); shown verbatim, line breaks kept.
        limit: the most characters of the whole block, fences and ``marker`` included.
        marker: put at the end of the body, inside the fence, when something was cut.

    Returns:
        ``(block, cut)``: ``"```\\n<body>\\n```"`` where the body is escaped, marked and
        has a zero-width space between adjacent backticks (see the module docstring);
        ``cut`` tells whether part of ``text`` was left out.

    Raises:
        ValueError: if ``limit`` cannot hold the two fences and ``marker``.
    """
    if limit < _CODE_OVERHEAD_CHARS + len(marker):
        raise ValueError(f"limit {limit} cannot hold a code block")
    body, cut = _cut(break_fences(escape(_head(text, limit))), limit - _CODE_OVERHEAD_CHARS, marker)
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
        ValueError: if ``limit`` cannot hold the fences and one marker.
    """
    pieces = split_escaped(break_fences(escape(text)), limit - _CODE_OVERHEAD_CHARS)
    return [f"{FENCE}\n{piece}\n{FENCE}" for piece in pieces]


def quote(text: str, limit: int, *, marker: str = ELLIPSIS) -> tuple[str, bool]:
    """The prose frame: ``text`` as a block quote of at most ``limit`` characters.

    Use it for free text written by the model or a person (a tool's description, the
    model's stated reason, the task, a reject reason or an answer). Every line of the
    result starts with ``"> "``, so a line break in ``text`` only starts another quoted
    line: no line of ``text`` can look like a line of the product's, which never quotes.
    ``*bold*`` or ``_italics_`` in ``text`` still render, inside the quote; ````` runs
    are broken as in :func:`code_block`; a URL in it is not a link when the quote is
    sent in a :func:`text_object`.

    Args:
        text: raw text (not yet escaped).
        limit: the most characters of the result, prefixes and ``marker`` included (at
            least ``len(QUOTE_PREFIX) + len(marker) + 1``).
        marker: put at the end when something was cut.

    Returns:
        ``(quoted, cut)``: the quote (``""`` for empty ``text``), and whether anything
        was left out.

    Raises:
        ValueError: if ``limit`` is too small to hold a prefix and ``marker``.
    """
    pieces, cut = quote_pieces(text, limit, piece_chars=limit, marker=marker)
    return (pieces[0] if pieces else ""), cut


def quote_pieces(
    text: str, budget: int, *, piece_chars: int, marker: str = ELLIPSIS
) -> tuple[list[str], bool]:
    """The prose frame across several sections: ``text`` quoted (as :func:`quote`) in
    pieces of at most ``piece_chars`` characters, at most ``budget`` in all.

    Pieces end at line breaks; a line longer than a piece is split between graphemes,
    and each part is a quoted line of its own.

    Args:
        text: raw text (not yet escaped).
        budget: the most characters of all pieces together, ``marker`` included.
        piece_chars: the most characters of one piece (a section's text: 3,000).
        marker: put at the end of the last piece when something was cut.

    Returns:
        ``(pieces, cut)``: no piece for empty ``text``.

    Raises:
        ValueError: if ``budget`` or ``piece_chars`` cannot hold a prefix, a marker and
            a character.
    """
    room = len(QUOTE_PREFIX) + _MIN_PIECE_CHARS
    if min(budget, piece_chars) < room + len(marker):
        raise ValueError(f"{min(budget, piece_chars)} characters cannot hold a quote")
    if not text:
        return [], False
    lines = [
        QUOTE_PREFIX + part
        for line in break_fences(escape(_head(text, budget))).split("\n")
        for part in split_escaped(line, piece_chars - len(QUOTE_PREFIX) - len(marker))
    ]
    cut = sum(len(line) + 1 for line in lines) - 1 > budget
    if cut:
        lines = _quoted_prefix(lines, budget - len(marker), marker)
    pieces: list[str] = []
    for line in lines:
        if pieces and len(pieces[-1]) + 1 + len(line) <= piece_chars:
            pieces[-1] += "\n" + line
        else:
            pieces.append(line)
    return pieces, cut


def text_object(text: str) -> dict[str, Any]:
    """A Block Kit ``mrkdwn`` text object with ``verbatim: true``.

    Every mrkdwn text object the product sends is built here. With ``verbatim`` Slack
    does not auto-link bare URLs (``https://…``, ``www.…``, ``mailto:…``) nor turn
    channel names and mentions written as plain text into live ones; the product's own
    ``<@U…>``, ``<!subteam^…>``, ``<#C…>`` and ``<!date^…>`` still render
    (https://docs.slack.dev/reference/block-kit/composition-objects/text-object).

    Args:
        text: mrkdwn, agent text in it already framed.

    Returns:
        ``{"type": "mrkdwn", "text": text, "verbatim": True}``.
    """
    return {"type": "mrkdwn", "text": text, "verbatim": True}


def split_escaped(escaped: str, limit: int) -> list[str]:
    """Cut already escaped text into pieces of at most ``limit`` characters.

    A piece ends at the last line break in its second half when there is one (that line
    break becomes the boundary between pieces), so long text reads naturally across
    blocks; otherwise between two graphemes (:func:`safe_prefix`). Only a single
    grapheme longer than ``limit`` (a letter under thousands of combining marks) is cut
    inside, between two of its characters, never inside an entity or a marker.

    Args:
        escaped: text returned by :func:`escape`.
        limit: the most characters of each piece.

    Returns:
        One or more pieces (one empty piece for empty text).

    Raises:
        ValueError: if ``limit`` cannot hold one marker.
    """
    if limit < _MIN_PIECE_CHARS:
        raise ValueError(f"limit {limit} is too small to split text")
    pieces: list[str] = []
    while len(escaped) > limit:
        piece = safe_prefix(escaped, limit) or _hard_prefix(escaped, limit)
        newline = piece.rfind("\n", limit // 2)
        if newline > 0:
            pieces.append(piece[:newline])
            escaped = escaped[newline + 1 :]
        else:
            pieces.append(piece)
            escaped = escaped[len(piece) :]
    pieces.append(escaped)
    return pieces


def break_fences(escaped: str) -> str:
    """Put a zero-width space between adjacent backticks so no ``` can form."""
    return str(_ADJACENT_BACKTICK.sub("`" + ZERO_WIDTH_SPACE, escaped))


def safe_prefix(escaped: str, size: int) -> str:
    """The longest prefix of ``escaped`` of at most ``size`` characters that ends between
    two graphemes, never inside an entity (``&amp;``) or a marker (``[U+200B]``); ``""``
    when the first grapheme alone is longer."""
    if size >= len(escaped):
        return escaped
    # A zero-width space left at the end is the one break_fences put between two
    # backticks, the second of which did not fit: it would only be an invisible extra.
    return escaped[: _last_end(_UNIT, escaped, size)].removesuffix(ZERO_WIDTH_SPACE)


def slack_date(unix_s: float) -> str:
    """Slack's localised date, e.g. ``<!date^1700000000^{date_short_pretty} {time}|…>``.

    The fallback (shown where Slack cannot localise) is the UTC time, ``2023-11-14 22:13
    UTC``. https://api.slack.com/reference/surfaces/formatting#date-formatting
    """
    fallback = datetime.fromtimestamp(unix_s, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{int(unix_s)}^{{date_short_pretty}} {{time}}|{fallback}>"


def _hard_prefix(escaped: str, size: int) -> str:
    """The longest prefix of at most ``size`` characters that ends between two
    characters, never inside an entity or a marker (for a grapheme too long to keep)."""
    return escaped[: _last_end(_ATOM, escaped, size)]


def _last_end(units: regex.Pattern[str], escaped: str, size: int) -> int:
    """Where the last of ``units``' consecutive matches that ends by ``size`` ends."""
    end = 0
    for unit in units.finditer(escaped):
        if unit.end() > size:
            break
        end = unit.end()
    return end


def _flat(escaped: str) -> str:
    """``escaped`` on one line: line breaks as ``⏎``, backticks as ``[U+0060]``."""
    return escaped.replace("\n", LINE_BREAK_MARK).replace("`", "[U+0060]")


def _head(text: str, limit: int) -> str:
    """The part of raw ``text`` that can show in ``limit`` characters, and a little more.

    Escaping never shortens text (entities, markers and broken fences only add), so
    nothing past ``limit`` raw characters can be shown, and a text longer than that is cut
    anyway; escaping only the head keeps a 1 MB argument from being escaped whole to show
    its first lines. ``HEAD_MARGIN_CHARS`` more keep the grapheme boundaries before
    ``limit`` what they are in the whole text.
    """
    return text if len(text) <= limit + HEAD_MARGIN_CHARS else text[: limit + HEAD_MARGIN_CHARS]


def _cut(escaped: str, limit: int, marker: str) -> tuple[str, bool]:
    """``escaped`` if it fits ``limit``, else its grapheme-safe prefix plus ``marker``."""
    if len(escaped) <= limit:
        return escaped, False
    if limit < len(marker):
        raise ValueError(f"limit {limit} is shorter than the marker {marker!r}")
    return safe_prefix(escaped, limit - len(marker)) + marker, True


def _quoted_prefix(lines: list[str], room: int, marker: str) -> list[str]:
    """The quoted lines that fit in ``room`` characters (line breaks counted), the last
    one cut between graphemes, and ``marker`` after them."""
    kept: list[str] = []
    used = 0
    for line in lines:
        left = room - used - (1 if kept else 0)
        if len(line) <= left:
            kept.append(line)
            used += len(line) + (1 if len(kept) > 1 else 0)
            continue
        body = safe_prefix(line[len(QUOTE_PREFIX) :], left - len(QUOTE_PREFIX))
        if body:
            kept.append(QUOTE_PREFIX + body)
        break
    if not kept:
        return [QUOTE_PREFIX + marker]
    kept[-1] += marker
    return kept


def _visible_grapheme(grapheme: str) -> str:
    """Mark the invisible characters of one grapheme, keeping those an emoji needs."""
    if _INVISIBLE.search(grapheme) is None:
        return grapheme
    if _EMOJI_BASE.search(grapheme) is not None and _TAG_FLAG.fullmatch(grapheme):
        return grapheme
    emoji = _EMOJI_BASE.search(grapheme) is not None
    out = []
    for i, char in enumerate(grapheme):
        if _INVISIBLE.match(char) is None or (emoji and _joins_emoji(grapheme, i)):
            out.append(char)
        else:
            out.append(f"[U+{ord(char):04X}]")
    return "".join(out)


def _joins_emoji(grapheme: str, i: int) -> bool:
    """Whether ``grapheme[i]`` is part of the emoji: a ZWJ between two pictographs, or
    a variation selector 15/16 right after a visible character."""
    char = grapheme[i]
    if char == "\u200d":
        return (
            0 < i < len(grapheme) - 1
            and _PICTOGRAPH.match(grapheme[i + 1]) is not None
            and (grapheme[i - 1] in "\ufe0e\ufe0f" or _INVISIBLE.match(grapheme[i - 1]) is None)
        )
    if char in "\ufe0e\ufe0f":
        return i > 0 and _INVISIBLE.match(grapheme[i - 1]) is None
    return False

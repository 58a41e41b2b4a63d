"""Section blocks showing a tool call's arguments, shortened or in full.

Shared by the approval card (``bot.blocks``: shortened to fit a message) and the
full-arguments modal (``bot.modals``: every character, split across sections). Each
argument is its name in the one-line frame (``mrkdwn.inline_code``) over its value in
the block frame (``mrkdwn.code_block``): a string as its text (see :func:`arg_text`),
anything else as pretty JSON (never a Python repr). Names and values are agent text:
escaped, marked and framed by ``bot.mrkdwn``, so neither can leave its frame.

Limits: a section's text holds 3,000 characters
(https://api.slack.com/reference/block-kit/blocks#section); a message holds 50 blocks and
about 12,000 characters of text in all (``msg_blocks_too_long``, measured in
slackapi/bolt-js#2509, not documented), a modal 100 blocks.
"""

from __future__ import annotations

import json
from typing import Any

from agent_bridge import wording
from bot.mrkdwn import code_block, inline_code, split_code_blocks, text_object

SECTION_TEXT_MAX_CHARS = 3000
NAME_MAX_CHARS = 200
"""Longest argument name shown (as inline code, backticks included)."""
MAX_ARG_SECTIONS = 20
"""More arguments than this are shown as one JSON object in one section."""
_MIN_VALUE_CHARS = 60
"""Least room a value's code block gets, however many arguments share the budget."""


def arg_text(value: Any) -> str:
    """The text shown for one argument value.

    A string is shown as its text (``DROP TABLE x``, not ``"DROP TABLE x"``), line
    breaks kept, unless its text would read as another kind of value: an empty or blank
    string, or one that reads as a JSON number, ``true``, ``false`` or ``null`` (the
    string ``"false"`` is not the boolean ``false``, and a tool may treat them
    differently) is shown as a JSON string literal. Anything else is pretty JSON.

    Args:
        value: one argument's value, as the tool receives it.

    Returns:
        The text to put in a code block (escaping is the frame's job).
    """
    if isinstance(value, str) and not _reads_as_other_value(value):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _reads_as_other_value(text: str) -> bool:
    """Whether ``text`` shown bare would be taken for something else (blank, or a JSON
    scalar that is not a string)."""
    if not text.strip():
        return True
    try:
        parsed = json.loads(text)
    except ValueError:
        return False
    return parsed is None or isinstance(parsed, (bool, int, float))


def arg_sections(args: dict[str, Any], budget: int) -> tuple[list[dict[str, Any]], bool]:
    """Show ``args`` in at most ``MAX_ARG_SECTIONS`` sections of about ``budget`` characters.

    Short values are shown whole; long ones share what is left of the budget equally,
    each cut to its share (never below ``_MIN_VALUE_CHARS``, never above one section).

    Args:
        args: the tool call's arguments.
        budget: characters all the sections' text may take together: the names first
            (each cut to ``NAME_MAX_CHARS``: a model names its arguments), the values
            sharing the rest (only the minimum share of each value may come on top).

    Returns:
        ``(sections, cut)``: the section blocks (one per argument, or one JSON object
        when there are more than ``MAX_ARG_SECTIONS``, or "No arguments."), and whether
        any value was shortened.
    """
    if not args:
        return [_section(wording.NO_ARGUMENTS)], False
    if len(args) > MAX_ARG_SECTIONS:
        title = f"{wording.ARGUMENTS_TITLE}\n"
        body, cut = code_block(arg_text(args), min(budget, SECTION_TEXT_MAX_CHARS - len(title)))
        return [_section(title + body)], cut
    names = {name: inline_code(name, NAME_MAX_CHARS) for name in args}
    caps = [SECTION_TEXT_MAX_CHARS - len(names[name]) - 1 for name in args]
    # what each value needs, up to a section (no share is larger): a long value is not
    # escaped whole just to be measured
    needed = [len(code_block(arg_text(v), 2 * SECTION_TEXT_MAX_CHARS)[0]) for v in args.values()]
    for_values = budget - sum(len(shown) + 1 for shown in names.values())
    shares = _fair_shares(needed, for_values, caps)
    sections, any_cut = [], False
    for (name, value), share in zip(args.items(), shares, strict=True):
        body, cut = code_block(arg_text(value), max(share, _MIN_VALUE_CHARS))
        any_cut = any_cut or cut
        sections.append(_section(f"{names[name]}\n{body}"))
    return sections, any_cut


def full_sections(args: dict[str, Any]) -> list[dict[str, Any]]:
    """Show every character of ``args``: each value split across as many sections as needed.

    Returns:
        Section blocks in argument order; the first of each argument starts with its name.
        The caller limits how many it shows.
    """
    if not args:
        return [_section(wording.NO_ARGUMENTS)]
    sections = []
    for name, value in args.items():
        title = inline_code(name, NAME_MAX_CHARS)
        pieces = split_code_blocks(arg_text(value), SECTION_TEXT_MAX_CHARS - len(title) - 1)
        sections.append(_section(f"{title}\n{pieces[0]}"))
        sections.extend(_section(piece) for piece in pieces[1:])
    return sections


def _fair_shares(needed: list[int], budget: int, caps: list[int]) -> list[int]:
    """Split ``budget`` so small needs are met in full and large ones share the rest."""
    shares = [0] * len(needed)
    left = budget
    order = sorted(range(len(needed)), key=lambda i: needed[i])
    for rank, i in enumerate(order):
        share = min(needed[i], caps[i], max(left // (len(order) - rank), _MIN_VALUE_CHARS))
        shares[i] = share
        left -= share
    return shares


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": text_object(text)}

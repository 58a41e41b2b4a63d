"""Block Kit checks of whole messages and views, and finders of live mentions and links.

A message or view the bot sends is checked here before the sandbox stores it; the
problems found become Slack's ``invalid_blocks`` / ``invalid_arguments`` answer and the
sandbox's ``violations``. Per-block rules live in :mod:`slack_sandbox.block_rules`.
"""

from __future__ import annotations

import re
from typing import Any

from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.views import View

from slack_sandbox.block_rules import Problem, check_block

MESSAGE_MAX_BLOCKS = 50
VIEW_MAX_BLOCKS = 100
MESSAGE_TEXT_MAX_CHARS = 40_000
VIEW_TOP_KEYS = frozenset(
    {
        "type", "title", "blocks", "close", "submit", "private_metadata", "callback_id",
        "clear_on_close", "notify_on_close", "external_id", "submit_disabled",
    }
)  # fmt: skip
"""Keys an app may set on a view object (``views.open``/``update``/``push``)."""
INPUT_ELEMENT_TYPES = frozenset(
    {"plain_text_input", "number_input", "static_select", "radio_buttons", "checkboxes"}
)
"""Input elements whose values the sandbox can fill in a view submission."""

_LIVE_TOKEN = re.compile(
    r"<(?:!channel|!here|!everyone|!subteam\^[^>]*|@[UW][^>]*|#C[^>]*)(?:\|[^>]*)?>"
    r"|<[a-z][a-z0-9+.-]*:[^>|]*\|[^>]*>",
    re.IGNORECASE,
)


def live_mentions(text: str) -> list[str]:
    """Return every token Slack would render live in mrkdwn ``text``, in order.

    Broadcasts (``<!channel>``, ``<!here>``, ``<!everyone>``), user, channel and user
    group mentions (``<@U…>``, ``<#C…>``, ``<!subteam^…>``) and labelled links
    (``<https://x|label>``). Text escaped as Slack asks (``&lt;`` ``&gt;`` ``&amp;``)
    has none.
    """
    return _LIVE_TOKEN.findall(text)


_EXPLICIT_LINK = re.compile(r"<(?:[a-z][a-z0-9+.-]*:|www\.)[^<>]*>", re.IGNORECASE)
_BARE_URL = re.compile(r"(?<![\w@.:/-])(?:https?://|www\.|mailto:)[^\s<>`|]+", re.IGNORECASE)


def live_links(text: str, *, verbatim: bool = False) -> list[str]:
    """Return every link Slack would make live in mrkdwn ``text``, in order.

    Explicit links (``<https://x>``, ``<https://x|label>``, ``<mailto:a@b>``) always;
    and, unless the text object has ``verbatim: true``, the bare URLs Slack auto-links
    (``https://…``, ``http://…``, ``www.…``, ``mailto:…``), wherever they stand, code
    spans and blocks included: "When set to false (as is default) URLs will be
    auto-converted into links"
    (https://docs.slack.dev/reference/block-kit/composition-objects/text-object).
    Escaped text (``&lt;https://x&gt;``) has no explicit link.

    Args:
        text: mrkdwn as sent.
        verbatim: the text object's ``verbatim``.
    """
    explicit = _EXPLICIT_LINK.findall(text)
    if verbatim:
        return explicit
    bare = _BARE_URL.findall(_EXPLICIT_LINK.sub(" ", text))
    return sorted(explicit + bare, key=text.find)


def message_live_links(text: Any, blocks: Any) -> list[str]:
    """Return every live link of a message or view: in each text object of ``blocks``
    (a ``plain_text`` object as if not verbatim), and in ``text`` when there are no
    blocks (with blocks, ``text`` is only the notification's)."""
    found: list[str] = []
    for obj in _text_objects(blocks):
        found += live_links(obj["text"], verbatim=obj.get("verbatim") is True)
    if isinstance(text, str) and not blocks:
        found += live_links(text)
    return found


def _text_objects(node: Any) -> list[dict[str, Any]]:
    """Every text object (``mrkdwn`` or ``plain_text``) under ``node``, in order."""
    if isinstance(node, list):
        return [obj for item in node for obj in _text_objects(item)]
    if not isinstance(node, dict):
        return []
    if node.get("type") in ("mrkdwn", "plain_text") and isinstance(node.get("text"), str):
        return [node]
    return [obj for value in node.values() for obj in _text_objects(value)]


def check_blocks(blocks: Any, *, max_blocks: int) -> list[Problem]:
    """Return every problem of a ``blocks`` array holding at most ``max_blocks`` blocks."""
    if not isinstance(blocks, list):
        return [Problem("/blocks", "blocks must be an array")]
    problems: list[Problem] = []
    if len(blocks) > max_blocks:
        problems.append(
            Problem("/blocks", f"{len(blocks)} blocks; no more than {max_blocks} are allowed")
        )
    seen: set[str] = set()
    for i, block in enumerate(blocks):
        problems += check_block(block, f"/blocks/{i}")
        block_id = block.get("block_id") if isinstance(block, dict) else None
        if isinstance(block_id, str):
            if block_id in seen:
                problems.append(
                    Problem(f"/blocks/{i}/block_id", f"duplicate block_id {block_id!r}")
                )
            seen.add(block_id)
    return problems


def check_message(text: Any, blocks: Any) -> list[Problem]:
    """Return every problem of a message's ``text`` and ``blocks`` (either may be None)."""
    problems: list[Problem] = []
    if text is not None and not isinstance(text, str):
        problems.append(Problem("/text", "text must be a string"))
    elif isinstance(text, str) and len(text) > MESSAGE_TEXT_MAX_CHARS:
        limit = MESSAGE_TEXT_MAX_CHARS
        problems.append(Problem("/text", f"text is {len(text)} characters; the limit is {limit}"))
    if blocks is not None:
        problems += check_blocks(blocks, max_blocks=MESSAGE_MAX_BLOCKS)
    return problems


def check_view(view: Any) -> list[Problem]:
    """Return every problem of a modal ``view`` object an app sends."""
    if not isinstance(view, dict):
        return [Problem("/view", "view must be an object")]
    problems = [
        Problem(f"/view/{k}", f"unknown field {k!r}") for k in view if k not in VIEW_TOP_KEYS
    ]
    if view.get("type") != "modal":
        problems.append(Problem("/view/type", "type must be 'modal'"))
    for key in ("title", "close", "submit"):
        obj = view.get(key)
        if obj is not None and (not isinstance(obj, dict) or obj.get("type") != "plain_text"):
            problems.append(Problem(f"/view/{key}", f"{key} must be a plain_text text object"))
    if view.get("title") is None:
        problems.append(Problem("/view/title", "title is required"))
    problems += _sdk_view_problems(view)
    blocks = view.get("blocks")
    if not isinstance(blocks, list) or not blocks:
        problems.append(Problem("/view/blocks", "a view needs between 1 and 100 blocks"))
    else:
        problems += [
            Problem(f"/view{p.pointer}", p.message)
            for p in check_blocks(blocks, max_blocks=VIEW_MAX_BLOCKS)
        ]
        has_input = any(isinstance(b, dict) and b.get("type") == "input" for b in blocks)
        if has_input and view.get("submit") is None:
            problems.append(Problem("/view/submit", "a view with input blocks needs a submit"))
    return problems


def _sdk_view_problems(view: dict[str, Any]) -> list[Problem]:
    """Run each of slack_sdk's ``View`` validators (blocks are checked one by one)."""
    try:
        sdk_view = View(**{k: v for k, v in view.items() if k in VIEW_TOP_KEYS - {"blocks"}})
    except (TypeError, KeyError, AttributeError, ValueError) as e:
        return [Problem("/view", f"malformed view: {e}")]
    sdk_view.blocks = None  # type: ignore[assignment]
    problems: list[Problem] = []
    for name in sorted(dir(View)):
        validator = getattr(sdk_view, name, None)
        if callable(validator) and getattr(validator, "validator", False):
            try:
                validator()
            except SlackObjectFormationError as e:
                problems.append(Problem("/view", str(e)))
            except (TypeError, AttributeError) as e:
                problems.append(Problem("/view", f"malformed view: {e}"))
    return problems


def input_blocks(view: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Return the view's input blocks with a fillable element, by ``block_id``."""
    return {
        b["block_id"]: b
        for b in view.get("blocks") or []
        if isinstance(b, dict)
        and b.get("type") == "input"
        and isinstance(b.get("block_id"), str)
        and isinstance(b.get("element"), dict)
        and b["element"].get("type") in INPUT_ELEMENT_TYPES
    }

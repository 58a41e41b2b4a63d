"""Checks of one Block Kit block, as Slack's API makes them.

``slack_sdk.models`` is the primary validator: every block is parsed with
``Block.parse`` and rendered back with ``to_dict()`` (which runs ``validate_json()``
on the block and every nested element). A key that does not survive that round trip is
one slack_sdk does not know, and Slack refuses unknown keys, so it is reported too.
The limits Slack documents but slack_sdk does not check are added here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block

SECTION_FIELD_MAX_CHARS = 2_000
OPTION_TEXT_MAX_CHARS = 75
OPTION_VALUE_MAX_CHARS = 150
TEXT_INPUT_MAX_CHARS = 3_000

PLAIN_TEXT_ONLY = frozenset({"label", "hint", "placeholder", "title", "confirm", "deny", "submit"})
"""Keys whose text object Slack accepts only as ``plain_text`` (besides button/header text)."""


@dataclass(frozen=True)
class Problem:
    """One thing Slack would refuse, located by a JSON pointer like ``/blocks/0/text``."""

    pointer: str
    message: str

    def slack_message(self) -> str:
        """Return the problem in the form of Slack's ``response_metadata.messages``."""
        return f"[ERROR] {self.message} [json-pointer:{self.pointer}]"

    def __str__(self) -> str:
        return f"{self.pointer}: {self.message}"


def check_block(block: Any, pointer: str) -> list[Problem]:
    """Return every problem of one block at ``pointer`` (e.g. ``/blocks/3``)."""
    if not isinstance(block, dict):
        return [Problem(pointer, "a block must be an object")]
    problems = _sdk_problems(block, pointer)
    problems += _text_problems(block, pointer)
    problems += _element_problems(block, pointer)
    return problems


def block_action_ids(block: dict[str, Any]) -> list[str]:
    """Return the ``action_id`` of every interactive element directly in ``block``."""
    return [e["action_id"] for e in _elements(block) if isinstance(e.get("action_id"), str)]


def _sdk_problems(block: dict[str, Any], pointer: str) -> list[Problem]:
    try:
        parsed = Block.parse(block)
        if parsed is None:
            return [Problem(pointer, f"unsupported block type {block.get('type')!r}")]
        rendered = parsed.to_dict()
    except SlackObjectFormationError as e:
        return [Problem(pointer, str(e))]
    except (TypeError, KeyError, ValueError, AttributeError) as e:
        return [Problem(pointer, f"malformed {block.get('type')!r} block: {e}")]
    return list(_lost_keys(block, rendered, pointer))


def _lost_keys(sent: Any, rendered: Any, pointer: str) -> Iterator[Problem]:
    """Yield a problem for every part of ``sent`` that slack_sdk did not keep."""
    if isinstance(sent, dict):
        if not isinstance(rendered, dict):
            yield Problem(pointer, "unsupported or malformed object")
            return
        for key, value in sent.items():
            if value is None:
                continue
            if key not in rendered:
                why = "must not be empty" if value in ([], {}, "") else "unknown field"
                yield Problem(f"{pointer}/{key}", f"{why} {key!r}")
            else:
                yield from _lost_keys(value, rendered[key], f"{pointer}/{key}")
    elif isinstance(sent, list):
        if not isinstance(rendered, list) or len(rendered) != len(sent):
            yield Problem(pointer, "malformed list")
            return
        for i, (s, r) in enumerate(zip(sent, rendered, strict=True)):
            yield from _lost_keys(s, r, f"{pointer}/{i}")
    elif isinstance(sent, str) and isinstance(rendered, dict):
        yield Problem(pointer, "must be a text object, not a string")


def _text_problems(node: Any, pointer: str, key: str = "") -> list[Problem]:
    """Check every text object under ``node``: non-empty, plain_text where required."""
    problems: list[Problem] = []
    if isinstance(node, dict):
        if node.get("type") in ("plain_text", "mrkdwn") and "text" in node:
            if not isinstance(node["text"], str) or not node["text"]:
                problems.append(Problem(pointer, "text must be more than 0 characters"))
            if node["type"] != "plain_text" and key in PLAIN_TEXT_ONLY:
                problems.append(Problem(pointer, f"{key!r} must be a plain_text text object"))
            return problems
        for k, v in node.items():
            problems += _text_problems(v, f"{pointer}/{k}", k)
        if node.get("type") in ("header", "button"):
            text = node.get("text")
            if isinstance(text, dict) and text.get("type") != "plain_text":
                problems.append(Problem(f"{pointer}/text", "must be a plain_text text object"))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            problems += _text_problems(v, f"{pointer}/{i}", key)
    return problems


def _elements(block: dict[str, Any]) -> list[dict[str, Any]]:
    """Return the elements directly held by ``block`` (accessory, element or elements)."""
    found: list[Any] = [block.get("accessory"), block.get("element")]
    elements = block.get("elements")
    if isinstance(elements, list):
        found += elements
    return [e for e in found if isinstance(e, dict)]


def _element_problems(block: dict[str, Any], pointer: str) -> list[Problem]:
    problems: list[Problem] = []
    for i, field in enumerate(block.get("fields") or []):
        text = field.get("text") if isinstance(field, dict) else None
        if isinstance(text, str) and len(text) > SECTION_FIELD_MAX_CHARS:
            problems.append(
                Problem(
                    f"{pointer}/fields/{i}",
                    f"field text cannot exceed {SECTION_FIELD_MAX_CHARS} characters",
                )
            )
    seen: set[str] = set()
    for action_id in block_action_ids(block):
        if action_id in seen:
            problems.append(Problem(pointer, f"duplicate action_id {action_id!r} in one block"))
        seen.add(action_id)
    for element in _elements(block):
        where = f"{pointer}/element" if element is block.get("element") else pointer
        problems += _text_input_problems(element, where)
        problems += _option_problems(element, where)
    return problems


def _text_input_problems(element: dict[str, Any], pointer: str) -> list[Problem]:
    if element.get("type") != "plain_text_input":
        return []
    problems: list[Problem] = []
    max_length = element.get("max_length")
    for key in ("min_length", "max_length"):
        value = element.get(key)
        if isinstance(value, int) and not 0 <= value <= TEXT_INPUT_MAX_CHARS:
            problems.append(
                Problem(f"{pointer}/{key}", f"{key} must be between 0 and {TEXT_INPUT_MAX_CHARS}")
            )
    initial = element.get("initial_value")
    if isinstance(initial, str):
        limit = min(TEXT_INPUT_MAX_CHARS, max_length if isinstance(max_length, int) else 10**9)
        if len(initial) > limit:
            problems.append(
                Problem(
                    f"{pointer}/initial_value",
                    f"initial_value is {len(initial)} characters; the limit is {limit}",
                )
            )
    return problems


def _option_problems(element: dict[str, Any], pointer: str) -> list[Problem]:
    options = element.get("options")
    if not isinstance(options, list):
        return []
    problems: list[Problem] = []
    values: set[str] = set()
    for i, option in enumerate(options):
        if not isinstance(option, dict):
            continue
        text = option.get("text")
        if isinstance(text, dict) and len(str(text.get("text", ""))) > OPTION_TEXT_MAX_CHARS:
            problems.append(
                Problem(
                    f"{pointer}/options/{i}/text",
                    f"option text cannot exceed {OPTION_TEXT_MAX_CHARS} characters",
                )
            )
        value = option.get("value")
        if isinstance(value, str):
            values.add(value)
            if len(value) > OPTION_VALUE_MAX_CHARS:
                problems.append(
                    Problem(
                        f"{pointer}/options/{i}/value",
                        f"option value cannot exceed {OPTION_VALUE_MAX_CHARS} characters",
                    )
                )
        if element.get("type") == "static_select" and isinstance(text, dict):
            if text.get("type") != "plain_text":
                problems.append(
                    Problem(f"{pointer}/options/{i}/text", "must be a plain_text text object")
                )
    initial = [element.get("initial_option"), *(element.get("initial_options") or [])]
    for option in initial:
        if isinstance(option, dict) and option.get("value") not in values:
            problems.append(
                Problem(
                    pointer, f"initial option {option.get('value')!r} is not one of the options"
                )
            )
    return problems

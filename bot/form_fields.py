"""Which Slack widget each tool argument gets in the edit form, and with what value.

``build_form`` reads the tool's JSON schema (pydantic's ``model_json_schema()``:
``$defs``/``$ref``, ``anyOf`` with ``null`` for ``Optional``, ``enum``, ``const``,
``default``, ``description``) and the proposed arguments, and returns one
:class:`FormField` per argument. ``bot.edit_form`` renders those fields and parses them
back, so the rendering and the parsing always agree on the widgets.

Rules (the limits are Slack's, https://api.slack.com/reference/block-kit/block-elements):

- string → ``string``; integer → ``integer``; number → ``number``; boolean, ``enum``,
  ``const`` → ``choice`` (a select of at most 100 options whose values, the JSON of each
  choice, are ≤ 150 characters; ``null`` is added when the schema allows it).
- objects, lists, unions, no type, and any proposed value that does not fit its widget
  (a number where a string is wanted, a value missing from the enum...) → ``json``.
- a value whose text is longer than an input holds (3,000 characters) → ``kept``: shown
  read-only and kept as proposed, never silently cut.
- a redacted value (``agent_bridge.redaction``: the form is built from the redacted
  arguments, so it holds the marker) → its widget as for an absent value, shown empty
  with a hint that empty keeps it; a JSON value holding markers gets a hint to leave
  them as they are. The submission listener puts the real values back (``restore``).
- no ``properties`` → the whole arguments in one JSON input (``Form.mode == "json"``);
  if that is too long, one JSON field per argument; if even that cannot be laid out,
  ``"kept"`` (the arguments cannot be edited in Slack and stay as proposed).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any, Literal

from agent_bridge import wording
from agent_bridge.redaction import is_marker
from bot import ids
from bot.mrkdwn import visible

INPUT_MAX_CHARS = 3000
"""Longest ``initial_value`` of a ``plain_text_input``."""
OPTIONS_MAX = 100
OPTION_VALUE_MAX_CHARS = 150
PLACEHOLDER_MAX_CHARS = 150
BLOCK_ID_MAX_CHARS = 255
FORM_MAX_FIELDS = 95
"""Inputs per form: a modal holds 100 blocks and the edit modal adds its heading."""
NUMBER_MAX_CHARS = 40
HINT_VALUE_MAX_CHARS = 500
"""Of a value holding invisible characters, what its field's hint shows marked."""
"""Longer number texts go to a JSON input rather than a ``number_input``."""
_MAX_REF_HOPS = 8
_INTEGER = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")

Kind = Literal["string", "integer", "number", "choice", "json", "kept"]


@dataclass(frozen=True)
class FormField:
    """One argument in the edit form: its widget and what it was rendered with."""

    name: str
    kind: Kind
    required: bool
    nullable: bool
    present: bool
    """The argument is in the proposed arguments (``proposed`` is its value)."""
    proposed: Any
    initial: str | None
    """Text put in the input, or the JSON value of the selected option; None: empty."""
    hint: str = ""
    placeholder: str = ""
    choices: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Form:
    """The edit form of one call: typed fields, one JSON input, or nothing editable."""

    mode: Literal["typed", "json", "kept"]
    fields: tuple[FormField, ...] = ()
    json_text: str = ""
    """JSON of all arguments (``json`` and ``kept`` modes)."""


def build_form(args_schema: dict[str, Any], args: dict[str, Any]) -> Form:
    """Lay out the edit form of a call with ``args`` of a tool with ``args_schema``.

    Args:
        args_schema: JSON schema of the tool's arguments.
        args: the proposed arguments.

    Returns:
        The form; fields follow the schema's property order, then arguments the schema
        does not know (as JSON fields, so nothing is dropped unseen).
    """
    properties = args_schema.get("properties")
    if not isinstance(properties, dict):
        return _untyped_form(args)
    names = [*properties, *(name for name in args if name not in properties)]
    if not _fits(names):
        return _untyped_form(args)
    required = set(args_schema.get("required") or [])
    fields = []
    for name in names:
        if name in properties:
            schema, nullable = resolve(properties[name], args_schema)
            fields.append(_field(name, schema, nullable, name in required, args))
        else:
            fields.append(_field(name, {}, False, False, args, wording.NOT_IN_SCHEMA_HINT))
    return Form("typed", tuple(fields))


def json_text(value: Any) -> str:
    """Pretty JSON of ``value`` (compact when pretty would not fit an input)."""
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    if len(text) > INPUT_MAX_CHARS:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return text


def option_value(value: Any) -> str:
    """The ``value`` of the select option standing for ``value`` (its compact JSON)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def resolve(schema: Any, root: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Follow ``$ref``, one-item ``allOf`` and ``anyOf``/``oneOf`` ``[X, null]`` to X.

    Args:
        schema: one property's schema.
        root: the whole schema, where ``#/$defs/...`` references point.

    Returns:
        ``(schema, nullable)``: the merged schema (outer keys such as ``description`` and
        ``default`` win over the referenced ones) and whether ``null`` is allowed.
    """
    nullable = False
    for _ in range(_MAX_REF_HOPS):
        if not isinstance(schema, dict):
            return {}, nullable
        rest = {k: v for k, v in schema.items() if k not in ("$ref", "allOf", "anyOf", "oneOf")}
        alternatives = schema.get("anyOf") or schema.get("oneOf")
        if isinstance(schema.get("$ref"), str):
            target = _pointer(root, schema["$ref"])
            if target is None:
                break
            schema = {**target, **rest}
        elif isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
            schema = {**schema["allOf"][0], **rest}
        elif isinstance(alternatives, list):
            kept = [a for a in alternatives if not _is_null(a)]
            nullable = nullable or len(kept) < len(alternatives)
            if len(kept) != 1:
                return rest, nullable
            schema = {**kept[0], **rest}
        else:
            break
    if not isinstance(schema, dict):
        return {}, nullable
    types = schema.get("type")
    if isinstance(types, list):
        kept_types = [t for t in types if t != "null"]
        nullable = nullable or len(kept_types) < len(types)
        schema = {**schema, "type": kept_types[0] if len(kept_types) == 1 else kept_types}
    return schema, nullable


def _fits(names: list[str]) -> bool:
    return len(names) <= FORM_MAX_FIELDS and all(
        len(ids.arg_block_id(name)) <= BLOCK_ID_MAX_CHARS for name in names
    )


def _untyped_form(args: dict[str, Any]) -> Form:
    text = json_text(args)
    if len(text) <= INPUT_MAX_CHARS:
        return Form("json", json_text=text)
    if not _fits(list(args)):
        return Form("kept", json_text=text)
    return Form("typed", tuple(_field(name, {}, False, False, args) for name in args))


def _field(
    name: str,
    schema: dict[str, Any],
    nullable: bool,
    required: bool,
    args: dict[str, Any],
    note: str = "",
) -> FormField:
    """Choose the widget for one argument from its resolved schema and proposed value."""
    present, value = name in args, args.get(name)
    if present and is_marker(value):  # redacted: empty, and kept unless a value is typed
        rest = {k: v for k, v in args.items() if k != name}
        field = _field(name, schema, nullable, required, rest, note)
        hint = " ".join(filter(None, [field.hint, wording.REDACTED_HINT]))
        return replace(field, present=True, proposed=value, hint=hint, placeholder="")
    common: dict[str, Any] = {
        "name": name,
        "required": required,
        "nullable": nullable,
        "present": present,
        "proposed": value,
        "hint": " ".join(filter(None, [str(schema.get("description") or "").strip(), note])),
        "placeholder": "" if present else _placeholder(schema),
    }
    empty = not present or (value is None and nullable)
    choices = _choices(schema, nullable)
    kind: Kind = "json"
    initial = None if not present or (value is None and nullable) else json_text(value)
    if choices is not None:
        values = [option_value(c) for c in choices]
        if (
            len(choices) <= OPTIONS_MAX
            and len(set(values)) == len(values)
            and all(len(v) <= OPTION_VALUE_MAX_CHARS for v in values)
            and (not present or option_value(value) in values)
        ):
            chosen = option_value(value) if present else None
            return FormField(kind="choice", initial=chosen, choices=choices, **common)
    elif schema.get("type") == "string" and (empty or isinstance(value, str)):
        kind, initial = "string", (value or None) if present else None
    elif schema.get("type") in ("integer", "number") and (empty or _is_number(value)):
        text = None if empty or value is None else number_text(value)
        is_int = schema["type"] == "integer"
        if (text is None or len(text) <= NUMBER_MAX_CHARS) and (
            empty or not is_int or isinstance(value, int)
        ):
            kind, initial = ("integer" if is_int else "number"), text
    if initial is not None and len(initial) > INPUT_MAX_CHARS:
        kind = "kept"
    if kind == "json" and initial is not None and wording.REDACTED in initial:
        common["hint"] = " ".join(filter(None, [common["hint"], wording.REDACTED_JSON_HINT]))
    if initial is not None and kind != "kept" and visible(initial) != initial:
        # the input shows the value as it is (what is sent back must be), where the card
        # marks what hides or reorders text: the hint says so, and shows it marked (the
        # form's hints are drawn through ``visible``)
        hint = wording.invisible_in_value_hint(initial[:HINT_VALUE_MAX_CHARS])
        common["hint"] = " ".join(filter(None, [common["hint"], hint]))
    return FormField(kind=kind, initial=initial, **common)


def number_text(value: int | float) -> str:
    """Positional text of a number for a ``number_input`` (floats keep a ``.``).

    ``repr`` gives the shortest digits that read back as the same float; ``Decimal``
    writes them without an exponent (``1e-07`` → ``0.0000001``), which Slack's number
    input accepts.
    """
    if isinstance(value, int):
        return str(value)
    text = format(Decimal(repr(value)), "f")
    return text if "." in text else text + ".0"


def parse_number(text: str) -> int | float | None:
    """Read a number typed into a ``number_input``: an int when it has no ``.`` or
    exponent, else a finite float; None when it is not a plain decimal number."""
    if not _NUMBER.fullmatch(text):
        return None
    if _INTEGER.fullmatch(text):
        try:
            return int(text)
        except ValueError:
            return None
    number = float(text)
    return number if math.isfinite(number) else None


MAX_JSON_DEPTH = 64
"""Deepest nesting an edited JSON value may have (pydantic refuses to serialise far
deeper values; no tool argument needs more)."""


def parse_json(text: str) -> Any:
    """``json.loads`` refusing ``NaN``/``Infinity`` (not JSON), a number too large for a
    float (``1e999``: Python reads it as infinity, which is stored as ``null``), a string
    that is not text (a lone surrogate escape, ``"\\ud800"``, which cannot be stored) and
    absurd nesting.

    Raises:
        ValueError: with a plain message such as "Expecting ',' delimiter (line 1,
            column 9)".
    """

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON value")

    def finite(digits: str) -> float:
        number = float(digits)
        if not math.isfinite(number):
            raise ValueError(f"{digits[:20]} is too large a number")
        return number

    try:
        value = json.loads(text, parse_constant=refuse, parse_float=finite)
    except json.JSONDecodeError as error:
        raise ValueError(f"{error.msg} (line {error.lineno}, column {error.colno})") from None
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if _depth(value) > MAX_JSON_DEPTH:
        raise ValueError(f"nested more than {MAX_JSON_DEPTH} levels deep")
    if not is_text(json.dumps(value, ensure_ascii=False)):
        raise ValueError("a string holds a lone surrogate (\\ud800 to \\udfff), not text")
    return value


def is_text(text: str) -> bool:
    """Whether ``text`` is text Unicode can encode: not a lone UTF-16 surrogate in it
    (a forged payload's, or a JSON escape's), which no store or Slack can keep."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _depth(value: Any) -> int:
    """How deeply ``value`` nests lists and objects (0 for a scalar)."""
    depth, level = 0, [value]
    while level:
        level = [
            child
            for item in level
            if isinstance(item, dict | list)
            for child in (item.values() if isinstance(item, dict) else item)
        ]
        depth += 1
    return depth - 1


def _is_number(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and math.isfinite(value)
    )


def _placeholder(schema: dict[str, Any]) -> str:
    if "default" not in schema:
        return ""
    default = schema["default"]
    shown = default if isinstance(default, str) else option_value(default)
    text = wording.default_placeholder(visible(shown))
    return text if len(text) <= PLACEHOLDER_MAX_CHARS else text[: PLACEHOLDER_MAX_CHARS - 1] + "…"


def _pointer(root: dict[str, Any], ref: str) -> dict[str, Any] | None:
    """Resolve a local reference such as ``#/$defs/Name``; None when it is not one."""
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        key = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node if isinstance(node, dict) else None


def _is_null(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "null"


def _choices(schema: dict[str, Any], nullable: bool) -> tuple[Any, ...] | None:
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        values = list(schema["enum"])
    elif "const" in schema:
        values = [schema["const"]]
    elif schema.get("type") == "boolean":
        values = [True, False]
    else:
        return None
    if nullable and not any(v is None for v in values):
        values.append(None)
    return tuple(values)

"""Check tool-call arguments against the tool's JSON schema, in plain words.

Shared by the web process (field errors in the edit modal, before anything is saved) and
the worker (the last check before resuming a ``thread_id``), so an edited call that the tool
would refuse is never sent to the graph (docs/architecture.md, invariant 4). Pure: no I/O.

Schemas are the ones pydantic's ``model_json_schema()`` gives for a LangChain tool's
``tool_call_schema`` (``$defs``/``$ref``, ``anyOf`` with ``null`` for ``Optional``,
``enum``, ``const``), checked with the Draft 2020-12 validator of ``jsonschema``. The
messages' words are in ``agent_bridge.wording``; this module picks which one applies.

A schema can come from the agent (an interrupt's JSON schema, a tool's own), so every
pattern it holds (``pattern``, ``patternProperties``, and ``additionalProperties``' use
of them) is matched with the ``regex`` module under ``PATTERN_TIMEOUT_S`` a value and
``PATTERNS_BUDGET_S`` a whole check, rather than with ``re`` (``jsonschema``'s own): a
pattern that backtracks catastrophically (``^(a+)+$``), over one value or many, cannot
hold the web process past Slack's 3 s, and what it cannot check in time is refused.
``uniqueItems`` is checked in linear time (``jsonschema``'s falls back to comparing
every pair, 15 s for 4,000 objects).
"""

from __future__ import annotations

import copy
import json
import logging
import math
import time
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import regex
from jsonschema import Draft202012Validator, ValidationError, validators
from jsonschema.exceptions import best_match, relevance
from pydantic import BaseModel

from agent_bridge import wording

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

logger = logging.getLogger(__name__)

GENERAL_KEY = ""
"""Key of errors that concern the arguments as a whole rather than one argument."""
MESSAGE_MAX_CHARS = 300
"""Longest message returned; Slack shows modal field errors under the input."""
_ENUM_SHOWN = 10
"""How many allowed values an enum message lists before ``…``."""
PATTERN_TIMEOUT_S = 0.1
"""Longest a schema's ``pattern`` may take to match one value, seconds; past it the value
is refused (``wording.PATTERN_TOO_SLOW_PLAIN``)."""
PATTERNS_BUDGET_S = 0.5
"""Longest all the pattern matching of one ``check_args`` may take, seconds: 40 values
each just under ``PATTERN_TIMEOUT_S`` held the web process 4 s."""

_patterns_end: ContextVar[float] = ContextVar("patterns_end", default=math.inf)


def _search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches in ``text`` (``regex``, bounded by ``PATTERN_TIMEOUT_S``
    and what is left of the check's ``PATTERNS_BUDGET_S``); a pattern ``regex`` cannot
    read matches nothing.

    Raises:
        TimeoutError: Not known in time.
    """
    left = min(PATTERN_TIMEOUT_S, _patterns_end.get() - time.monotonic())
    if left <= 0:
        raise TimeoutError
    try:
        return regex.search(pattern, text, timeout=left) is not None
    except regex.error:  # jsonschema's check_schema accepted it; regex reads it otherwise
        return False


def _too_slow() -> ValidationError:
    return ValidationError(wording.PATTERN_TOO_SLOW_PLAIN, validator="pattern_timeout")


def _bounded_pattern(
    validator: Any, pattern: str, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    """The ``pattern`` keyword (JSON Schema 2020-12, validation 6.3.3), bounded
    (``_search``)."""
    if not validator.is_type(instance, "string"):
        return
    try:
        matched = _search(pattern, instance)
    except TimeoutError:
        yield _too_slow()
        return
    if not matched:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _bounded_pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    """``patternProperties`` (core 10.3.2.2), each name matched bounded (``_search``)."""
    if not validator.is_type(instance, "object"):
        return
    try:
        for pattern, subschema in patterns.items():
            for name, value in instance.items():
                if _search(pattern, name):
                    yield from validator.descend(value, subschema, path=name, schema_path=pattern)
    except TimeoutError:
        yield _too_slow()


def _bounded_additional_properties(
    validator: Any, additional: Any, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    """``additionalProperties`` (core 10.3.2.3): the names neither ``properties`` nor a
    ``patternProperties`` pattern (matched bounded) covers."""
    if not validator.is_type(instance, "object"):
        return
    try:
        extras = _unlisted(instance, schema)
    except TimeoutError:
        yield _too_slow()
        return
    if validator.is_type(additional, "object"):
        for name in extras:
            yield from validator.descend(instance[name], additional, path=name)
    elif not additional and extras:
        yield ValidationError(f"Additional properties are not allowed ({extras!r} unexpected)")


def _linear_unique_items(
    validator: Any, unique: Any, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    """``uniqueItems`` (validation 6.4.3) in linear time: each item as canonical JSON,
    ``true`` apart from ``1`` and ``1.0`` the same as ``1``, as JSON Schema's equality."""
    if not unique or not validator.is_type(instance, "array"):
        return
    seen = {json.dumps(_json_number(item), sort_keys=True) for item in instance}
    if len(seen) < len(instance):
        yield ValidationError("has non-unique elements")


def _json_number(value: Any) -> Any:
    """``value`` with every whole float as an int (JSON Schema: ``1.0`` equals ``1``)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _json_number(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_number(v) for v in value]
    return value


_Validator = validators.extend(
    Draft202012Validator,
    {
        "pattern": _bounded_pattern,
        "patternProperties": _bounded_pattern_properties,
        "additionalProperties": _bounded_additional_properties,
        "uniqueItems": _linear_unique_items,
    },
)


def check_args(args_schema: dict[str, Any], args: dict[str, Any]) -> dict[str, str]:
    """Check ``args`` against ``args_schema`` and describe what is wrong.

    Args:
        args_schema: JSON schema of the tool's arguments (``$defs`` refs are resolved);
            ``{}`` accepts anything.
        args: the arguments, as the tool would receive them.

    Returns:
        ``{}`` when valid; else ``{argument name: message}``, one message per argument
        (the most relevant), key ``""`` for errors about no single argument. Messages are
        plain words: "This field is required.", "Must be a whole number.", nested ones
        prefixed with where they are ("At retries: Must be a whole number."), and whole:
        one may quote the value (``not``, ``contains``), so the caller masks what must
        not be shown before it cuts them (``clip``): a cut could leave part of a secret.

    Raises:
        jsonschema.exceptions.SchemaError: if ``args_schema`` is not a valid schema.
    """
    Draft202012Validator.check_schema(args_schema)
    if _holds(args_schema, "unevaluatedProperties") and _holds(args_schema, "patternProperties"):
        # jsonschema matches these patterns for unevaluatedProperties with Python's re,
        # unbounded: refused whole rather than let a pattern hold the process
        return {GENERAL_KEY: wording.SCHEMA_TOO_SLOW_PLAIN}
    validator = _Validator(args_schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    errors: dict[str, str] = {}
    budget = _patterns_end.set(time.monotonic() + PATTERNS_BUDGET_S)
    try:
        found = sorted(validator.iter_errors(args), key=relevance, reverse=True)
        for error in found:
            for key, message in _describe_top(error):
                errors.setdefault(key, message)
    finally:
        _patterns_end.reset(budget)
    return errors


def tool_args_schema(tool: BaseTool) -> dict[str, Any]:
    """Return the JSON schema of the arguments the model passes to ``tool``.

    Args:
        tool: a LangChain tool; its ``tool_call_schema`` (the args the model fills in,
            without injected ones) is a pydantic model class, a JSON schema dict or None.

    Returns:
        ``model_json_schema()`` of a pydantic model (``.schema()`` for a ``pydantic.v1``
        one), a copy of a dict schema, or ``{"type": "object"}`` when there is none or
        pydantic cannot express it as JSON schema (the edit form is then one JSON input).
    """
    schema = tool.tool_call_schema
    if isinstance(schema, dict):
        return copy.deepcopy(schema)
    try:
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            return schema.model_json_schema()
        legacy = getattr(schema, "schema", None)
        if callable(legacy):
            return dict(legacy())
    except Exception:  # pydantic refuses some types (callables, ...): fall back, loudly
        logger.warning("no JSON schema for the arguments of tool %s", tool.name, exc_info=True)
    return {"type": "object"}


def _describe_top(error: ValidationError) -> Iterator[tuple[str, str]]:
    """Yield ``(argument name, message)`` for one error of the whole ``args`` object."""
    path = list(error.absolute_path)
    if path:
        yield str(path[0]), _describe(error, skip=1)
    elif error.validator == "required":
        missing = [
            name
            for name in error.validator_value
            if error.message == f"{name!r} is a required property"
        ]
        yield (missing[0] if missing else GENERAL_KEY), wording.REQUIRED_PLAIN
    elif error.validator == "additionalProperties" and isinstance(error.instance, dict):
        for name in _unexpected(error):
            yield name, wording.UNKNOWN_ARGUMENT_PLAIN
    elif error.validator == "type":
        yield GENERAL_KEY, wording.ARGS_NOT_OBJECT_PLAIN
    else:
        yield GENERAL_KEY, _describe(error, skip=0)


def _describe(error: ValidationError, *, skip: int) -> str:
    """Describe ``error`` in plain words, prefixed with where it is in the value.

    Args:
        error: one validation error.
        skip: how many leading parts of its path are already said (1: the argument).

    Returns:
        e.g. "Must be a whole number." or "At items[2].name: Must be a string.".
    """
    message = None
    while error.validator in ("anyOf", "oneOf") and error.context:
        message, inner = _alternatives(error)
        if inner is None:
            break
        error, message = inner, None
    if message is None:
        message = _plain(error)
    where = list(error.absolute_path)[skip:]
    return wording.at_path_plain(_path_text(where), message) if where else message


def _alternatives(error: ValidationError) -> tuple[str | None, ValidationError | None]:
    """Look inside a failed ``anyOf``/``oneOf`` (``Optional[X]`` is ``anyOf [X, null]``).

    Returns:
        ``(message, None)`` when the value has none of the alternatives' types ("Must be
        a whole number or null."); ``(None, inner error)`` when it has one's type but
        fails inside it, so that failure is described instead.
    """
    depth = len(error.absolute_path)
    context = list(error.context or [])
    wrong_type = [e for e in context if e.validator == "type" and len(e.absolute_path) == depth]
    others = [e for e in context if e not in wrong_type]
    if others:
        return None, best_match(others)
    types: list[str] = []
    for e in wrong_type:
        value = e.validator_value
        for t in [value] if isinstance(value, str) else value:
            if t not in types:
                types.append(t)
    return wording.wrong_type_plain(types), None


def _plain(error: ValidationError) -> str:
    """Say what ``error`` means in plain words, without where it is."""
    kind, value = error.validator, error.validator_value
    if kind == "type":
        return wording.wrong_type_plain([value] if isinstance(value, str) else list(value))
    if kind == "enum":
        shown = [_json(v) for v in value[:_ENUM_SHOWN]]
        return wording.one_of_plain(shown, more=len(value) > _ENUM_SHOWN)
    if kind == "const":
        return wording.const_plain(_json(value))
    message = wording.schema_keyword_plain(kind, value)
    if message is not None:
        return message
    if kind == "required" and isinstance(error.instance, dict):
        return wording.missing_fields_plain([n for n in value if n not in error.instance])
    if kind == "additionalProperties" and isinstance(error.instance, dict):
        return wording.unexpected_fields_plain(_unexpected(error))
    return str(error.message)


def _unexpected(error: ValidationError) -> list[str]:
    """Names in an object that its schema's ``properties``/``patternProperties`` lack
    (none when the patterns cannot say in time: the error says so itself)."""
    schema = error.schema if isinstance(error.schema, dict) else {}
    try:
        return _unlisted(error.instance, schema)
    except TimeoutError:
        return []


def _unlisted(instance: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """The names of ``instance`` neither ``schema``'s ``properties`` nor one of its
    ``patternProperties`` (matched bounded, ``_search``) covers.

    Raises:
        TimeoutError: A pattern could not say in time.
    """
    known = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    return [
        name
        for name in instance
        if name not in known and not any(_search(p, name) for p in patterns)
    ]


def _path_text(where: Sequence[str | int]) -> str:
    """Render a path inside a value: ``["a", 0, "b"]`` → ``a[0].b``."""
    text = ""
    for part in where:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _holds(schema: Any, keyword: str) -> bool:
    """Whether ``keyword`` is a key anywhere in ``schema`` (a JSON value)."""
    if isinstance(schema, dict):
        return keyword in schema or any(_holds(v, keyword) for v in schema.values())
    if isinstance(schema, list):
        return any(_holds(v, keyword) for v in schema)
    return False


def clip(message: str) -> str:
    """``message`` cut to ``MESSAGE_MAX_CHARS``, a cut one ending in "…"."""
    return message if len(message) <= MESSAGE_MAX_CHARS else message[: MESSAGE_MAX_CHARS - 1] + "…"

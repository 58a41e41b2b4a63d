"""Whether a JSON schema an agent sent can check answers (pure functions of data).

An interrupt may carry the JSON schema of the answer it wants
(``agent_bridge.interrupt_shapes``, the ``json_schema`` shape); the graph wrote it, so it
may be anything. ``agent_bridge.arguments.check_args`` checks every submitted form
against it with ``jsonschema``, which raises rather than answers on a schema that is
not one (``SchemaError``), on a ``$ref`` it cannot resolve (a remote URL: ``jsonschema``
fetches nothing; a pointer to nowhere) and on a ``$ref`` loop that never reaches into the
value (``RecursionError``). A form checked against such a schema could never be
submitted, so ``schema_problem`` finds those at intake and the interrupt is read as
a plain value instead.

Only local references are followed: ``#`` and JSON pointers ``#/...`` from the schema's
root (what pydantic's ``model_json_schema`` writes). Anything else (``$dynamicRef``,
``$anchor`` names, URLs, a ``$ref`` resolved against a nested ``$id``) is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
IN_PLACE_SCHEMAS = ("not", "if", "then", "else")
"""Keywords whose subschemas apply to the same value (a loop through them never ends)."""
DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
"""Keywords holding values, not schemas (a ``$ref`` key inside one is data)."""


def schema_problem(schema: dict[str, Any]) -> str | None:
    """Why answers cannot be checked against ``schema``, or ``None`` when they can.

    Args:
        schema: A JSON schema (Draft 2020-12, as ``check_args`` reads it).

    Returns:
        A plain sentence for the worker's log (the metaschema's complaint, the
        reference that does not resolve, or the one that loops), or ``None``.
    """
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        return f"not a JSON schema: {error.message}"
    for node in _subschemas(schema):
        if "$dynamicRef" in node:
            return f"$dynamicRef {node['$dynamicRef']!r} is not followed"
        ref = node.get("$ref")
        if ref is not None and _target(schema, ref) is None:
            return f"$ref {ref!r} does not point into the schema"
    looping = _looping_ref(schema)
    return f"$ref {looping!r} loops back to itself" if looping else None


def _subschemas(schema: Any) -> Iterator[dict[str, Any]]:
    """Every object in ``schema`` that is a schema (not inside a data keyword)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield node
            stack.extend(v for k, v in node.items() if k not in DATA_KEYWORDS)
        elif isinstance(node, list):
            stack.extend(node)


def _target(root: dict[str, Any], ref: Any) -> dict[str, Any] | bool | None:
    """The subschema a local ``$ref`` points to, or ``None``."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        key = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node if isinstance(node, dict | bool) else None


def _in_place(root: dict[str, Any], node: dict[str, Any]) -> Iterator[tuple[Any, Any]]:
    """``(subschema, $ref or None)`` for each subschema applying to the same value."""
    if "$ref" in node:
        yield _target(root, node["$ref"]), node["$ref"]
    for key in IN_PLACE_LISTS:
        for item in node.get(key) or []:
            yield item, None
    for key in (*IN_PLACE_SCHEMAS, "dependentSchemas"):
        value = node.get(key)
        children = (
            value.values() if key == "dependentSchemas" and isinstance(value, dict) else [value]
        )
        for child in children:
            yield child, None


def _looping_ref(root: dict[str, Any]) -> str | None:
    """A ``$ref`` through which a subschema applies to the same value again, or ``None``."""
    done: set[int] = set()
    for start in _subschemas(root):
        on_path: set[int] = set()
        stack: list[tuple[Any, Any, bool]] = [(start, None, False)]
        while stack:
            node, ref, leaving = stack.pop()
            if leaving:
                on_path.discard(id(node))
                done.add(id(node))
                continue
            if not isinstance(node, dict) or id(node) in done:
                continue
            if id(node) in on_path:
                return str(ref)
            on_path.add(id(node))
            stack.append((node, ref, True))
            stack.extend(
                (child, child_ref or ref, False) for child, child_ref in _in_place(root, node)
            )
    return None

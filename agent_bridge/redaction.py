"""Redaction: argument values whose key names a secret are never shown (pure).

The policy's ``redact`` list (``Policy.redact``, extended per tool by
``ToolPolicy.redact``) names argument keys; it is copied onto each approval request
(``ApprovalRequest.redact``) when the request is made, so the web process masks without
the policy file. A key matches a rule when, compared case-insensitively and ignoring
everything but letters and digits, it is the rule or ends with it: the rule
``api_key`` matches ``api_key``, ``apiKey``, ``X-Api-Key`` and ``stripe_api_key``;
``token`` matches ``GITHUB_TOKEN`` and ``accessToken``. Keys are matched at any depth,
in objects nested in objects and in lists.

A matched value, whatever its type, is shown as ``wording.REDACTED``: never its length
or any part of it. Only what people see is masked: the tool receives the real value,
and the call hash (``agent_bridge.binding``) is over the real arguments. An edit form
shows a redacted value empty; ``restore`` puts the real value back wherever the
reviewer left the marker (or an empty top-level input) in place. Free text that repeats
a redacted value (a tool's output, the model's answer, an error) is ``scrub``-bed of it
before it is posted or logged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agent_bridge import wording

DEFAULT_REDACT: tuple[str, ...] = (
    "password",
    "passwd",
    "secret",
    "token",
    "api_key",
    "authorization",
)
"""The rules when the policy names none (the issue's list; keys ending in them too)."""
MARKERS = frozenset({wording.REDACTED, wording.REDACTED_CHANGED})
"""What a redacted value is shown as; ``restore`` reads either back as "keep"."""
_ABSENT = object()


def _normal(key: str) -> str:
    """``key`` lower-cased, with only its letters and digits (``X-Api-Key`` → ``xapikey``)."""
    return "".join(char for char in key.casefold() if char.isalnum())


def is_redacted(key: str, rules: Iterable[str]) -> bool:
    """Whether the value under ``key`` is hidden by ``rules`` (see the module docstring).

    Args:
        key: An argument's (or a nested object's) key.
        rules: Key names, e.g. ``DEFAULT_REDACT``; a rule with no letter or digit
            matches nothing.
    """
    name = _normal(key)
    return any((rule := _normal(r)) and name.endswith(rule) for r in rules)


def redact(value: Any, rules: Iterable[str], *, before: Any = _ABSENT) -> Any:
    """Return a copy of ``value`` with every redacted key's value replaced by the marker.

    Args:
        value: Arguments (a dict), or any JSON-like value; dicts and lists are walked at
            any depth, other values returned as they are.
        rules: The ``redact`` key names.
        before: The value ``value`` replaces (an edit's proposed arguments); a redacted
            value that differs from the one at the same place in ``before`` is shown as
            ``wording.REDACTED_CHANGED``, so a reviewer sees that an edit changed it.

    Returns:
        The masked copy; ``value`` itself is not changed.
    """
    rules = tuple(rules)
    if isinstance(value, Mapping):
        masked = {}
        for key, item in value.items():
            was = before.get(key, _ABSENT) if isinstance(before, Mapping) else _ABSENT
            if is_redacted(str(key), rules):
                changed = before is not _ABSENT and was != item
                shown = wording.REDACTED_CHANGED if changed else wording.REDACTED
                masked[key] = item if is_marker(item) else shown  # masking twice is a no-op
            else:
                masked[key] = redact(item, rules, before=was)
        return masked
    if isinstance(value, list):
        return [
            redact(item, rules, before=_at(before, index) if before is not _ABSENT else _ABSENT)
            for index, item in enumerate(value)
        ]
    return value


def restore(submitted: Any, real: Any, rules: Iterable[str]) -> Any:
    """Put the real values back where an edit left a redacted value's marker.

    Walks ``submitted`` (what the reviewer sent, read from a form rendered from
    ``redact(real)``) beside ``real``: under a redacted key whose submitted value is a
    marker, the real value at the same place (dict key, or list position) is used. A
    marker with no real value at its place (the reviewer typed it) is kept as typed.

    Args:
        submitted: The edited arguments, markers and all.
        real: The arguments the form was rendered from, unmasked.
        rules: The ``redact`` key names the form was masked with.

    Returns:
        The arguments to send to the tool.
    """
    rules = tuple(rules)
    if isinstance(submitted, Mapping):
        merged = {}
        for key, item in submitted.items():
            was = real.get(key, _ABSENT) if isinstance(real, Mapping) else _ABSENT
            if is_redacted(str(key), rules) and is_marker(item) and was is not _ABSENT:
                merged[key] = was
            else:
                merged[key] = restore(item, was, rules)
        return merged
    if isinstance(submitted, list):
        return [restore(item, _at(real, index), rules) for index, item in enumerate(submitted)]
    return submitted


SCRUB_MIN_CHARS = 4
"""Shortest secret value ``scrub`` replaces inside free text (a shorter one would
mangle ordinary words)."""


def secret_values(value: Any, rules: Iterable[str]) -> set[str]:
    """The string values under redacted keys in ``value``, at any depth (a redacted
    object's or list's strings included), for ``scrub``."""
    rules = tuple(rules)
    found: set[str] = set()
    if isinstance(value, Mapping):
        for key, item in value.items():
            found |= _strings(item) if is_redacted(str(key), rules) else secret_values(item, rules)
    elif isinstance(value, list):
        for item in value:
            found |= secret_values(item, rules)
    return found


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of each secret (of at least ``SCRUB_MIN_CHARS``)
    replaced by the marker: a tool's output, an error or the model's answer that
    repeats a redacted argument does not show it either."""
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= SCRUB_MIN_CHARS:
            text = text.replace(secret, wording.REDACTED)
    return text


def _strings(value: Any) -> set[str]:
    """Every string in ``value``, at any depth."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, list):
        return set().union(*(_strings(item) for item in value))
    return set()


def is_marker(value: Any) -> bool:
    """Whether ``value`` is what a redacted value is shown as."""
    return isinstance(value, str) and value in MARKERS


def _at(value: Any, index: int) -> Any:
    """``value[index]`` of a list, else ``_ABSENT``."""
    return value[index] if isinstance(value, list) and index < len(value) else _ABSENT

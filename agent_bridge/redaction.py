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

import re
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
    """Return a copy of ``value`` with every secret in it replaced by the marker.

    A secret is: the value under a redacted key; the ``value`` of a name/value pair
    whose name is a redacted key (``{"name": "DB_PASSWORD", "value": …}``, as in
    environment lists); the second item of a two-item list whose first is a redacted
    key (``["Authorization", "Bearer …"]``, as in header lists); the password of a URL
    (``postgresql://app:…@db/prod``); and, in any other string, a redacted value
    repeated (``scrub``).

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
    secrets = secret_values(value, rules)
    if before is not _ABSENT:
        secrets |= secret_values(before, rules)
    return _masked(value, rules, before, secrets)


def _masked(value: Any, rules: tuple[str, ...], before: Any, secrets: set[str]) -> Any:
    if isinstance(value, Mapping):
        masked = {}
        pair = _pair_name(value, rules)
        for key, item in value.items():
            was = before.get(key, _ABSENT) if isinstance(before, Mapping) else _ABSENT
            if is_redacted(str(key), rules) or (pair and str(key).casefold() in PAIR_VALUE_KEYS):
                masked[key] = _marker(item, was, before)
            else:
                masked[key] = _masked(item, rules, was, secrets)
        return masked
    if isinstance(value, list):
        if _is_header(value, rules):
            return [value[0], _marker(value[1], _at(before, 1), before)]
        return [
            _masked(item, rules, _at(before, index), secrets) for index, item in enumerate(value)
        ]
    if isinstance(value, str):
        return _URL_PASSWORD.sub(rf"\1{wording.REDACTED}\3", scrub(value, secrets))
    return value


def _marker(item: Any, was: Any, before: Any) -> str:
    """What a secret is shown as: "changed" when an edit changed it (masking twice is a
    no-op)."""
    if is_marker(item):
        return str(item)
    changed = before is not _ABSENT and was != item
    return wording.REDACTED_CHANGED if changed else wording.REDACTED


def restore(submitted: Any, real: Any, rules: Iterable[str]) -> Any:
    """Put the real values back where an edit left what the form showed of them.

    Walks ``submitted`` (what the reviewer sent, read from a form rendered from
    ``redact(real)``) beside ``real``: any part the reviewer left exactly as shown (a
    marker, a scrubbed text, a whole object) gets the real value back; in a list whose
    items were removed, added or moved, an item left as shown gets the real item it was
    shown for, never the one at its position (so a secret stays with its own object). A
    marker with no real value at its place (the reviewer typed it) is kept as typed.

    Args:
        submitted: The edited arguments, markers and all.
        real: The arguments the form was rendered from, unmasked.
        rules: The ``redact`` key names the form was masked with.

    Returns:
        The arguments to send to the tool.
    """
    rules = tuple(rules)
    return _restored(submitted, real, rules, secret_values(real, rules))


def _restored(submitted: Any, real: Any, rules: tuple[str, ...], secrets: set[str]) -> Any:
    if real is not _ABSENT and submitted == _masked(real, rules, _ABSENT, secrets):
        return real  # left as shown
    if isinstance(submitted, Mapping):
        merged = {}
        for key, item in submitted.items():
            was = real.get(key, _ABSENT) if isinstance(real, Mapping) else _ABSENT
            merged[key] = _restored(item, was, rules, secrets)
        return merged
    if isinstance(submitted, list):
        return _restored_items(submitted, real if isinstance(real, list) else [], rules, secrets)
    return submitted


def _restored_items(
    submitted: list[Any], real: list[Any], rules: tuple[str, ...], secrets: set[str]
) -> list[Any]:
    """A list: each item left as shown gets the real item it was shown for (the one at
    its own place first). An item the reviewer changed takes the secrets of the real
    item at its place only if the list kept its shape (same length, every unchanged item
    at its own place); otherwise it is taken as typed, its markers kept, so a secret never
    moves to another object."""
    shown = [_masked(r, rules, _ABSENT, secrets) for r in real]
    unused = set(range(len(real)))
    matched: dict[int, int] = {}
    for i, item in enumerate(submitted):
        order = ([i] if i in unused else []) + sorted(unused - {i})
        j = next((j for j in order if shown[j] == item), None)
        if j is not None:
            unused.discard(j)
            matched[i] = j
    kept_shape = len(submitted) == len(real) and all(i == j for i, j in matched.items())
    return [
        real[matched[i]]
        if i in matched
        else _restored(item, real[i] if kept_shape else _ABSENT, rules, secrets)
        for i, item in enumerate(submitted)
    ]


SCRUB_MIN_CHARS = 4
"""Shortest secret value ``scrub`` replaces inside free text (a shorter one would
mangle ordinary words)."""


def secret_values(value: Any, rules: Iterable[str]) -> set[str]:
    """The secret strings in ``value`` (see ``redact``: under redacted keys, in name/value
    pairs and header pairs, URL passwords), at any depth, for ``scrub``."""
    rules = tuple(rules)
    found: set[str] = set()
    if isinstance(value, Mapping):
        pair = _pair_name(value, rules)
        for key, item in value.items():
            hidden = is_redacted(str(key), rules) or (
                pair and str(key).casefold() in PAIR_VALUE_KEYS
            )
            found |= _strings(item) if hidden else secret_values(item, rules)
    elif isinstance(value, list):
        if _is_header(value, rules):
            return _strings(value[1])
        for item in value:
            found |= secret_values(item, rules)
    elif isinstance(value, str):
        found |= {m.group(2) for m in _URL_PASSWORD.finditer(value)}
    return found


PAIR_NAME_KEYS = frozenset({"name", "key"})
PAIR_VALUE_KEYS = frozenset({"value", "val"})
"""A dict ``{"name": <redacted key>, "value": …}`` is a name/value pair (environment
variables, parameters): its value is a secret."""
_URL_PASSWORD = re.compile(
    r"(\b[a-z][a-z0-9+.-]{0,31}://[^\s:/@]{0,256}:)([^\s@/]{1,1024})(@)", re.IGNORECASE
)
"""The password in a URL's ``user:password@`` (bounded repeats: agent text can be long)."""


def _pair_name(value: Mapping[Any, Any], rules: tuple[str, ...]) -> bool:
    """Whether ``value`` is a name/value pair naming a redacted key."""
    names = [v for k, v in value.items() if str(k).casefold() in PAIR_NAME_KEYS]
    return any(isinstance(n, str) and is_redacted(n, rules) for n in names) and any(
        str(k).casefold() in PAIR_VALUE_KEYS for k in value
    )


def _is_header(value: list[Any], rules: tuple[str, ...]) -> bool:
    """Whether ``value`` is a ``[name, value]`` pair naming a redacted key."""
    return len(value) == 2 and isinstance(value[0], str) and is_redacted(value[0], rules)


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

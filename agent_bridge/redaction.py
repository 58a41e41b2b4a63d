"""Redaction: argument values whose key names a secret are never shown (pure).

The policy's ``redact`` list (``Policy.redact``, extended per tool by
``ToolPolicy.redact``) names argument keys; it is copied onto each approval request
(``ApprovalRequest.redact``) when the request is made, so the web process masks without
the policy file. A key matches a rule when, compared case-insensitively and ignoring
everything but letters and digits, it ends with the rule, or the rule's words are words
of the key: the rule ``api_key`` matches ``api_key``, ``apiKey``, ``X-Api-Key`` and
``stripe_api_key_v2``; ``secret`` matches ``AWS_SECRET_ACCESS_KEY`` and ``SECRET_KEY``;
``token`` matches ``GITHUB_TOKEN`` and ``token_expiry`` but not ``max_tokens``;
``password`` matches ``dbpassword`` and ``new_password_confirm``. Keys are matched at any depth, in
objects nested in objects and in lists. Secrets that do not sit under such a key are
found too: the value of a name/value pair naming one (``{"name": "DB_PASSWORD",
"value": …}``), the second item of a ``[name, value]`` pair (headers), ``KEY=value`` and
``Header: value`` inside a string (``DB_PASSWORD=…``, ``password=…`` in a libpq DSN,
``Authorization: Bearer …``), a URL's password (``postgresql://app:…@db``), and a
secret known by its shape alone wherever it is (``TOKEN_SHAPES``: a Slack token).

A matched value, whatever its type, is shown as ``wording.REDACTED``: never its length
or any part of it. Only what people see is masked: the tool receives the real value,
and the call hash (``agent_bridge.binding``) is over the real arguments. An edit form
shows a redacted value empty; ``restore`` puts the real value back wherever the
reviewer left the marker (or an empty top-level input) in place. Free text that repeats
a redacted value (a tool's output, the model's answer, an error) is ``scrub``-bed of it
before it is posted or logged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from agent_bridge import wording
from agent_bridge.binding import same_value

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
TOKEN_SHAPES = (
    re.compile(r"xox[abposre]-[A-Za-z0-9-]+"),  # Slack bot, user, config, refresh tokens
    re.compile(r"xapp-[A-Za-z0-9-]+"),  # Slack app-level (Socket Mode) tokens
)
"""Secrets known by their shape, whatever names them or nothing does
(https://docs.slack.dev/authentication/tokens): bare in a tool's output, an argument or
an answer, they are masked as a redacted value is. Found wherever they start, after a
letter too: JSON's ``\\n`` before one, ``SLACK_xoxb-…``, ``token%3Dxoxp-…``."""
_ABSENT = object()
MAX_DEPTH = 64
"""Nesting deeper than this is shown as the marker whole (and never walked further): a
value nested 900 deep would exhaust Python's recursion limit, and fails closed."""


_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
"""A word of a key: an acronym, a (capitalised) lower-case word, or digits."""


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
    name, words = _normal(key), _words(key)
    return any(
        (rule := _normal(r)) and (name.endswith(rule) or _has_run(words, _words(r))) for r in rules
    )


def _words(key: str) -> list[str]:
    """``key``'s words, lower-cased: ``AWS_SECRET_ACCESS_KEY`` and ``awsSecretAccessKey``
    are ``aws secret access key``."""
    return [w.casefold() for w in _WORD.findall(key)]


def _has_run(words: list[str], run: list[str]) -> bool:
    """Whether ``run`` appears in ``words`` as consecutive words."""
    size = len(run)
    return size > 0 and any(words[i : i + size] == run for i in range(len(words) - size + 1))


def redact(value: Any, rules: Iterable[str], *, before: Any = _ABSENT) -> Any:
    """Return a copy of ``value`` with every secret in it replaced by the marker.

    The secrets are those the module docstring lists, and, in any other string, a secret
    of the same value repeated (``scrub``).

    Args:
        value: Arguments (a dict), or any JSON-like value; dicts and lists are walked to
            ``MAX_DEPTH``, other values returned as they are.
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
    return _masked(value, rules, before, _longest_first(secrets), 0)


def _masked(value: Any, rules: tuple[str, ...], before: Any, secrets: Secrets, depth: int) -> Any:
    if depth > MAX_DEPTH:
        return wording.REDACTED
    if isinstance(value, Mapping):
        masked = {}
        for key, item in value.items():
            was = before.get(key, _ABSENT) if isinstance(before, Mapping) else _ABSENT
            if _hides(value, key, rules):
                masked[key] = _marker(item, was, before)
            else:
                masked[key] = _masked(item, rules, was, secrets, depth + 1)
        return masked
    if isinstance(value, list):
        if _is_header(value, rules):
            return [value[0], _marker(value[1], _at(before, 1), before)]
        return [
            _masked(item, rules, _at(before, i), secrets, depth + 1) for i, item in enumerate(value)
        ]
    if isinstance(value, str):
        return _scrubbed(_masked_text(value, rules), secrets)
    return value


def _marker(item: Any, was: Any, before: Any) -> str:
    """What a secret is shown as: "changed" when an edit changed it (masking twice is a
    no-op)."""
    if is_marker(item):
        return str(item)
    changed = before is not _ABSENT and not same_value(was, item)
    return wording.REDACTED_CHANGED if changed else wording.REDACTED


def _masked_text(text: str, rules: tuple[str, ...]) -> str:
    """``text`` with its URL passwords and its ``KEY=value`` / ``Header: value`` secrets
    masked."""
    text = _URL_PASSWORD.sub(rf"\1{wording.REDACTED}\3", text)

    def assignment(match: re.Match[str]) -> str:
        if not is_redacted(match.group(1), rules) or is_marker(match.group(3)):
            return match.group(0)
        return f"{match.group(1)}{match.group(2)}{wording.REDACTED}"

    return _ASSIGNMENT.sub(assignment, text)


def without_secret_defaults(schema: dict[str, Any], rules: Iterable[str]) -> dict[str, Any]:
    """``schema`` (a call's arguments' JSON schema) with no default an edit form would
    show as a placeholder that holds a secret: a property whose name is redacted keeps
    no ``default`` anywhere in it (its ``anyOf`` branches, the ``$defs`` entry it refers
    to), and every other object or array default is masked as arguments are."""
    rules = tuple(rules)
    copied: dict[str, Any] = json.loads(json.dumps(schema))
    defs = copied.get("$defs")
    targets = defs if isinstance(defs, dict) else {}

    def strip(node: Any, depth: int = 0) -> None:
        if depth > MAX_DEPTH:
            return
        if isinstance(node, dict):
            node.pop("default", None)
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                strip(targets.get(ref.removeprefix("#/$defs/")), depth + 1)
            for value in node.values():
                strip(value, depth + 1)
        elif isinstance(node, list):
            for value in node:
                strip(value, depth + 1)

    def walk(node: Any, depth: int = 0) -> None:
        if depth > MAX_DEPTH:
            return
        if isinstance(node, dict):
            if isinstance(node.get("default"), dict | list):
                node["default"] = redact(node["default"], rules)
            properties = node.get("properties")
            if isinstance(properties, dict):
                for name, prop in properties.items():
                    if is_redacted(str(name), rules):
                        strip(prop)
            for value in node.values():
                walk(value, depth + 1)
        elif isinstance(node, list):
            for value in node:
                walk(value, depth + 1)

    walk(copied)
    return copied


def restore(submitted: Any, real: Any, rules: Iterable[str]) -> Any:
    """Put the real values back where an edit left what the form showed of them.

    Walks ``submitted`` (what the reviewer sent, read from a form rendered from
    ``redact(real)``) beside ``real``: a marker left under a redacted key (or in a pair)
    gets the real value at its place, whatever its type; any part the reviewer left
    exactly as shown (a scrubbed text, a whole object) gets the real part back; in a list
    whose items were removed, added or moved, an item left as shown gets the real item
    it was shown for, never the one at its position (so a secret stays with its own
    object). A marker with no real value at its place (the reviewer typed it) is kept as
    typed, and so is one whose container no longer hides it (a name/value pair or a
    header renamed to a name not redacted): a secret never follows an edit to a name
    that would show it.

    Args:
        submitted: The edited arguments, markers and all.
        real: The arguments the form was rendered from, unmasked.
        rules: The ``redact`` key names the form was masked with.

    Returns:
        The arguments to send to the tool.
    """
    rules = tuple(rules)
    return _restored(submitted, real, rules, _longest_first(secret_values(real, rules)), 0)


def _restored(
    submitted: Any, real: Any, rules: tuple[str, ...], secrets: Secrets, depth: int
) -> Any:
    if real is not _ABSENT and same_value(submitted, _masked(real, rules, _ABSENT, secrets, depth)):
        return real  # left as shown
    if depth > MAX_DEPTH:
        return submitted
    if isinstance(submitted, Mapping):
        merged = {}
        for key, item in submitted.items():
            was = real.get(key, _ABSENT) if isinstance(real, Mapping) else _ABSENT
            hidden = was is not _ABSENT and _hides(real, key, rules)
            if hidden and not _hides(submitted, key, rules):
                # the pair was renamed ({"name": "PUBLIC_MOTD", "value": marker}): its
                # secret does not follow it under a name that shows it; typed as sent
                merged[key] = _restored(item, _ABSENT, rules, secrets, depth + 1)
            elif is_marker(item) and hidden:
                merged[key] = was  # left redacted: kept
            else:
                merged[key] = _restored(item, was, rules, secrets, depth + 1)
        return merged
    if isinstance(submitted, list):
        real_header = isinstance(real, list) and _is_header(real, rules)
        if real_header and not _is_header(submitted, rules):
            # a [name, value] pair renamed to a name that shows its value: typed as sent
            return _restored_items(submitted, [], rules, secrets, depth)
        if real_header and is_marker(submitted[1]):
            return [submitted[0], real[1]]
        items = real if isinstance(real, list) else []
        return _restored_items(submitted, items, rules, secrets, depth)
    return submitted


def _restored_items(
    submitted: list[Any], real: list[Any], rules: tuple[str, ...], secrets: Secrets, depth: int
) -> list[Any]:
    """A list: each item left as shown gets the real item it was shown for (the one at
    its own place first). An item the reviewer changed takes the secrets of the real
    item at its place only if the list kept its shape (same length, every unchanged item
    at its own place); otherwise it is taken as typed, its markers kept, so a secret never
    moves to another object."""
    shown = [_masked(r, rules, _ABSENT, secrets, depth + 1) for r in real]
    unused = set(range(len(real)))
    matched: dict[int, int] = {}
    for i, item in enumerate(submitted):
        order = ([i] if i in unused else []) + sorted(unused - {i})
        j = next((j for j in order if same_value(shown[j], item)), None)
        if j is not None:
            unused.discard(j)
            matched[i] = j
    kept_shape = len(submitted) == len(real) and all(i == j for i, j in matched.items())
    return [
        real[matched[i]]
        if i in matched
        else _restored(item, real[i] if kept_shape else _ABSENT, rules, secrets, depth + 1)
        for i, item in enumerate(submitted)
    ]


SCRUB_MIN_CHARS = 4
"""Shortest secret value ``scrub`` replaces inside free text (a shorter one would
mangle ordinary words)."""
Secrets = re.Pattern[str] | None
"""Secret values as one pattern, longest first (a secret containing another is replaced
whole; one pass over a text however many secrets); ``None``: none."""


def secret_values(value: Any, rules: Iterable[str]) -> set[str]:
    """The secret strings in ``value`` (the module docstring's kinds), to ``MAX_DEPTH``,
    for ``scrub``."""
    return _secrets(value, tuple(rules), 0)


def _secrets(value: Any, rules: tuple[str, ...], depth: int) -> set[str]:
    found: set[str] = set()
    if depth > MAX_DEPTH:
        return found
    if isinstance(value, Mapping):
        for key, item in value.items():
            hidden = _hides(value, key, rules)
            found |= _strings(item, depth) if hidden else _secrets(item, rules, depth + 1)
    elif isinstance(value, list):
        if _is_header(value, rules):
            return _strings(value[1], depth)
        for item in value:
            found |= _secrets(item, rules, depth + 1)
    elif isinstance(value, str):
        found |= {m.group(2) for m in _URL_PASSWORD.finditer(value)}
        found |= {m.group(0) for shape in TOKEN_SHAPES for m in shape.finditer(value)}
        found |= {
            m.group(3).strip("\"'")
            for m in _ASSIGNMENT.finditer(value)
            if is_redacted(m.group(1), rules)
        }
    return found


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of each secret (of at least ``SCRUB_MIN_CHARS``)
    replaced by the marker: a tool's output, an error or the model's answer that
    repeats a redacted argument does not show it either."""
    return _scrubbed(text, _longest_first(secrets))


def _scrubbed(text: str, secrets: Secrets) -> str:
    return secrets.sub(wording.REDACTED, text) if secrets is not None else text


def _longest_first(secrets: Iterable[str]) -> Secrets:
    forms = {form for secret in secrets for form in written_forms(secret)}
    kept = sorted({s for s in forms if len(s) >= SCRUB_MIN_CHARS}, key=len, reverse=True)
    return re.compile("|".join(map(re.escape, kept))) if kept else None


def written_forms(secret: str) -> set[str]:
    """``secret`` as text may repeat it: as it is, and escaped inside a JSON string
    (``json.dumps`` of the arguments, ASCII-only or not) or a Python ``repr`` (a tool or
    an error echoing its arguments), where a quote, a backslash or a non-ASCII letter of
    it is written otherwise."""
    return {
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        repr(secret)[1:-1],
        ascii(secret)[1:-1],
    }


PAIR_NAME_KEYS = frozenset({"name", "key", "parameterkey"})
PAIR_VALUE_KEYS = frozenset({"value", "val", "parametervalue"})
"""A dict ``{"name": <redacted key>, "value": …}`` is a name/value pair (environment
variables, parameters): its value is a secret."""
_URL_PASSWORD = re.compile(
    r"(\b[a-z][a-z0-9+.-]{0,31}://[^\s:/@]{0,256}:)([^\s@/]{1,1024})(@)", re.IGNORECASE
)
"""The password in a URL's ``user:password@`` (bounded repeats: agent text can be long)."""
_ASSIGNMENT = re.compile(
    r"(?<![\w-])([A-Za-z_][\w.-]{0,63})(\s{0,4}[=:]\s{0,4})"
    r"((?:(?:Bearer|Basic|Token|Digest)\s+)?(?:\"[^\"]{0,1024}\"|'[^']{0,1024}'|[^\s'\"&;,]{1,1024}))",
    re.IGNORECASE,
)
"""``KEY=value``, ``key: value`` or ``Authorization: Bearer …`` inside a string; the
value is a secret when the key is redacted."""


def _hides(container: Any, key: Any, rules: tuple[str, ...]) -> bool:
    """Whether ``container[key]`` is a secret: a redacted key, or the value of a
    name/value pair naming one."""
    if is_redacted(str(key), rules):
        return True
    if not isinstance(container, Mapping) or _normal(str(key)) not in PAIR_VALUE_KEYS:
        return False
    names = [v for k, v in container.items() if _normal(str(k)) in PAIR_NAME_KEYS]
    return any(isinstance(n, str) and is_redacted(n, rules) for n in names)


def _is_header(value: list[Any], rules: tuple[str, ...]) -> bool:
    """Whether ``value`` is a ``[name, value]`` pair naming a redacted key."""
    return len(value) == 2 and isinstance(value[0], str) and is_redacted(value[0], rules)


def _strings(value: Any, depth: int = 0) -> set[str]:
    """Every string in ``value``, to ``MAX_DEPTH``, and every number as text repeats it
    (``48151623``, ``3.5``): a redacted one-time code is a secret too."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, int | float) and not isinstance(value, bool):
        return {json.dumps(value)}
    if depth > MAX_DEPTH:
        return set()
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, list):
        return set().union(*(_strings(item, depth + 1) for item in value))
    return set()


def is_marker(value: Any) -> bool:
    """Whether ``value`` is what a redacted value is shown as."""
    return isinstance(value, str) and value in MARKERS


def _at(value: Any, index: int) -> Any:
    """``value[index]`` of a list, else ``_ABSENT``."""
    return value[index] if isinstance(value, list) and index < len(value) else _ABSENT

"""JSON text that stays one line for every line reader and shows nothing a terminal
acts on: the JSON log lines (``agent_bridge.logs``) and the audit export's JSON Lines
(``agent_bridge.audit``) carry agent text.

``json.dumps`` with ``ensure_ascii=False`` escapes line feeds and C0 controls but
leaves U+2028, U+2029 and NEL, where ``str.splitlines`` (and JavaScript before ES2019)
breaks a line, C1 controls (U+009B is an 8-bit CSI) and bidirectional and invisible
characters as they are; each is written as the ``\\u`` escape that JSON reads back as
the same character (https://www.rfc-editor.org/rfc/rfc8259#section-7). They can only be
inside strings: JSON's own syntax is ASCII.
"""

from __future__ import annotations

import json
from typing import Any

INVISIBLE = (
    0x061C,
    0x200B,
    0x200C,
    0x200D,
    0x200E,
    0x200F,
    *range(0x202A, 0x202F),
    0x2060,
    *range(0xE0000, 0xE0080),
)
"""Zero-width characters, direction marks (the Arabic letter mark too), embeddings or
overrides, and the invisible tag characters."""
ISOLATES = tuple(range(0x2066, 0x206A))
"""Bidirectional isolates."""


def json_escape(code: int) -> str:
    """JSON's escape of the character ``code``: ``\\uXXXX``, or a surrogate pair's two
    beyond the Basic Multilingual Plane (RFC 8259, section 7)."""
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    high, low = divmod(code - 0x10000, 0x400)
    return f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}"


JSON_UNSAFE = {
    code: json_escape(code)
    for code in (*range(0x80, 0xA0), *INVISIBLE, *ISOLATES, 0xFEFF, 0x2028, 0x2029)
}
"""What ``json.dumps`` leaves as it is that a line reader breaks at or a terminal acts on."""


def json_line(value: Any, **options: Any) -> str:
    """``json.dumps(value, **options)`` with ``JSON_UNSAFE`` escaped.

    Raises:
        TypeError: As ``json.dumps`` does, for a value it cannot write.
    """
    return json.dumps(value, **options).translate(JSON_UNSAFE)

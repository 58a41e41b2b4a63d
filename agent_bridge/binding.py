"""Binding a decision to the exact call it was made on (pure).

A decision is stored with the hash of the call the reviewer saw: tool name, canonical
arguments, ``thread_id``, interrupt ID and tool call ID (``call_hash``). The worker
applies it only while the checkpoint's pending call still has that hash; a changed or
re-issued call needs a new decision. Approvals are counted per ``version_hash``: the
proposed call, or the call as a pending edit would run it, so an edit starts the count
again (docs/architecture.md, "Who decides").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

VERSION_CHARS = 16
"""Hex characters of a version hash carried in a button's value (64 bits)."""


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON: sorted keys, no spaces, non-ASCII kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def same_value(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are the same JSON value: Python's ``==`` takes ``True``
    for ``1`` and ``1.0`` for ``1``, which a tool (and its schema) tells apart, so an
    edit from one to the other is a change. Objects compare key by key, arrays item by
    item."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def call_hash(
    *,
    tool_name: str,
    args: Mapping[str, Any],
    thread_id: str,
    interrupt_id: str,
    tool_call_id: str | None,
    asked: Mapping[str, Any] | None = None,
) -> str:
    """Return the SHA-256 hex digest identifying one proposed call.

    Args:
        asked: What else the reviewer reads and answers, for an interrupt that is not
            ``HumanInTheLoopMiddleware``'s (``agent_bridge.interrupt_shapes``): its
            description (a plain question has no arguments), the schema of its answer
            and its decisions, all the graph's. ``None`` for a tool call, whose hash is
            as before (its description and decisions are the policy's).
    """
    parts: list[Any] = [tool_name, dict(args), thread_id, interrupt_id, tool_call_id or ""]
    if asked is not None:
        parts.append(dict(asked))
    return hashlib.sha256(canonical_json(parts).encode()).hexdigest()


def version_hash(call: str, edited_args: Mapping[str, Any] | None) -> str:
    """Return the short hash (``VERSION_CHARS``) of the call as it would run: ``call``
    (a ``call_hash``) unchanged, or with ``edited_args``."""
    subject = canonical_json([call, None if edited_args is None else dict(edited_args)])
    return hashlib.sha256(subject.encode()).hexdigest()[:VERSION_CHARS]

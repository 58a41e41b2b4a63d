"""The text of LangChain messages: what the model said, and why it made a call (pure).

A chat model's ``AIMessage`` carries its text (``content``: a string, or content blocks
of which the ``text`` ones are its words) next to its ``tool_calls``; that text is the
model's own stated reason for the calls of that turn
(https://python.langchain.com/docs/concepts/messages/#aimessage).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage

from agent_bridge import call_ids


def message_text(message: BaseMessage) -> str:
    """Return a message's text content (string content, or its text blocks joined)."""
    if isinstance(message.content, str):
        return message.content
    parts = [
        b if isinstance(b, str) else str(b.get("text", ""))
        for b in message.content
        if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text")
    ]
    return "\n".join(parts)


def call_message(messages: Sequence[BaseMessage], tool_call_id: str | None) -> AIMessage | None:
    """The ``AIMessage`` that made tool call ``tool_call_id`` (a run's call ID,
    ``agent_bridge.call_ids``); the last one when the ID is unknown (a batched action not
    matched to a call); ``None`` if there is none."""
    ai = [m for m in messages if isinstance(m, AIMessage)]
    made = next(
        (
            turn.message
            for turn in reversed(call_ids.turns(messages))
            if any(c["id"] == tool_call_id for c in turn.calls)
        ),
        None,
    )
    return made or (ai[-1] if ai else None)

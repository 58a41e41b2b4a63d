"""Tool call IDs unique within a run, whatever the model numbered (pure).

A chat model names each tool call it makes with an ID, and the call's result, a
``ToolMessage``, names its call by that ID (``tool_call_id``;
https://python.langchain.com/docs/concepts/tool_calling/). The IDs are meant to be
unique, but some OpenAI-compatible model servers number each turn's calls afresh
(``call_0``, ``call_1``…), so one ID can name calls of several turns. The product keys a
call's approval request, its messages in Slack and its outcome by its call's ID, so it
uses the **run's call ID**: the model's own ID the first time an ``AIMessage`` of the
state makes it; in a later ``AIMessage`` that makes it again, ``<id>#<message ID>`` (the
``AIMessage``'s own ``id``, which ``add_messages`` gives every message and keeps; ``<id>#<n>``,
the n-th, for a message without one). IDs unique as they should be are unchanged, and
so are the keys of runs recorded before.

A result belongs to the call of the latest ``AIMessage`` before it that made its ID
(a turn's results follow the message that asked for them).

Limits, both of a model reusing IDs: two calls with one ID in the same ``AIMessage``
cannot be told apart by their results (by LangGraph either): they share a run's call
ID. And a graph that removes messages from its state (``RemoveMessage``,
``SummarizationMiddleware``) leaves fewer earlier calls to tell a later one from: the
first ``AIMessage`` left that makes a reused ID takes the model's own ID, which an earlier
removed call had; if that call's result is not posted yet, it is taken for posted.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage


@dataclass(frozen=True)
class Turn:
    """An ``AIMessage`` and its tool calls, each a copy with ``"id"`` the run's call ID."""

    message: AIMessage
    calls: list[dict[str, Any]]


@dataclass(frozen=True)
class Result:
    """A tool result and the run's call ID of the call it answers (its own
    ``tool_call_id`` if no call before it made that ID; its message ID if it has none)."""

    message: ToolMessage
    call_id: str


def walk(messages: Sequence[BaseMessage]) -> Iterator[Turn | Result]:
    """The ``AIMessage``s with tool calls and the ``ToolMessage``s of ``messages``, in
    order, each with the run's call IDs (see the module docstring)."""
    names = _Names()
    latest: dict[str, str] = {}  # a model's ID -> the run's call ID of its latest call
    for message in messages:
        if isinstance(message, AIMessage) and message.tool_calls:
            this_turn: dict[str, str] = {}
            calls = []
            for call in message.tool_calls:
                model_id = call["id"]
                if model_id is not None and model_id not in this_turn:
                    this_turn[model_id] = names.new(model_id, message.id)
                    latest[model_id] = this_turn[model_id]
                run_id = this_turn.get(model_id) if model_id is not None else None
                calls.append(dict(call) | {"id": run_id})
            yield Turn(message, calls)
        elif isinstance(message, ToolMessage):
            model_id = message.tool_call_id
            if model_id in latest:
                yield Result(message, latest[model_id])
            else:
                yield Result(message, str(model_id if model_id is not None else message.id))


@dataclass
class _Names:
    """The run's call IDs given so far in one walk."""

    made: set[str] = field(default_factory=set)
    """The model's IDs some ``AIMessage`` made so far."""
    taken: set[str] = field(default_factory=set)
    """The run's call IDs given so far."""
    next_n: dict[str, int] = field(default_factory=dict)
    """A suffixed base -> the next ``#<n>`` to try (every one before it is taken), so a
    walk stays linear however many calls reuse one ID or a model's IDs imitate ours."""

    def new(self, model_id: str, message_id: str | None) -> str:
        """The run's call ID of a new call with ``model_id`` made by the ``AIMessage``
        ``message_id``: the ID itself the first time, else ``<id>#<message ID>``
        (``<id>#<n>`` without one), past any ID a model gave that already reads so."""
        base = f"{model_id}#{message_id}" if message_id else model_id
        first = model_id not in self.made
        run_id = model_id if first else (base if message_id else f"{model_id}#2")
        if run_id in self.taken:
            n = self.next_n.get(base, 3)
            while f"{base}#{n}" in self.taken:
                n += 1
            self.next_n[base] = n + 1
            run_id = f"{base}#{n}"
        self.made.add(model_id)
        self.taken.add(run_id)
        return run_id


def turns(messages: Sequence[BaseMessage]) -> list[Turn]:
    """Every ``AIMessage`` of ``messages`` with tool calls, with the run's call IDs."""
    return [t for t in walk(messages) if isinstance(t, Turn)]


def results(messages: Sequence[BaseMessage]) -> list[Result]:
    """Every ``ToolMessage`` of ``messages`` with the run's call ID of its call."""
    return [r for r in walk(messages) if isinstance(r, Result)]


def latest_call_id(messages: Sequence[BaseMessage], model_id: str | None) -> str | None:
    """The run's call ID of the latest call the model named ``model_id`` (the call an
    interrupt raised now is about); ``model_id`` itself if no call has it."""
    found = model_id
    for turn in turns(messages):
        for made, call in zip(turn.message.tool_calls, turn.calls, strict=True):
            if made["id"] == model_id and model_id is not None:
                found = call["id"]
    return found

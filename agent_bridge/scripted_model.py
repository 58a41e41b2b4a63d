"""An offline, deterministic chat model (``MODEL=scripted``) for the demo and the tests.

It plays the part of an LLM well enough to drive the human-in-the-loop flow for real:

- The task ``Archive old orders, then delete them`` proposes ``write_file``,
  ``execute_sql`` and ``read_data`` in one turn (the HITL documentation's scenario).
- The task ``Reset the totals of the test orders`` proposes an ``UPDATE`` without
  ``WHERE`` (what a DBA sees: README, "Who decides: the DBA walkthrough").
- A task that is a JSON object ``{"tool_calls": [{"name": ..., "args": {...}}, ...]}``
  proposes exactly those calls (saying ``"say"``'s text with them, its stated reason,
  if the object has one); with ``"then": [[call, ...], ...]`` each later turn
  proposes the next list of calls (an agent whose next turn calls another tool); with
  ``"ids": "per_turn"`` each turn numbers its calls ``call_0``, ``call_1``… afresh, as
  some OpenAI-compatible model servers do (the same ID in two turns); a call with its
  own ``"id"`` is given that one (an empty one, or one another call has too).
- Any other task is answered in text without tools.
- Once tool results are back it answers with a summary quoting each tool's result.

Tool call IDs are derived from the conversation, so a replay proposes the same IDs;
they are unique within it unless a JSON task asks for ``per_turn`` IDs or gives its own.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

DEMO_TASK = "Archive old orders, then delete them"
"""The demo's task; the scripted model knows what to do with it."""

DEMO_TOOL_CALLS: tuple[dict[str, Any], ...] = (
    {
        "name": "write_file",
        "args": {
            "path": "archive/old_orders.csv",
            "content": "id,customer,total,created_at\n"
            "1,Ada,120.00,2023-01-15\n2,Grace,75.50,2023-03-02\n",
        },
    },
    {
        "name": "execute_sql",
        "args": {"query": "DELETE FROM orders WHERE created_at < '2024-01-01'"},
    },
    {"name": "read_data", "args": {"table": "orders"}},
)
DEMO_REASON = (
    "Orders from before 2024 are no longer needed in the live table. I will first save "
    "them to archive/old_orders.csv, then delete them with one DELETE, and finally read "
    "the table back to check what is left."
)
"""What the scripted model says with the demo's calls: its stated reason."""
RESET_TASK = "Reset the totals of the test orders"
"""A task whose one call is an ``UPDATE`` without ``WHERE``."""
RESET_CALLS: tuple[dict[str, Any], ...] = (
    {"name": "execute_sql", "args": {"query": "UPDATE orders SET total = 0"}},
)
RESET_REASON = "The test orders' totals should all be 0, so I will set total to 0 in orders."
SCRIPTS: dict[str, tuple[tuple[dict[str, Any], ...], str]] = {
    DEMO_TASK: (DEMO_TOOL_CALLS, DEMO_REASON),
    RESET_TASK: (RESET_CALLS, RESET_REASON),
}
"""The tasks the script knows by heart: their calls and what the model says with them."""


class ScriptedChatModel(BaseChatModel):
    """A chat model whose turns are a pure function of the conversation.

    ``bind_tools`` is accepted (``create_agent`` calls it) and ignored: the script
    names tools itself, and the agent rejects calls to tools it does not have.
    """

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        """Return this model unchanged; the script decides which tools to call."""
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.next_turn(messages))])

    def next_turn(self, messages: Sequence[BaseMessage]) -> AIMessage:
        """Return the model's next message for ``messages``.

        Args:
            messages: The conversation so far, oldest first.

        Returns:
            An ``AIMessage`` with tool calls (first turn of a task that asks for
            tools) or a text answer (after tool results, or for a plain task).
        """
        task = next((m for m in messages if isinstance(m, HumanMessage)), None)
        results = [m for m in messages if isinstance(m, ToolMessage)]
        text = str(task.content) if task else ""
        turn = sum(1 for m in messages if isinstance(m, AIMessage) and m.tool_calls)
        later = later_turns(text)
        if results and not 0 < turn <= len(later):
            return AIMessage(content=summarise(results))
        calls = later[turn - 1] if results else planned_calls(text)
        if not calls:
            return AIMessage(content=no_calls_answer(text))
        digest = hashlib.sha256(text.encode()).hexdigest()[:10]
        prefix = (
            "call_" if per_turn_ids(text) else f"call_{digest}_" + (f"t{turn}_" if turn else "")
        )
        return AIMessage(
            content="" if results else planned_reason(text),
            tool_calls=[
                {
                    "name": c["name"],
                    "args": c["args"],
                    "id": c.get("id", f"{prefix}{i}"),
                    "type": "tool_call",
                }
                for i, c in enumerate(calls)
            ],
        )


def planned_calls(task: str) -> list[dict[str, Any]]:
    """Return the tool calls the script proposes for ``task`` (``[]`` for none).

    Args:
        task: The user's task text.

    Returns:
        A list of ``{"name": str, "args": dict}`` (and ``"id"``, if the task gives one).
    """
    if task.strip() in SCRIPTS:
        return [dict(c) for c in SCRIPTS[task.strip()][0]]
    try:
        parsed = json.loads(task)
    except ValueError:
        return []
    calls = parsed.get("tool_calls") if isinstance(parsed, dict) else None
    if not isinstance(calls, list):
        return []
    return [_call(c) for c in calls if isinstance(c, dict) and "name" in c]


def planned_reason(task: str) -> str:
    """The text the script says with its first calls for ``task``: a known task's reason,
    or a JSON task's ``"say"`` (``""`` for none)."""
    if task.strip() in SCRIPTS:
        return SCRIPTS[task.strip()][1]
    try:
        parsed = json.loads(task)
    except ValueError:
        return ""
    say = parsed.get("say") if isinstance(parsed, dict) else None
    return say if isinstance(say, str) else ""


def per_turn_ids(task: str) -> bool:
    """Whether a JSON task asks for tool call IDs numbered afresh each turn (``"ids":
    "per_turn"``)."""
    try:
        parsed = json.loads(task)
    except ValueError:
        return False
    return isinstance(parsed, dict) and parsed.get("ids") == "per_turn"


def later_turns(task: str) -> list[list[dict[str, Any]]]:
    """Return the calls of each turn after the first that a JSON task's ``then`` names.

    Args:
        task: The user's task text.

    Returns:
        One list of ``{"name": str, "args": dict}`` per later turn (``[]`` for none).
    """
    try:
        parsed = json.loads(task)
    except ValueError:
        return []
    turns = parsed.get("then") if isinstance(parsed, dict) else None
    if not isinstance(turns, list):
        return []
    return [
        [_call(c) for c in turn if isinstance(c, dict) and "name" in c]
        for turn in turns
        if isinstance(turn, list)
    ]


def _call(planned: dict[str, Any]) -> dict[str, Any]:
    """A JSON task's call as ``{"name", "args"}``, with its own ``"id"`` if it gives one."""
    call = {"name": str(planned["name"]), "args": dict(planned.get("args") or {})}
    if isinstance(planned.get("id"), str):
        call["id"] = planned["id"]
    return call


def no_calls_answer(task: str) -> str:
    """The scripted model's answer to a task it proposes no tool calls for."""
    if task.lstrip().startswith("{"):
        try:
            json.loads(task)
        except ValueError as exc:
            return f"Your task looks like JSON but does not parse ({exc}), so I called no tools."
        return (
            'I called no tools: a JSON task needs {"tool_calls": [{"name": ..., "args": {...}}]}.'
        )
    return (
        "I have nothing to do for that task without tools. Try "
        f'"{DEMO_TASK}" or a JSON task {{"tool_calls": [...]}}.'
    )


def summarise(results: Sequence[ToolMessage]) -> str:
    """Return a short summary quoting each tool result, in the order they came back."""
    lines = [f"- {m.name or 'tool'}: {m.content}" for m in results]
    return "Done. Here is what happened:\n" + "\n".join(lines)

"""Whether the running ``HumanInTheLoopMiddleware`` still asks about a call: its ``when``.

LangChain calls a gated tool's ``when`` predicate again when the run resumes (batched: in
``after_model``; per call: in ``wrap_tool_call``), and "if it returns ``False`` on resume,
the reviewer's answer is skipped and the tool runs, even if they rejected it"
(``langchain.agents.middleware.InterruptOnConfig.when``). A deploy that adds or changes a
tool's predicate while its call waits, or a predicate that does not give the same answer
twice, would so run a call a person rejected. The driver asks the predicate first, as the
middleware will (``interrupts.Placement.decisions_now``), and does not resume a call it
would let through.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

from langchain.agents.middleware.types import ToolCallRequest
from langchain_core.messages import BaseMessage, ToolCall
from langgraph.prebuilt.tool_node import ToolRuntime

from agent_bridge.errors import UndecidableCallError

WhenPredicate: TypeAlias = Callable[[ToolCallRequest], bool]
"""A gated tool's ``when``: ``True`` to ask a person about the call, ``False`` to run it."""


def asks_about(
    when: WhenPredicate, call: Mapping[str, Any], *, messages: Sequence[BaseMessage]
) -> bool:
    """Call ``when`` on ``call`` as ``HumanInTheLoopMiddleware`` calls it on resume.

    The middleware builds the ``ToolCallRequest`` from the node's state and ``Runtime``:
    ``tool=None`` (batched), the state, and a ``ToolRuntime`` with the run's ``context``
    and ``store``. The worker runs its graph with neither, so this request carries the
    same, with the state as far as the driver reads it: the ``messages`` of the graph that
    raised the interrupt. A predicate that reads only the request, as LangChain's
    examples and ``agent_bridge.predicates`` do, answers here as it will there.

    Args:
        when: The tool's predicate, from the running middleware's ``interrupt_on``.
        call: The tool call (``name``, ``args``, ``id``) the interrupt is about.
        messages: The raising graph's messages.

    Returns:
        Whether the middleware will ask about the call again, so that it takes the
        decision given for it.

    Raises:
        UndecidableCallError: The predicate raised: whether the middleware would take the
            decision is not known, so the call is not resumed (the exception's type is
            named; its text, which may repeat the call's arguments, is not).
    """
    tool_call = ToolCall(name=call["name"], args=dict(call["args"]), id=call.get("id"))
    state = {"messages": list(messages)}
    runtime = ToolRuntime(
        state=state,
        context=None,
        config={},
        stream_writer=lambda _chunk: None,
        tool_call_id=tool_call["id"],
        store=None,
    )
    request = ToolCallRequest(tool_call=tool_call, tool=None, state=state, runtime=runtime)
    try:
        return bool(when(request))
    except Exception as exc:
        raise UndecidableCallError(
            f"the call to {call['name']!r} waits for a review, but its `when` rule raised "
            f"{type(exc).__name__} when asked whether the agent still reviews it: "
            "LangChain's HumanInTheLoopMiddleware asks it again on resume and runs the "
            "call whatever was decided if it says no, so the run stops without running it. "
            "A `when` rule must read only the ToolCallRequest it is given"
        ) from None

"""Turning LangGraph interrupts into approval requests (pure functions of data).

Two interrupt values come from ``HumanInTheLoopMiddleware``:

- batched mode: a ``HITLRequest`` (``action_requests``, ``review_configs``); one request
  per action, ``index`` = its position;
- per-call mode: a ``ToolApprovalRequest`` (``type: "tool_approval"``); one request,
  ``index`` 0.

Any other interrupt value is not ours to render; ``approval_requests`` skips it and the
caller logs it.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langgraph.types import Interrupt

from agent_bridge.models import DECISION_TYPES, ApprovalRequest, DecisionType, Run
from agent_bridge.policy import Policy

REQUEST_ID_BYTES = 9
"""Request IDs are 12 URL-safe characters: short opaque button values."""


def new_request_id() -> str:
    """Return a fresh opaque request ID (12 characters)."""
    return secrets.token_urlsafe(REQUEST_ID_BYTES)


def is_hitl(interrupt: Interrupt) -> bool:
    """Whether ``interrupt`` was raised by ``HumanInTheLoopMiddleware`` (either mode)."""
    value = interrupt.value
    if not isinstance(value, Mapping):
        return False
    return value.get("type") == "tool_approval" or "action_requests" in value


def pending_tool_calls(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """Return the tool calls of the last ``AIMessage`` (the turn being reviewed)."""
    last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
    return [dict(call) for call in last.tool_calls] if last else []


def _match_tool_call_ids(
    actions: Sequence[Mapping[str, Any]], tool_calls: Sequence[Mapping[str, Any]]
) -> list[str | None]:
    """Pair each batched action with the tool call it was made from, in order."""
    ids: list[str | None] = []
    remaining = list(tool_calls)
    for action in actions:
        found = next(
            (c for c in remaining if c["name"] == action["name"] and c["args"] == action["args"]),
            None,
        )
        if found is not None:
            remaining.remove(found)
        ids.append(found.get("id") if found else None)
    return ids


def approval_requests(
    run: Run,
    interrupts: Sequence[Interrupt],
    *,
    messages: Sequence[BaseMessage],
    policy: Policy,
    args_schemas: Mapping[str, dict[str, Any]],
    channel_id: str,
    thread_ts: str | None,
    new_id: Callable[[], str] = new_request_id,
) -> list[ApprovalRequest]:
    """Return one approval request per gated tool call in ``interrupts``.

    Args:
        run: The run whose thread raised the interrupts.
        interrupts: ``StateSnapshot.interrupts`` (pending interrupts).
        messages: The thread's messages, to find batched calls' tool call IDs.
        policy: For per-call mode's allowed decisions.
        args_schemas: Tool name -> JSON schema of its arguments.
        channel_id: Where the approval messages go.
        thread_ts: Thread they go in (``None`` for top level).
        new_id: Request ID factory.

    Returns:
        Requests in interrupt order, then ``action_requests`` order.
    """
    requests: list[ApprovalRequest] = []

    def expiry(tool_name: str) -> dict[str, Any]:
        tool_policy = policy.gated(tool_name)
        if tool_policy is None or not tool_policy.review_timeout_s:
            return {}
        return {
            "review_timeout_s": tool_policy.review_timeout_s,
            "timeout_decision": tool_policy.timeout_decision(),
        }

    common: dict[str, Any] = {
        "run_id": run.run_id,
        "thread_id": run.thread_id,
        "channel_id": channel_id,
        "thread_ts": thread_ts,
    }
    for interrupt in interrupts:
        value = interrupt.value
        if not is_hitl(interrupt):
            continue
        if value.get("type") == "tool_approval":
            tool_policy = policy.gated(value["name"])
            allowed: list[DecisionType] = (
                list(tool_policy.allowed_decisions) if tool_policy else list(DECISION_TYPES)
            )
            requests.append(
                ApprovalRequest(
                    request_id=new_id(),
                    interrupt_id=interrupt.id,
                    index=0,
                    mode="per_call",
                    batch_size=1,
                    tool_call_id=value.get("tool_call_id"),
                    tool_name=value["name"],
                    args=dict(value.get("args") or {}),
                    description=str(value.get("description") or ""),
                    allowed_decisions=allowed,
                    args_schema=args_schemas.get(value["name"], {"type": "object"}),
                    **expiry(value["name"]),
                    **common,
                )
            )
            continue
        actions = list(value["action_requests"])
        configs = list(value.get("review_configs") or [])
        call_ids = _match_tool_call_ids(actions, pending_tool_calls(messages))
        for index, (action, call_id) in enumerate(zip(actions, call_ids, strict=True)):
            config = configs[index] if index < len(configs) else {}
            requests.append(
                ApprovalRequest(
                    request_id=new_id(),
                    interrupt_id=interrupt.id,
                    index=index,
                    mode="batched",
                    batch_size=len(actions),
                    tool_call_id=call_id,
                    tool_name=action["name"],
                    args=dict(action.get("args") or {}),
                    description=str(action.get("description") or ""),
                    allowed_decisions=list(config.get("allowed_decisions") or DECISION_TYPES),
                    args_schema=args_schemas.get(action["name"], {"type": "object"}),
                    **expiry(action["name"]),
                    **common,
                )
            )
    return requests

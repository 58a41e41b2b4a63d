"""Data shared by the LangGraph side and the Slack side.

They carry everything the web process needs to render a message, open a modal and
check a decision, so it never needs the agent's code.

Words follow docs/architecture.md: a *run* is one LangGraph thread (``thread_id``); an
*approval request* is one gated tool call waiting for a person, keyed by
``(interrupt_id, index)``; a *decision* is the LangChain ``HumanInTheLoopMiddleware``
decision dict.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

DecisionType = Literal["approve", "edit", "reject", "respond"]
"""The four decisions of ``langchain.agents.middleware.human_in_the_loop``."""

DECISION_TYPES: tuple[DecisionType, ...] = ("approve", "edit", "reject", "respond")

InterruptMode = Literal["batched", "per_call"]
"""``batched``: one interrupt per model turn (``HITLRequest``); ``per_call``: one per
gated tool call (``ToolApprovalRequest``)."""


class ApprovalState(StrEnum):
    """Life of an approval request; every transition is one atomic SQL statement."""

    PENDING = "pending"
    """Posted (or about to be); waiting for a reviewer."""
    DECIDED = "decided"
    """A reviewer's decision is recorded; the worker has not resumed with it yet."""
    APPLIED = "applied"
    """The ``thread_id`` was resumed with the decision (or the checkpoint shows it was)."""
    CANCELLED = "cancelled"
    """The run failed first: the call will never run, whatever was or is decided."""


class RunState(StrEnum):
    """Life of a run (one LangGraph ``thread_id``)."""

    QUEUED = "queued"
    """Requested (e.g. by ``/agent``); no worker has started it."""
    RUNNING = "running"
    """A worker holds the run's lease and is executing the graph."""
    WAITING = "waiting"
    """Paused on one or more interrupts; approval requests are posted."""
    DONE = "done"
    """The graph finished; the final answer is posted."""
    FAILED = "failed"
    """The graph raised; the error is posted in the run's Slack thread."""


class Decision(BaseModel):
    """A reviewer's answer to one approval request.

    ``as_langgraph()`` gives the exact dict ``HumanInTheLoopMiddleware`` expects:
    ``{"type": "approve"}``, ``{"type": "edit", "edited_action": {"name", "args"}}``,
    ``{"type": "reject", "message"?}`` or ``{"type": "respond", "message"}``.
    """

    model_config = ConfigDict(frozen=True)

    type: DecisionType
    edited_args: dict[str, Any] | None = None
    """For ``edit``: the reviewer's replacement arguments."""
    message: str | None = None
    """For ``reject`` (optional reason) and ``respond`` (the answer)."""

    def as_langgraph(self, tool_name: str) -> dict[str, Any]:
        """Return the middleware's decision dict for a call of ``tool_name``."""
        if self.type == "edit":
            return {
                "type": "edit",
                "edited_action": {"name": tool_name, "args": dict(self.edited_args or {})},
            }
        if self.type == "reject":
            return (
                {"type": "reject", "message": self.message} if self.message else {"type": "reject"}
            )
        if self.type == "respond":
            return {"type": "respond", "message": self.message or ""}
        return {"type": "approve"}


DEFAULT_AGENT = "default"
"""The agent a run goes to unless its channel is mapped to another (``CHANNEL_AGENTS``)."""


class Run(BaseModel):
    """One task given to the agent: one LangGraph thread (``thread_id``)."""

    run_id: str
    agent: str = DEFAULT_AGENT
    """Which agent runs it: only workers with that ``AGENT_NAME`` pick it up, so agents
    with different tools, policies and interrupt modes share one deployment."""
    thread_id: str
    task: str
    channel_id: str
    """Slack channel the run was started from; its first message there is the run's
    Slack thread (``thread_ts``)."""
    user_id: str
    """Slack user who started the run."""
    team_id: str | None = None
    thread_ts: str | None = None
    """``ts`` of the run's first message: tool results and the answer go in its Slack thread."""
    state: RunState = RunState.QUEUED
    final_answer: str | None = None
    error: str | None = None
    created_at: float = 0.0
    """Unix time, seconds."""


class ApprovalRequest(BaseModel):
    """One gated tool call waiting for a person.

    Key: ``(interrupt_id, index)``; ``index`` is the position in a batched
    ``HITLRequest.action_requests`` (0 in per-call mode). ``request_id`` is a short
    opaque reference used in button values and modal ``private_metadata``.
    """

    request_id: str
    run_id: str
    thread_id: str
    interrupt_id: str
    index: int = 0
    mode: InterruptMode = "batched"
    batch_size: int = 1
    """How many approval requests the interrupt has (1 in per-call mode)."""
    tool_call_id: str | None = None
    tool_name: str
    args: dict[str, Any] = Field(default_factory=dict)
    description: str = ""
    allowed_decisions: list[DecisionType]
    args_schema: dict[str, Any] = Field(default_factory=dict)
    """JSON schema of the tool's arguments (``tool.tool_call_schema``): the edit form
    and its checks are built from it, so the web process needs no agent code."""
    state: ApprovalState = ApprovalState.PENDING
    decision: Decision | None = None
    decided_by: str | None = None
    """Slack user ID of the reviewer whose decision was recorded."""
    decided_at: float | None = None
    """Unix time, seconds."""
    channel_id: str | None = None
    """Where the approval message is (``APPROVALS_CHANNEL`` or the run's channel)."""
    message_ts: str | None = None
    thread_ts: str | None = None
    """Thread the approval message was posted in, if any."""
    note: str | None = None
    """Why the request is pending again (the graph refused the recorded answer), or
    that it expired."""
    review_timeout_s: float | None = None
    """The tool's review time limit, seconds; counted from when the card is posted."""
    expires_at: float | None = None
    """When the policy's ``timeout_decision`` applies, Unix time in seconds (set when
    the card is first posted: no one can decide a card they never saw)."""
    timeout_decision: Decision | None = None
    reminded_at: float | None = None
    created_at: float = 0.0
    version: int = 1
    """Bumped by every change its card shows (decided, reopened, expired, cancelled)."""
    drawn_version: int = 1
    """The highest ``version`` its card is known to have been drawn at; a card whose
    ``drawn_version`` lags missed a redraw, and the worker's sweep redraws it."""


@dataclass(frozen=True)
class Recorded:
    """``ApprovalStore.record_decision`` recorded this decision: it won."""

    request: ApprovalRequest
    """The request as decided (``decision``, ``decided_by``, ``decided_at`` set)."""


@dataclass(frozen=True)
class AlreadyDecided:
    """Someone (or the policy, at expiry, or a failed run) decided first; nothing was
    recorded. ``request.decided_by`` / ``decision`` / ``decided_at`` say who, how, when."""

    request: ApprovalRequest


@dataclass(frozen=True)
class UnknownRequest:
    """No request has this ID (a forged or very old button); nothing was recorded."""

    request_id: str


Recording = Recorded | AlreadyDecided | UnknownRequest
"""What recording a decision came to."""

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

from agent_bridge.redaction import DEFAULT_REDACT, redact, scrub, secret_values
from agent_bridge.sql_risk import RiskLevel, SqlRisk, analyse

MiddlewareDecisionType = Literal["approve", "edit", "reject", "respond"]
"""The four decisions of ``langchain.agents.middleware.human_in_the_loop``: what a
policy's ``allowed_decisions`` and ``on_timeout`` may name."""

DecisionType = Literal["approve", "edit", "reject", "respond", "ignore"]
"""A reviewer's decision: the middleware's four, and ``ignore`` (Agent Inbox's: skip
the action; offered only by a ``HumanInterrupt`` whose config has ``allow_ignore``)."""

DECISION_TYPES: tuple[MiddlewareDecisionType, ...] = ("approve", "edit", "reject", "respond")
"""The middleware's four, in the order cards show their buttons."""

ALL_DECISION_TYPES: tuple[DecisionType, ...] = (*DECISION_TYPES, "ignore")
"""Every decision, in the order cards show their buttons."""

MiddlewareMode = Literal["batched", "per_call"]
"""``HumanInTheLoopMiddleware``'s two interrupt modes: what a policy's ``interrupt_mode``
may name."""

EditWithheld = Literal["no_call_id", "shared_call_id", "unknown_call", "ambiguous_call"]
"""Why a batched card offers no Edit though its tool's review allows it: LangChain's
``HumanInTheLoopMiddleware`` (batched) keeps the model's call in the message and puts a
reviewer's edit in its place when the call runs, found by the call's tool call ID. So an
edit of a call with an empty ID (``no_call_id``) is dropped, the model's own call
running instead, one of a call whose ID other calls of its turn have
(``shared_call_id``) runs in place of all of them, and for a call not in the state's
messages (``unknown_call``: a tool's own agent asked for it), or made twice in its turn
the other time with such an ID (``ambiguous_call``), which it would be cannot be told
(``agent_bridge.interrupts.TurnCall``)."""

InterruptMode = Literal["batched", "per_call", "human_interrupt", "json_schema", "plain_value"]
"""The shape of an interrupt's value, which says how it is answered
(docs/architecture.md, "Interrupts"): ``batched`` (a ``HITLRequest``, one per model
turn) and ``per_call`` (a ``ToolApprovalRequest``, one per gated call) are
``HumanInTheLoopMiddleware``'s; ``human_interrupt`` is Agent Inbox's ``HumanInterrupt``
(or a list of them); ``json_schema`` an interrupt that carries a JSON schema of its
answer; ``plain_value`` any other value, answered with text."""

HITL_MODES: frozenset[InterruptMode] = frozenset({"batched", "per_call"})
"""The modes of ``HumanInTheLoopMiddleware``'s interrupts: a tool call's requests, whose
argument schema is the tool's (any other mode's came with its interrupt)."""
WHOLE_INTERRUPT_MODES: frozenset[InterruptMode] = frozenset({"batched", "human_interrupt"})
"""Modes whose interrupt is answered once, all its requests together, in ``index``
order; the others are answered request by request as soon as each is decided."""


class ApprovalState(StrEnum):
    """Life of an approval request; every transition is one atomic SQL statement."""

    PENDING = "pending"
    """Posted (or about to be); waiting for a reviewer."""
    DECIDED = "decided"
    """A reviewer's decision is recorded; the worker has not resumed with it yet."""
    APPLIED = "applied"
    """The ``thread_id`` was resumed with the decision (or the checkpoint shows it was)."""
    CANCELLED = "cancelled"
    """Closed without being applied: its run failed, or its workspace left. Nobody can
    decide it any more; its ``note`` says whether the call may have run (an answer given
    to the graph before the failure) or will never run."""


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
        """Return the middleware's decision dict for a call of ``tool_name`` (``ignore``
        is not one: it is only ever allowed on a ``HumanInterrupt``, see
        ``agent_bridge.interrupt_shapes.human_response``)."""
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


class ReviewRules(BaseModel):
    """Who may decide an approval request, copied from its tool's policy when the
    request is made, so the web process checks a click without the policy file.

    Slack IDs: users ``U…``/``W…``, user groups ``S…``.
    """

    model_config = ConfigDict(frozen=True)

    approvers: tuple[str, ...] | None = None
    """Who may decide; ``None``: anyone in the workspace."""
    required_approvals: int = 1
    """Distinct people who must approve before the call runs."""
    requester_may_approve: bool = False
    """Whether the person who started the run may approve, edit or respond (reject is
    always allowed to them)."""
    escalate_to: tuple[str, ...] = ()
    """Backup users or groups, who may decide too once the request is escalated."""
    escalate_after_s: float | None = None
    """Seconds after the card's first post before it is escalated; ``None``: never."""
    edited_approvals: dict[RiskLevel, int] | None = None
    """For a SQL tool (policy ``sql``): the approvals an edited statement needs, by its
    risk level (``ToolPolicy.edited_approvals``), so an edit that turns a read into a
    ``DELETE`` needs what a ``DELETE`` needs; ``None``: ``required_approvals``."""


class StartRules(BaseModel):
    """Who may start runs of one agent (its policy's ``requesters``, user and group IDs;
    ``None``: anyone in the workspace) and how many each may have active at once."""

    requesters: tuple[str, ...] | None = None
    max_active_runs_per_user: int


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
    requester_name: str | None = None
    """The requester's name as Slack showed it when the run started (``users.info``),
    shown on cards as text: naming someone must not notify them."""
    thread_link: str | None = None
    """Permalink of the run's first message (``chat.getPermalink``), fetched when a card
    is first posted outside the run's Slack thread, so that card can link back."""
    drives_in_a_row: int = 0
    """Drives of the run in a row that did not go through, the one running included: each
    claim counts its drive before the graph runs, so a worker that dies or loses its
    lease mid-drive leaves it counted; a drive that goes through sets 0, and one that
    fails before a tool could have run unsaved (Slack, the Agent Server, a store
    statement, a checkpoint's read) takes its count back, if the database takes the
    release. At ``worker.CHECKPOINT_RETRIES`` the run fails."""

    @property
    def drives_before(self) -> int:
        """``drives_in_a_row`` without the running drive's (as its claim found it)."""
        return max(self.drives_in_a_row - 1, 0)


class CallResult(BaseModel):
    """How a reviewed call went once it ran, as its card shows it.

    Attributes:
        ok: Whether the tool returned (``False``: the ``ToolMessage`` has status error).
        text: The start of the tool's output (``RESULT_MAX_CHARS``); empty for a
            failure, whose text (an exception, server paths) is for the logs only.
        at: When the result was seen, Unix time in seconds.
    """

    ok: bool
    text: str = ""
    at: float = 0.0


RESULT_MAX_CHARS = 500
"""Characters of a tool's output kept for its card."""


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
    edit_withheld: EditWithheld | None = None
    """Why the card offers no Edit though the tool's review allows it; ``None``: nothing
    withheld."""
    review_timeout_s: float | None = None
    """The tool's review time limit, seconds; counted from when the card is posted."""
    expires_at: float | None = None
    """When the policy's ``timeout_decision`` applies, Unix time in seconds (set when
    the card is first posted: no one can decide a card they never saw)."""
    timeout_decision: Decision | None = None
    reminded_at: float | None = None
    created_at: float = 0.0
    requester_id: str | None = None
    """Slack user who started the run (four eyes: they may not approve it)."""
    team_id: str | None = None
    """The run's workspace."""
    rules: ReviewRules = Field(default_factory=ReviewRules)
    call_hash: str = ""
    """``binding.call_hash`` of the call as proposed: tool, arguments, ``thread_id``,
    interrupt and tool call IDs. A decision applies only while the checkpoint's pending
    call still has it."""
    version: str = ""
    """``binding.version_hash``: the call as it would run now (the proposed call, or a
    pending edit). Approvals count only for the version they were given on."""
    pending_edit: Decision | None = None
    """An edit waiting for more approvals (``required_approvals`` > 1)."""
    approved_by: list[str] = Field(default_factory=list)
    """Users who approved the current ``version``, in order."""
    revision: int = 0
    """Bumped by every change of the review state its card shows (an approval counted, an
    edit, decided, reopened, expired, escalated, cancelled): the compare-and-set of
    approvals, and the order of redraws."""
    drawn_revision: int = 0
    """The highest ``revision`` its card is known to have been drawn at; a card whose
    ``drawn_revision`` lags missed a redraw, and the worker's sweep redraws it."""
    escalates_at: float | None = None
    """When the request is escalated to ``rules.escalate_to``, Unix time in seconds."""
    escalated_at: float | None = None
    pointer_ts: str | None = None
    """``ts`` of the line in the run's Slack thread pointing to a card posted elsewhere."""
    card_link: str | None = None
    """The card's permalink (``chat.getPermalink``), shown in that line."""
    reason: str = ""
    """The model's own text in the message that made the call: its stated reason."""
    result: CallResult | None = None
    """The call's result once it ran (reviewed calls only)."""
    risk: SqlRisk | None = None
    """What the call's SQL would do (``agent_bridge.sql_risk``), for a tool whose policy
    has ``sql``: computed from the whole statement when the request is made, with the
    affected rows; ``rules.required_approvals`` already counts it."""
    redact: tuple[str, ...] = DEFAULT_REDACT
    """Argument keys whose values are never shown (``agent_bridge.redaction``), copied
    from the policy when the request is made; a request stored without them gets the
    defaults (fails closed)."""

    @property
    def may_run_once_sent(self) -> bool:
        """Whether what was decided may run once the graph is given it: a tool call of
        ``HumanInTheLoopMiddleware`` on ``approve`` or ``edit`` (``reject`` and
        ``respond`` keep it from running); any other interrupt on any answer, which its
        node acts on as it will. ``False`` while undecided."""
        if self.decision is None:
            return False
        return self.mode not in HITL_MODES or self.decision.type in ("approve", "edit")

    def redacted(self) -> ApprovalRequest:
        """This request as people may see it: every argument value the ``redact`` rules
        name is masked, in the proposed arguments, a pending edit's and a decided
        edit's (an edited secret reads "changed"), and scrubbed from the description (a
        ``callable`` description may quote the call), the model's reason and the call's
        result. Everything drawn or opened in Slack
        is drawn from this copy; the call itself keeps the real values."""

        def masked(decision: Decision | None) -> Decision | None:
            if decision is None or decision.edited_args is None:
                return decision
            shown = redact(decision.edited_args, self.redact, before=self.args)
            return decision.model_copy(update={"edited_args": shown})

        secrets = secret_values(self.args, self.redact)
        for decision in (self.pending_edit, self.decision):
            if decision is not None and decision.edited_args:
                secrets |= secret_values(decision.edited_args, self.redact)
        return self.model_copy(
            update={
                "args": redact(self.args, self.redact),
                "description": scrub(self.description, secrets),
                "reason": scrub(self.reason, secrets),
                "result": self.result.model_copy(update={"text": scrub(self.result.text, secrets)})
                if self.result
                else None,
                "pending_edit": masked(self.pending_edit),
                "decision": masked(self.decision),
            }
        )

    def posted_at(self, now: float) -> ApprovalRequest:
        """This request as its first post at ``now`` (Unix time, seconds) makes it: its
        review time limit and its escalation count from then, as ``SET_MESSAGE`` stores
        them; a request posted before keeps its own. The card's first drawing is drawn
        from this copy, so it already says when the limit ends."""
        escalate_after_s = self.rules.escalate_after_s
        return self.model_copy(
            update={
                "expires_at": self.expires_at
                if self.expires_at is not None or self.review_timeout_s is None
                else now + self.review_timeout_s,
                "escalates_at": self.escalates_at
                if self.escalates_at is not None or escalate_after_s is None
                else now + escalate_after_s,
            }
        )

    @property
    def current_args(self) -> dict[str, Any]:
        """The arguments the call would run with now: a pending edit's, else the proposed."""
        edit = self.pending_edit
        return dict(edit.edited_args or {}) if edit is not None else self.args

    def is_question(self) -> bool:
        """Whether it asks a person something: ``respond`` is the only decision its
        interrupt offers (a card with only Respond left once Edit was withheld,
        ``edit_withheld``, is a tool call's card still, not a question)."""
        return self.allowed_decisions == ["respond"] and self.edit_withheld is None

    def approvals_required(self, edit: Decision | None = None) -> int:
        """Distinct approvals the call needs as ``edit`` would make it (``None``: as it
        stands now, with its pending edit if any): ``rules.required_approvals``, or for an
        edited SQL statement what its own risk level needs (``rules.edited_approvals``,
        read again from the edited statement), whichever is more."""
        edit = edit or self.pending_edit
        by_level = self.rules.edited_approvals
        if edit is None or edit.type != "edit" or by_level is None or self.risk is None:
            return self.rules.required_approvals
        edited = (edit.edited_args or {}).get(self.risk.argument)
        level = analyse(edited, dialect=self.risk.dialect, argument=self.risk.argument).level
        return max(self.rules.required_approvals, by_level[level])

    @property
    def approvals_needed(self) -> int:
        """How many more distinct approvals the current version needs."""
        return max(self.approvals_required() - len(self.approved_by), 0)


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


@dataclass(frozen=True)
class Counted:
    """The approval counted, but the request needs more (quorum): it is still pending."""

    request: ApprovalRequest


@dataclass(frozen=True)
class AlreadyCounted:
    """This person already approved this version of the call; a click counts once."""

    request: ApprovalRequest


@dataclass(frozen=True)
class CallChanged:
    """The call changed (an edit) since the card the person acted on was drawn; nothing
    was recorded, and the card shows the new version."""

    request: ApprovalRequest


Recording = Recorded | Counted | AlreadyCounted | CallChanged | AlreadyDecided | UnknownRequest
"""What recording a decision came to."""

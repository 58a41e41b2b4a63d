"""Checking decisions and building the resume value (pure functions of data).

No invalid answer is ever sent to the graph (docs/architecture.md, invariant 4). A decision must be
one the tool's policy allows; an edit's arguments must fit the tool's argument schema;
a respond must say something. Batched answers go all together, in ``action_requests``
order, and only when every request of the interrupt is decided (the middleware's
warning: a mixed batch can run tools twice); per-call answers go one by one, keyed by
interrupt ID (``Command(resume={interrupt_id: decision})``). Interrupts of other shapes
(``agent_bridge.interrupt_shapes``) are answered in their own shape, keyed by interrupt
ID too: a list of Agent Inbox ``HumanResponse``s all together, a form's object or a
text one by one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from agent_bridge import wording
from agent_bridge.arguments import GENERAL_KEY, check_args, clip
from agent_bridge.interrupt_shapes import answer
from agent_bridge.models import (
    HITL_MODES,
    WHOLE_INTERRUPT_MODES,
    AlreadyCounted,
    AlreadyDecided,
    ApprovalRequest,
    ApprovalState,
    CallChanged,
    Decision,
    Recording,
)
from agent_bridge.redaction import scrub, secret_values

MESSAGE_MAX_CHARS = 3000
"""The longest answer or reject reason, characters: what the Respond and Reject modals'
``plain_text_input`` takes (Slack's ``max_length`` limit:
https://docs.slack.dev/reference/block-kit/block-elements/plain-text-input-element), held
here so an answer written anywhere else (a reply in the run's Slack thread) meets it too."""


def check_decision(request: ApprovalRequest, decision: Decision) -> dict[str, str]:
    """Return what is wrong with ``decision`` for ``request`` (``{}`` if it is fine).

    Returns:
        Argument name -> plain-words message for edit errors, scrubbed of the call's
        redacted values (proposed and edited); ``""`` -> message for errors not about one
        argument (decision not allowed, empty answer, an answer or reason over
        ``MESSAGE_MAX_CHARS``).
    """
    refused = refusal(request, decision.type)
    if refused:
        return {GENERAL_KEY: refused}
    if decision.type == "edit":
        if decision.edited_args is None:
            return {GENERAL_KEY: wording.EDIT_NEEDS_ARGS_PLAIN}
        errors = check_args(request.args_schema, decision.edited_args)
        if not errors:
            return errors
        # a schema's own message may quote the value (``not``, ``contains``): a modal's
        # field error or a reopened card's note must not show a redacted one, nor a part
        # of one, so it is masked before it is cut
        secrets = secret_values(request.args, request.redact)
        secrets |= secret_values(decision.edited_args, request.redact)
        return {name: clip(scrub(message, secrets)) for name, message in errors.items()}
    if decision.type == "respond" and not (decision.message or "").strip():
        return {GENERAL_KEY: wording.RESPOND_NEEDS_ANSWER_PLAIN}
    if len(decision.message or "") > MESSAGE_MAX_CHARS:
        what = "An answer" if decision.type == "respond" else "A reason"
        length = len(decision.message or "")
        return {GENERAL_KEY: wording.too_long_plain(what, length, MESSAGE_MAX_CHARS)}
    return {}


def refusal(request: ApprovalRequest, decision_type: str) -> str | None:
    """Why ``decision_type`` cannot be taken on ``request`` at all (its tool's
    ``allowed_decisions`` do not list it), or ``None``. Part of ``check_decision``; a
    modal opener asks it before showing the form."""
    if decision_type in request.allowed_decisions:
        return None
    return wording.not_allowed_plain(decision_type, request.tool_name, request.allowed_decisions)


class ResumePlan:
    """What to send to the graph for a run's decided requests.

    Attributes:
        resume: ``interrupt_id -> value`` for ``Command(resume=...)`` (empty: nothing to do).
        applying: Request IDs answered by ``resume``; mark them applied after it.
        already_applied: Request IDs whose interrupt is no longer pending in the
            checkpoint: their decision was applied before (the checkpoint is the truth).
        invalid: Request ID -> errors, for decisions that fail ``check_decision``.
    """

    def __init__(self) -> None:
        self.resume: dict[str, Any] = {}
        self.applying: list[str] = []
        self.already_applied: list[str] = []
        self.invalid: dict[str, dict[str, str]] = {}
        self.changed: dict[str, ApprovalRequest] = {}
        """Request ID -> the call as the checkpoint now has it, when that is not the call
        the decision was made on (``call_hash`` differs): it needs a new decision."""
        self.unoffered: dict[str, ApprovalRequest] = {}
        """Request ID -> the call as the checkpoint now has it, when its decision's type
        is not one the call offers now (a card drawn before ``edit_withheld`` offered
        Edit): it would not be this call's alone; a new decision."""


def uncountable(
    current: ApprovalRequest, *, version: str, user_id: str, edit: Decision | None = None
) -> Recording | None:
    """Why an approval (or an edit, ``edit``) of the call's ``version`` by ``user_id``
    cannot be counted on ``current``, or ``None`` if it can.

    Returns:
        ``AlreadyDecided`` (no longer pending), ``CallChanged`` (``version`` is not the
        call's now), ``AlreadyCounted`` (an approval by someone counted on this version:
        one person counts once), or ``None``.
    """
    if current.state != ApprovalState.PENDING:
        return AlreadyDecided(current)
    if current.version != version:
        return CallChanged(current)
    if edit is None and user_id in current.approved_by:
        return AlreadyCounted(current)
    return None


def plan_resume(
    requests: Sequence[ApprovalRequest],
    pending: Collection[str],
    *,
    current_schemas: Mapping[str, dict[str, Any]] | None = None,
    current_calls: Mapping[tuple[str, int], ApprovalRequest] | None = None,
) -> ResumePlan:
    """Decide which decided requests can be sent now.

    Args:
        requests: The run's approval requests (any state).
        pending: IDs of interrupts still pending in the ``thread_id``'s checkpoint.
        current_schemas: Tool name -> argument schema of the running code. An edit made
            against a schema a deploy has since changed is re-checked against this one.
        current_calls: ``(interrupt_id, index)`` -> the pending call as the checkpoint
            has it now (``agent_bridge.interrupts.approval_requests``). A decision is
            sent only while that call has the ``call_hash`` it was made on
            (``agent_bridge.binding``); otherwise it goes to ``changed``.

    Returns:
        A ``ResumePlan``.
    """
    plan = ResumePlan()
    by_interrupt: dict[str, list[ApprovalRequest]] = defaultdict(list)
    for request in requests:
        by_interrupt[request.interrupt_id].append(request)
    for interrupt_id, group in by_interrupt.items():
        decided = [r for r in group if r.state == ApprovalState.DECIDED]
        if not decided:
            continue
        if interrupt_id not in pending:
            plan.already_applied.extend(r.request_id for r in decided)
            continue
        first = group[0]
        if first.mode in WHOLE_INTERRUPT_MODES and len(decided) < len(group):
            continue  # a batch goes when complete; its decisions are checked then, once
        errors = {
            r.request_id: check_decision(_with_schema(r, current_schemas), r.decision)
            for r in decided
            if r.decision
        }
        bad = {k: v for k, v in errors.items() if v}
        if bad:
            plan.invalid.update(bad)
            continue
        changed = _changed_calls(decided, current_calls)
        if changed:
            plan.changed.update(changed)
            continue
        unoffered = _unoffered_decisions(decided, current_calls)
        if unoffered:
            plan.unoffered.update(unoffered)
            continue
        plan.resume[interrupt_id] = _answer(decided)
        plan.applying.extend(r.request_id for r in sorted(decided, key=lambda r: r.index))
    return plan


def _answer(decided: Sequence[ApprovalRequest]) -> Any:
    """The resume value of one interrupt from its decided requests (all of them, for a
    mode of ``WHOLE_INTERRUPT_MODES``; else its one request)."""
    ordered = sorted(decided, key=lambda r: r.index)
    first = ordered[0]
    if first.mode == "per_call":
        assert first.decision is not None
        return first.decision.as_langgraph(first.tool_name)
    if first.mode == "batched":
        return {"decisions": [r.decision.as_langgraph(r.tool_name) for r in ordered if r.decision]}
    return answer(ordered)


def _changed_calls(
    decided: Sequence[ApprovalRequest],
    current_calls: Mapping[tuple[str, int], ApprovalRequest] | None,
) -> dict[str, ApprovalRequest]:
    """The decided requests whose pending call is no longer the one decided on."""
    changed = {}
    for request in decided:
        now = (current_calls or {}).get((request.interrupt_id, request.index))
        if now is not None and request.call_hash and now.call_hash != request.call_hash:
            changed[request.request_id] = now
    return changed


def _unoffered_decisions(
    decided: Sequence[ApprovalRequest],
    current_calls: Mapping[tuple[str, int], ApprovalRequest] | None,
) -> dict[str, ApprovalRequest]:
    """The decided requests whose decision's type the pending call does not offer now
    (``HumanInTheLoopMiddleware`` raises on a decision its review does not allow)."""
    unoffered = {}
    for request in decided:
        now = (current_calls or {}).get((request.interrupt_id, request.index))
        decision = request.decision
        if now is not None and decision is not None:
            if decision.type not in now.allowed_decisions:
                unoffered[request.request_id] = now
    return unoffered


def _with_schema(
    request: ApprovalRequest, schemas: Mapping[str, dict[str, Any]] | None
) -> ApprovalRequest:
    """``request`` with its tool's current argument schema, if the code knows one (a
    tool call's only: another interrupt's schema came with it)."""
    if request.mode not in HITL_MODES:
        return request
    current = (schemas or {}).get(request.tool_name)
    if current is None or current == request.args_schema:
        return request
    return request.model_copy(update={"args_schema": current})

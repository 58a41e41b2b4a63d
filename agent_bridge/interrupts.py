"""Turning LangGraph interrupts into approval requests (pure functions of data).

Two interrupt values come from ``HumanInTheLoopMiddleware``:

- batched mode: a ``HITLRequest`` (``action_requests``, ``review_configs``); one request
  per action, ``index`` = its position;
- per-call mode: a ``ToolApprovalRequest`` (``type: "tool_approval"``); one request,
  ``index`` 0.

The decisions a card offers are the interrupt's own: a batched request's
``review_configs``, a per-call interrupt's ``response_schema`` (``schema_decisions``),
so they are those of the middleware that raised it (the policy's, or a compiled
graph's own).

Every other interrupt (Agent Inbox's ``HumanInterrupt``, one carrying a JSON schema, any
other value) becomes requests too, as ``agent_bridge.interrupt_shapes`` reads it: no
interrupt is left without a card.
"""

from __future__ import annotations

import logging
import secrets
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from langchain.agents.middleware.human_in_the_loop import Action
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.types import Interrupt
from pydantic import TypeAdapter, ValidationError

from agent_bridge import call_ids
from agent_bridge.binding import call_hash, canonical_json
from agent_bridge.errors import UndecidableCallError
from agent_bridge.interrupt_shapes import asks_of
from agent_bridge.message_text import call_message, message_text
from agent_bridge.models import (
    DECISION_TYPES,
    HITL_MODES,
    ApprovalRequest,
    DecisionType,
    EditWithheld,
    InterruptMode,
    ReviewRules,
    Run,
)
from agent_bridge.policy import Policy
from agent_bridge.redaction import scrub, secret_values
from agent_bridge.sql_risk import RowEstimate, SqlRisk, analyse
from agent_bridge.when_rules import RaisedIn, WhenRules

logger = logging.getLogger(__name__)

REQUEST_ID_BYTES = 9
"""Request IDs are 12 URL-safe characters: short opaque button values."""


def new_request_id() -> str:
    """Return a fresh opaque request ID (12 characters)."""
    return secrets.token_urlsafe(REQUEST_ID_BYTES)


_ACTIONS = TypeAdapter(list[Action])
_ACTION = TypeAdapter(Action)
"""What ``HumanInTheLoopMiddleware`` raises, as LangChain types it, the parts read: a
batched ``HITLRequest``'s ``action_requests`` (each an ``Action``: ``name``, ``args``;
its ``review_configs`` are read where given), a per-call ``ToolApprovalRequest``'s call."""


def is_hitl(interrupt: Interrupt) -> bool:
    """Whether ``interrupt`` was raised by ``HumanInTheLoopMiddleware`` (either mode): its
    value has the shape LangChain gives it, not only one of its keys (a node's own
    ``{"type": "tool_approval", ...}`` or ``action_requests`` of another shape is any
    other interrupt, asked as its value reads: ``interrupt_shapes``)."""
    value = interrupt.value
    if not isinstance(value, Mapping):
        return False
    if value.get("type") == "tool_approval":
        return _fits(_ACTION, value)
    return "action_requests" in value and _fits(_ACTIONS, value["action_requests"])


def _fits(shape: TypeAdapter[Any], value: Any) -> bool:
    try:
        shape.validate_python(value)
    except ValidationError:
        return False
    return True


def is_batched(interrupt: Interrupt) -> bool:
    """Whether ``interrupt`` is a batched ``HumanInTheLoopMiddleware`` one (a
    ``HITLRequest``, raised by its ``after_model`` hook)."""
    return is_hitl(interrupt) and interrupt.value.get("type") != "tool_approval"


def pending_tool_calls(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """Return the tool calls of the last ``AIMessage`` (the turn being reviewed), each
    ``"id"`` the run's call ID (``agent_bridge.call_ids``)."""
    turn = _reviewed_turn(messages)
    return turn.calls if turn is not None else []


def _reviewed_turn(messages: Sequence[BaseMessage]) -> call_ids.Turn | None:
    """The last ``AIMessage`` (the turn being reviewed) with the run's call IDs, if it
    made tool calls."""
    last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
    if last is None or not last.tool_calls:
        return None
    return call_ids.turns(messages)[-1]


@dataclass(frozen=True)
class TurnCall:
    """One tool call of the turn under review, as ``_batched_requests`` pairs it.

    Attributes:
        call_id: The run's call ID (``agent_bridge.call_ids``).
        model_id: The ID the model gave it (``None`` or empty if it gave none).
        shared: Whether another call of the same turn has ``model_id`` too.
        known: Whether it is a call of the state's messages (``UNKNOWN_CALL`` is not).
        ambiguous: Whether the turn has the same call (name and arguments) again, and
            that one would have its edit withheld: which of them the middleware gated
            cannot be told (``_match_calls``).
    """

    call_id: str | None
    model_id: str | None
    shared: bool
    known: bool = True
    ambiguous: bool = False

    def edit_withheld(self) -> EditWithheld | None:
        """Why a batched card must not offer Edit for this call, or ``None``.

        ``HumanInTheLoopMiddleware`` (batched, langchain 1.5) records a reviewer's edit
        under the call's tool call ID (not at all for an empty one) and, as each call of
        the turn runs, runs the edit recorded under that call's ID in its place
        (``wrap_tool_call``): the edit of a call with no ID is dropped, the model's own
        call running, and the edit of a call whose ID is shared runs in place of every
        call with that ID, an unreviewed one too. The per-call mode answers each call's
        own interrupt, and needs none of this."""
        if not self.known:
            return "unknown_call"
        if not self.model_id:
            return "no_call_id"
        if self.shared:
            return "shared_call_id"
        return "ambiguous_call" if self.ambiguous else None


UNKNOWN_CALL = TurnCall(call_id=None, model_id=None, shared=False, known=False)
"""An action no call of the turn matches (a sub-agent's, run inside a tool, whose
messages are not the state's): its ID cannot be told."""


def turn_calls(messages: Sequence[BaseMessage]) -> list[tuple[Mapping[str, Any], TurnCall]]:
    """The calls of the last ``AIMessage`` (the turn under review): each as the model
    made it, with its ``TurnCall``."""
    turn = _reviewed_turn(messages)
    if turn is None:
        return []
    counts = Counter(c["id"] for c in turn.message.tool_calls)
    return [
        (made, TurnCall(call["id"], made["id"], shared=counts[made["id"]] > 1))
        for made, call in zip(turn.message.tool_calls, turn.calls, strict=True)
    ]


def _match_calls(
    actions: Sequence[Mapping[str, Any]], calls: Sequence[tuple[Mapping[str, Any], TurnCall]]
) -> list[TurnCall]:
    """Pair each batched action with the tool call it was made from, in order (by name
    and arguments, compared as canonical JSON: a ``NaN`` argument equals itself);
    ``UNKNOWN_CALL`` for one no call matches, or whose arguments are not JSON. The same
    call made again in the turn (an ungated one too: a ``when`` rule may gate one of
    two) marks the match ``ambiguous`` if that one's edit would be withheld."""
    found: list[TurnCall] = []
    remaining = [(made["name"], _arguments_key(made["args"]), call) for made, call in calls]
    for action in actions:
        key = (action["name"], _arguments_key(action["args"]))
        same = [c for c in remaining if key[1] is not None and c[:2] == key]
        if not same:
            found.append(UNKNOWN_CALL)
            continue
        remaining.remove(same[0])
        call = same[0][2]
        if any(other[2].edit_withheld() for other in same[1:]):
            call = replace(call, ambiguous=True)
        found.append(call)
    return found


def _arguments_key(args: Any) -> str | None:
    """``args`` as canonical JSON, or ``None`` if they are not JSON (such a call matches
    no action, and its action none)."""
    try:
        return canonical_json(args)
    except (TypeError, ValueError, RecursionError):
        return None


@dataclass(frozen=True)
class Placement:
    """Where a run's approval cards go and what builds their requests.

    Attributes:
        run: The run whose LangGraph thread (``thread_id``) raised the interrupts.
        policy: For allowed decisions, review time limits, who decides, and channels.
        args_schemas: Tool name -> JSON schema of its arguments.
        approvals_channel: Where cards go when their tool names no ``channel``
            (``APPROVALS_CHANNEL``); ``None``: the run's own Slack thread.
        new_id: Request ID factory.
        gating_here: Whether ``policy`` is the gating of the middleware that takes the
            answers: a graph this worker runs (``False``: a deployed graph, whose gating
            is the Agent Server's, ``AGENT_URL``).
        drawn: The interrupt IDs whose requests are stored already (their cards drawn
            by this worker or an earlier one, perhaps before a deploy); an interrupt not
            among them was raised since, by the running middleware.
        when_rules: The running middleware's ``when`` predicates, asked before a resume
            (``decisions_now``).
    """

    run: Run
    policy: Policy
    args_schemas: Mapping[str, dict[str, Any]]
    approvals_channel: str | None = None
    new_id: Callable[[], str] = new_request_id
    gating_here: bool = True
    drawn: frozenset[str] = frozenset()
    when_rules: WhenRules = field(default_factory=WhenRules)

    def channel_of(self, tool_name: str) -> tuple[str, str | None]:
        """``(channel_id, thread_ts)`` of a tool's cards: its policy's ``channel``, else
        ``approvals_channel``, else the run's Slack thread. A card in the run's own
        channel goes in the run's thread; elsewhere it is top level."""
        tool_policy = self.policy.gated(tool_name)
        channel = (tool_policy.channel if tool_policy else None) or self.approvals_channel
        channel = channel or self.run.channel_id
        return channel, self.run.thread_ts if channel == self.run.channel_id else None

    def decisions_now(
        self,
        interrupt: Interrupt,
        tool_name: str,
        mode: InterruptMode,
        offered: Sequence[DecisionType],
        *,
        own_call: bool,
        call: Mapping[str, Any],
        raised: RaisedIn,
    ) -> list[DecisionType]:
        """The decisions the running ``HumanInTheLoopMiddleware`` accepts for a call to
        ``tool_name`` whose interrupt (``mode``: ``batched`` or ``per_call``) ``offered``
        them when it was raised.

        On resume the middleware runs its node again and checks each decision against
        its ``interrupt_on`` as it is now, not as the interrupt recorded it (LangChain's
        ``HumanInTheLoopMiddleware._process_decision``, batched; per call, the
        ``response_schema`` of the interrupt raised again, which LangGraph parses the
        answer against). The policy is that configuration (``Policy.middleware_kwargs``;
        a compiled graph's own, ``graph_policy``), so after a deploy that changed a tool's
        decisions its call offers what will be taken, and a decision made on a card drawn
        before is reopened, not sent (``decisions.plan_resume``). ``offered`` stands for an
        interrupt raised since its run's cards were last stored (not ``drawn``: the
        running middleware raised it, so it offers what it takes), for a deployed graph
        (``gating_here`` false: the Agent Server's gating), and for a call the agent's own
        turn did not make (``own_call`` false: a sub-agent's, run inside a tool, whose
        middleware the policy does not describe).

        The tool's ``when`` predicate, if the running middleware has one, is asked
        whether it still asks about ``call`` (the action: ``name``, ``args``, ``id``), as
        the middleware will on resume (``WhenRules.asks_about``, with ``raised``: where
        the interrupt was raised).

        Raises:
            UndecidableCallError: A deploy stopped gating the tool, or changed
                ``interrupt_mode``, or the tool's ``when`` now lets the call through: the
                middleware would run the call whatever was decided (a tool it
                does not gate; a per-call interrupt resumed by the batched middleware; a
                call its ``when`` lets through) or ask about it again (a batched one
                resumed per call). The call has not run: the run stops there. So
                does an Approve: the batched middleware gives a turn's decisions to the
                calls it gates now by position, and per call a later ``interrupt()`` of
                the tool's task takes the interrupt's ID, so the approval could reach a
                call no one saw.
        """
        if (
            not self.gating_here
            or not own_call
            or interrupt.id not in self.drawn
            or tool_name not in self.args_schemas
        ):
            return list(offered)
        tool_policy = self.policy.gated(tool_name)
        if tool_policy is None:
            raise UndecidableCallError(
                f"the call to {tool_name!r} waits for a review, but the agent no longer "
                f"gates {tool_name!r} (a deploy changed its policy since): LangChain's "
                "HumanInTheLoopMiddleware would run it whatever the reviewer decided, so "
                "the run stops without running it. Start the task again"
            )
        if mode != self.policy.interrupt_mode:
            raise UndecidableCallError(
                f"the call to {tool_name!r} waits for a {mode} review, but the agent now "
                f"reviews calls {self.policy.interrupt_mode} (a deploy changed "
                "interrupt_mode since): LangChain's HumanInTheLoopMiddleware would not take "
                "the decision made on it (it would run the call unreviewed, or ask about it "
                "again), so the run stops without running it. Start the task again"
            )
        if self.when_rules.asks_about(call, mode=mode, raised=raised) is False:
            raise UndecidableCallError(
                f"the call to {tool_name!r} waits for a review, but the `when` rule the agent "
                f"gates {tool_name!r} with now lets it through (a deploy changed the rule "
                "since): LangChain's HumanInTheLoopMiddleware asks it again on resume and "
                "would run the call whatever the reviewer decided, so the run stops without "
                "running it. Start the task again"
            )
        return [d for d in DECISION_TYPES if d in tool_policy.allowed_decisions]

    def request(
        self,
        interrupt: Interrupt,
        action: Mapping[str, Any],
        *,
        index: int,
        mode: InterruptMode,
        batch_size: int,
        tool_call_id: str | None,
        allowed: Sequence[DecisionType],
        reason: str = "",
        args_schema: dict[str, Any] | None = None,
        edit_withheld: EditWithheld | None = None,
    ) -> ApprovalRequest:
        """One approval request for ``action`` (``name``, ``args``, ``description``);
        ``reason`` is the model's text that came with the call; ``args_schema`` is the
        schema an edit must fit (``None``: the tool's, from ``args_schemas``);
        ``edit_withheld``: why ``allowed`` lacks an Edit the review allows."""
        name = str(action["name"])
        args = dict(action.get("args") or {})
        description = shown_description(str(action.get("description") or ""), name)
        args_schema = args_schema or self.args_schemas.get(name, {"type": "object"})
        asked = None
        if mode not in HITL_MODES:  # the graph's own words, schema and decisions
            asked = {"description": description, "schema": args_schema, "allowed": list(allowed)}
        channel_id, thread_ts = self.channel_of(name)
        tool_policy = self.policy.gated(name)
        risk = self.risk_of(name, args)
        return ApprovalRequest(
            request_id=self.new_id(),
            run_id=self.run.run_id,
            thread_id=self.run.thread_id,
            channel_id=channel_id,
            thread_ts=thread_ts,
            interrupt_id=interrupt.id,
            index=index,
            mode=mode,
            batch_size=batch_size,
            tool_call_id=tool_call_id,
            tool_name=name,
            args=args,
            description=description,
            allowed_decisions=list(allowed),
            args_schema=args_schema,
            requester_id=self.run.user_id,
            team_id=self.run.team_id,
            call_hash=call_hash(
                tool_name=name,
                args=args,
                thread_id=self.run.thread_id,
                interrupt_id=interrupt.id,
                tool_call_id=tool_call_id,
                asked=asked,
            ),
            rules=tool_policy.rules(risk) if tool_policy else ReviewRules(),
            redact=self.policy.redaction(name),
            reason=reason,
            risk=risk,
            edit_withheld=edit_withheld,
            **self._time_limit(name, allowed),
        )

    def risk_of(self, tool_name: str, args: Mapping[str, Any]) -> SqlRisk | None:
        """The SQL risk of a call, from the whole statement, for a tool whose policy has
        ``sql``; ``None`` for other tools. A missing argument is *unparseable*."""
        tool_policy = self.policy.gated(tool_name)
        sql = tool_policy.sql if tool_policy else None
        if sql is None:
            return None
        return analyse(args.get(sql.argument), dialect=sql.dialect, argument=sql.argument)

    def with_rows(self, request: ApprovalRequest, rows: RowEstimate) -> ApprovalRequest:
        """``request`` with its statement's affected rows, and the approvals they need
        (``ToolPolicy.approvals_for``)."""
        tool_policy = self.policy.gated(request.tool_name)
        if request.risk is None or tool_policy is None:
            return request
        risk = request.risk.model_copy(update={"rows": rows})
        return request.model_copy(update={"risk": risk, "rules": tool_policy.rules(risk)})

    def _time_limit(self, tool_name: str, allowed: Sequence[DecisionType]) -> dict[str, Any]:
        """The request's time limit: none when its policy has none, or when the policy's
        ``on_timeout`` is not among the decisions this interrupt offers (an
        ``interrupts:`` entry's ``respond`` for a form; logged), since that expiry could
        never be sent to the graph."""
        tool_policy = self.policy.gated(tool_name)
        if tool_policy is None or not tool_policy.review_timeout_s:
            return {}
        if tool_policy.on_timeout not in allowed:
            logger.warning(
                "%s: no time limit: on_timeout %r is not among its decisions %s",
                tool_name,
                tool_policy.on_timeout,
                list(allowed),
            )
            return {}
        return {
            "review_timeout_s": tool_policy.review_timeout_s,
            "timeout_decision": tool_policy.timeout_decision(),
        }


def approval_requests(
    interrupts: Sequence[Interrupt],
    *,
    messages: Sequence[BaseMessage],
    placement: Placement,
    raised: RaisedIn | None = None,
) -> list[ApprovalRequest]:
    """Return the approval requests of ``interrupts``: one per gated tool call of a
    ``HumanInTheLoopMiddleware`` interrupt, and those of every other interrupt
    (``agent_bridge.interrupt_shapes``).

    Args:
        interrupts: ``StateSnapshot.interrupts`` (pending interrupts, those of
            sub-graphs and parallel branches included).
        messages: The ``thread_id``'s messages, to find batched calls' tool call IDs.
        placement: The run, policy, schemas and where the cards go.
        raised: Where they were raised (their ``when`` rules are given it,
            ``Placement.decisions_now``); ``None``: a state of ``messages`` alone.

    Returns:
        Requests in interrupt order, then ``action_requests`` order.
    """
    node = RaisedIn(values={"messages": list(messages)}) if raised is None else raised
    requests: list[ApprovalRequest] = []
    for interrupt in interrupts:
        if not is_hitl(interrupt):
            requests.extend(_other_requests(interrupt, placement))
        elif interrupt.value.get("type") == "tool_approval":
            requests.append(_per_call_request(interrupt, messages, placement, node))
        else:
            requests.extend(_batched_requests(interrupt, messages, placement, node))
    return requests


def _other_requests(interrupt: Interrupt, placement: Placement) -> list[ApprovalRequest]:
    """The requests of an interrupt that is not the middleware's, ``index`` = position."""
    mode, asks = asks_of(interrupt)
    return [
        placement.request(
            interrupt,
            {"name": ask.name, "args": ask.args, "description": ask.description},
            index=index,
            mode=mode,
            batch_size=len(asks),
            tool_call_id=None,
            allowed=ask.allowed,
            args_schema=ask.args_schema,
        )
        for index, ask in enumerate(asks)
    ]


def _per_call_request(
    interrupt: Interrupt,
    messages: Sequence[BaseMessage],
    placement: Placement,
    raised: RaisedIn,
) -> ApprovalRequest:
    """The one request of a per-call ``ToolApprovalRequest`` (``raised``: where)."""
    value = interrupt.value
    tool_policy = placement.policy.gated(value["name"])
    allowed = placement.decisions_now(
        interrupt,
        value["name"],
        "per_call",
        schema_decisions(interrupt.response_schema)
        or (list(tool_policy.allowed_decisions) if tool_policy else list(DECISION_TYPES)),
        own_call=_made_in_turn(messages, value),
        call={"name": value["name"], "args": value["args"], "id": value.get("tool_call_id")},
        raised=raised,
    )
    call_id = call_ids.latest_call_id(messages, value.get("tool_call_id"))
    return placement.request(
        interrupt,
        value,
        index=0,
        mode="per_call",
        batch_size=1,
        tool_call_id=call_id,
        allowed=allowed,
        reason=_reason(messages, call_id, placement.policy),
    )


def shown_description(description: str, tool_name: str) -> str:
    """A call's description as its card shows it.

    ``HumanInTheLoopMiddleware`` describes a tool with no ``description`` of its own as
    ``"{description_prefix}\n\nTool: {name}\nArgs: {args}"``: the arguments as a Python
    repr, which the card shows already, readably and redacted. A compiled graph's
    middleware often leaves it so (the policy's never does: ``ToolPolicy.middleware_config``
    always gives one), so the card keeps the prefix alone.
    """
    prefix, default, _ = description.partition(f"\n\nTool: {tool_name}\nArgs: ")
    return prefix if default else description


def schema_decisions(response_schema: object) -> list[DecisionType]:
    """The decisions a per-call interrupt's ``response_schema`` accepts (``DECISION_TYPES`` order).

    ``HumanInTheLoopMiddleware`` publishes, per gated call, the JSON schema of the
    decisions its ``interrupt_on`` allows the tool: a ``oneOf`` with a ``discriminator``
    on ``type`` (its ``mapping`` keys are the decisions), or, for one decision, that
    decision's object (``properties.type.const``). So the card offers what the graph's
    own middleware will accept, whoever configured it.

    Returns:
        The decision types; ``[]`` when the schema names none (absent, or not the
        middleware's).
    """
    if not isinstance(response_schema, Mapping):
        return []
    discriminator = response_schema.get("discriminator")
    mapping = discriminator.get("mapping") if isinstance(discriminator, Mapping) else None
    if isinstance(mapping, Mapping):
        names = list(mapping)
    else:
        properties = response_schema.get("properties")
        kind = properties.get("type") if isinstance(properties, Mapping) else None
        names = [kind.get("const")] if isinstance(kind, Mapping) else []
    return [d for d in DECISION_TYPES if d in names] if names else []


def _batched_requests(
    interrupt: Interrupt,
    messages: Sequence[BaseMessage],
    placement: Placement,
    raised: RaisedIn,
) -> list[ApprovalRequest]:
    """One request per action of a batched ``HITLRequest``, ``index`` = its position;
    without Edit where the middleware would not confine an edit to the call
    (``TurnCall.edit_withheld``). ``raised``: where the interrupt was raised.

    Raises:
        UndecidableCallError: A call whose review allows only Edit, withheld; a call of
            the turn with no ID at all (``None``), which the middleware cannot answer; a
            call the running middleware would not take a decision for
            (``Placement.decisions_now``).
    """
    actions = list(interrupt.value["action_requests"])
    configs = list(interrupt.value.get("review_configs") or [])
    calls = turn_calls(messages)
    nameless = next((made["name"] for made, call in calls if call.model_id is None), None)
    if nameless is not None:
        raise UndecidableCallError(
            f"the model gave a call of this turn ({nameless!r}) no tool call ID (None): "
            "LangChain runs such a call's tool and then fails on its result, and fails on "
            "a rejection or a response of it; the run stops before any tool of the turn "
            "runs. Use a model that gives every call an ID"
        )
    matched = _match_calls(actions, calls)
    requests = []
    for index, (action, call) in enumerate(zip(actions, matched, strict=True)):
        allowed: Sequence[DecisionType] = placement.decisions_now(
            interrupt,
            action["name"],
            "batched",
            (configs[index] if index < len(configs) else {}).get("allowed_decisions")
            or DECISION_TYPES,
            own_call=call.known,
            call={"name": action["name"], "args": action["args"], "id": call.model_id},
            raised=raised,
        )
        why = call.edit_withheld() if "edit" in allowed else None
        if why is not None:
            allowed = [d for d in allowed if d != "edit"]
            if not allowed:
                raise UndecidableCallError(
                    f"the review of {action['name']!r} allows only Edit, and LangChain "
                    f"(batched) would not run an edit for this call alone ({why}: the model "
                    "gave it no tool call ID, or one another call of its turn has, or it is "
                    "not in the state's messages); allow approve or reject for it, or use "
                    "interrupt_mode: per_call"
                )
        requests.append(
            placement.request(
                interrupt,
                action,
                index=index,
                mode="batched",
                batch_size=len(actions),
                tool_call_id=call.call_id,
                allowed=allowed,
                reason=_reason(messages, call.call_id, placement.policy),
                edit_withheld=why,
            )
        )
    return requests


def _made_in_turn(messages: Sequence[BaseMessage], value: Mapping[str, Any]) -> bool:
    """Whether the turn under review made the call a per-call ``ToolApprovalRequest``
    (``value``) is about, with its tool call ID, name and arguments (canonical JSON): one
    of the agent's own middleware, not of a sub-agent run inside a tool, whose calls are
    not in the agent's messages (though the model may give them the same ID: an empty
    one, or one numbered per turn)."""
    turn = _reviewed_turn(messages)
    key = _arguments_key(value.get("args"))
    return (
        turn is not None
        and key is not None
        and any(
            made["id"] == value.get("tool_call_id")
            and made["name"] == value["name"]
            and _arguments_key(made["args"]) == key
            for made in turn.message.tool_calls
        )
    )


def _reason(messages: Sequence[BaseMessage], tool_call_id: str | None, policy: Policy) -> str:
    """The model's text with the call, scrubbed of every redacted value of its turn's
    calls: the text is shared by all of them, and each card masks only its own call's."""
    turn = call_message(messages, tool_call_id)
    if turn is None:
        return ""
    secrets: set[str] = set()
    for call in turn.tool_calls:
        secrets |= secret_values(call["args"], policy.redaction(call["name"]))
    return scrub(message_text(turn).strip(), secrets)

"""Interrupts not raised by ``HumanInTheLoopMiddleware``: their shapes and their answers.

Pure functions of data. Any interrupt a graph raises (``langgraph.types.interrupt``, in a
node, a sub-graph or a parallel branch) is one of (docs/architecture.md, "Interrupts"):

- ``human_interrupt``: Agent Inbox's ``HumanInterrupt`` (``langgraph.prebuilt.interrupt``:
  ``action_request`` {``action``, ``args``}, ``config`` {``allow_accept``,
  ``allow_edit``, ``allow_respond``, ``allow_ignore``}, ``description``), or a list of
  them. One approval request per ``HumanInterrupt``, with the decisions its config
  allows (accept → approve, edit, respond, ignore). Answered as Agent Inbox answers: a
  list of ``HumanResponse`` (``type`` ``accept``/``edit``/``response``/``ignore``,
  ``args``), one per ``HumanInterrupt`` in order, once all are decided.
- ``json_schema``: an interrupt that carries a JSON schema of an object answer:
  LangGraph's own ``interrupt(value, response_schema=...)`` (``Interrupt.response_schema``),
  or a dict value with a ``json_schema`` (or ``schema``) key. One request whose only
  decision is ``edit``: a form generated from the schema; answered with the submitted
  object. A ``response_schema`` of another answer (an array, a number) is the one field
  of a form (``ANSWER_FIELD``), answered with that field's value.
- ``plain_value``: anything else. One request whose only decision is ``respond``: the
  value is shown, the answer is the reviewer's text.

The policy names such a request by its action (``human_interrupt``), its ``name``
(a ``json_schema`` dict value's), else ``INTERRUPT_NAME``, under the policy's ``interrupts``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.types import Interrupt

from agent_bridge.answer_schemas import schema_problem
from agent_bridge.models import ApprovalRequest, DecisionType, InterruptMode

logger = logging.getLogger(__name__)

INTERRUPT_NAME = "interrupt"
"""The name of a request whose interrupt names no action: its card's heading and its
policy key (the policy's ``interrupts: {interrupt: ...}`` routes and guards those requests)."""
SCHEMA_KEYS = ("json_schema", "schema")
"""Keys of a dict interrupt value that hold the JSON schema of its answer."""
QUESTION_KEYS = ("question", "description")
"""Keys of a dict interrupt value whose text is shown as the question."""
PLAIN_VALUE_MAX_CHARS = 20_000
"""Characters of a plain value's JSON kept with its request (and so on its card's
full view); a longer value is cut there, saying so."""
CUT_MARK = "… (cut)"
ANSWER_FIELD = "answer"
"""The one field of the form of an answer that is not an object (``response_schema``
of an array, a number, a string...), which is what the interrupt is resumed with."""
WRAPPED = "x-agent-bridge-answer-field"
"""Marks a form's schema as ``ANSWER_FIELD`` wrapping the interrupt's own (``answer``
unwraps it)."""

_CONFIG_DECISIONS: tuple[tuple[str, DecisionType], ...] = (
    ("allow_accept", "approve"),
    ("allow_edit", "edit"),
    ("allow_respond", "respond"),
    ("allow_ignore", "ignore"),
)
"""Agent Inbox's ``HumanInterruptConfig`` flags and the decision each offers."""
_RESPONSE_TYPES: dict[str, str] = {
    "approve": "accept",
    "edit": "edit",
    "respond": "response",
    "ignore": "ignore",
}
"""Our decision -> Agent Inbox's ``HumanResponse.type``."""
_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
)


@dataclass(frozen=True)
class Ask:
    """One approval request an interrupt asks for, before it is placed
    (``agent_bridge.interrupts.Placement``).

    Attributes:
        name: The action's name: the card's heading and the policy key.
        args: What the card shows as arguments (an edit starts from them).
        description: Shown as prose above them.
        allowed: The decisions offered.
        args_schema: The JSON schema an edit (or a form's answer) must fit.
    """

    name: str
    args: dict[str, Any]
    description: str
    allowed: tuple[DecisionType, ...]
    args_schema: dict[str, Any]


def human_interrupts(value: Any) -> list[Mapping[str, Any]] | None:
    """The ``HumanInterrupt``s of an interrupt value (a dict or a non-empty list of
    them), or ``None`` when the value is not Agent Inbox's."""
    items = value if isinstance(value, list) else [value]
    if items and all(_is_human_interrupt(item) for item in items):
        return items
    return None


def answer_schema(interrupt: Interrupt) -> dict[str, Any] | None:
    """The JSON schema of an object answer the interrupt carries (``response_schema``,
    else a dict value's ``json_schema`` or ``schema``), or ``None``.

    A schema answers cannot be checked against (``answer_schemas.schema_problem``: the
    form could never be submitted) is none: the interrupt is a plain value, and the
    worker's log says why."""
    candidates: list[Any] = [_form_of(interrupt.response_schema)]
    if isinstance(interrupt.value, Mapping):
        candidates.extend(interrupt.value.get(key) for key in SCHEMA_KEYS)
    for schema in candidates:
        if isinstance(schema, Mapping) and _is_object_schema(schema):
            problem = schema_problem(dict(schema))
            if problem is None:
                return dict(schema)
            logger.warning("interrupt=%s its answer's schema is no form: %s", interrupt.id, problem)
    return None


def asks_of(interrupt: Interrupt) -> tuple[InterruptMode, list[Ask]]:
    """The mode of an interrupt that is not ``HumanInTheLoopMiddleware``'s, and the
    approval requests it asks for, in order (their ``index``)."""
    inbox = human_interrupts(interrupt.value)
    if inbox is not None:
        return "human_interrupt", [_human_ask(item) for item in inbox]
    schema = answer_schema(interrupt)
    value = interrupt.value
    if schema is not None:
        name = value.get("name") if isinstance(value, Mapping) else None
        ask = Ask(
            name=name if isinstance(name, str) and name else INTERRUPT_NAME,
            args={},
            description=_question(value),
            allowed=("edit",),
            args_schema=schema,
        )
        return "json_schema", [ask]
    return "plain_value", [_plain_ask(value)]


def answer(requests: Sequence[ApprovalRequest]) -> Any:
    """The resume value of one interrupt of a mode of this module, from its decided
    requests (``index`` order). The caller checked each decision (``check_decision``).

    Raises:
        ValueError: For a middleware mode (``agent_bridge.decisions`` answers those).
    """
    first = requests[0]
    if first.mode == "human_interrupt":
        return [human_response(r) for r in sorted(requests, key=lambda r: r.index)]
    decision = first.decision
    assert decision is not None
    if first.mode == "json_schema":
        submitted = dict(decision.edited_args or {})
        wrapped = (first.args_schema or {}).get(WRAPPED)
        return submitted.get(ANSWER_FIELD) if wrapped else submitted
    if first.mode == "plain_value":
        return decision.message or ""
    raise ValueError(f"{first.mode} interrupts are answered by the middleware's decisions")


def human_response(request: ApprovalRequest) -> dict[str, Any]:
    """Agent Inbox's ``HumanResponse`` for a decided ``human_interrupt`` request:
    ``{"type": "accept", "args": None}``, ``{"type": "edit", "args": {"action", "args"}}``,
    ``{"type": "response", "args": <text>}`` or ``{"type": "ignore", "args": None}``."""
    decision = request.decision
    assert decision is not None
    args: Any = None
    if decision.type == "edit":
        args = {"action": request.tool_name, "args": dict(decision.edited_args or {})}
    elif decision.type == "respond":
        args = decision.message or ""
    return {"type": _RESPONSE_TYPES[decision.type], "args": args}


def _is_human_interrupt(item: Any) -> bool:
    if not isinstance(item, Mapping):
        return False
    action, config = item.get("action_request"), item.get("config")
    return (
        isinstance(action, Mapping)
        and isinstance(action.get("action"), str)
        and isinstance(config, Mapping)
    )


def _human_ask(item: Mapping[str, Any]) -> Ask:
    """One ``HumanInterrupt``'s request. A config allowing nothing offers ignore, as
    Agent Inbox does, so no interrupt is left unanswerable."""
    action = item["action_request"]
    config = item["config"]
    allowed = tuple(d for flag, d in _CONFIG_DECISIONS if config.get(flag))
    args = _json_safe(action.get("args") or {})
    args = args if isinstance(args, dict) else {"args": args}
    return Ask(
        name=action["action"],
        args=args,
        description=str(item.get("description") or ""),
        allowed=allowed or ("ignore",),
        args_schema=_schema_of(args),
    )


def _plain_ask(value: Any) -> Ask:
    """A plain value's request: a text value is the question; a dict's ``question`` (or
    ``description``) is, and its other keys are shown as arguments; anything else is
    shown whole as ``value``."""
    args: dict[str, Any] = {}
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        args = {k: v for k, v in value.items() if k not in QUESTION_KEYS or not _text(v)}
    elif not isinstance(value, str):
        args = {"value": value}
    return Ask(
        name=INTERRUPT_NAME,
        args=_cut(_json_safe(args)),
        description=_question(value),
        allowed=("respond",),
        args_schema={"type": "object"},
    )


def _question(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return next((str(value[k]) for k in QUESTION_KEYS if _text(value.get(k))), "")
    return ""


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _form_of(response_schema: Any) -> Any:
    """``response_schema`` as a form's schema: an object's as it is; another (``list[str]``,
    which LangGraph converts to ``{"type": "array", ...}`` and checks the resume value
    against, or a dict LangGraph passes through unchecked: ``{"type": "integer"}``) as
    the one field ``ANSWER_FIELD`` of an object (its ``$defs`` at the root, where its
    references point), so the answer is typed and checked like any form's."""
    if not isinstance(response_schema, Mapping) or _is_object_schema(response_schema):
        return response_schema
    inner = {k: v for k, v in response_schema.items() if k not in ("$defs", "$schema")}
    form: dict[str, Any] = {
        "type": "object",
        "properties": {ANSWER_FIELD: inner},
        "required": [ANSWER_FIELD],
        WRAPPED: True,
    }
    if "$defs" in response_schema:
        form["$defs"] = response_schema["$defs"]
    return form


def _is_object_schema(schema: Mapping[str, Any]) -> bool:
    return schema.get("type") == "object" or isinstance(schema.get("properties"), Mapping)


def _schema_of(args: Mapping[str, Any]) -> dict[str, Any]:
    """A schema for editing a ``HumanInterrupt``'s args (it carries none): each argument
    keeps the JSON type of its proposed value, so a text stays text."""
    properties: dict[str, Any] = {}
    for name, value in args.items():
        kind = next((t for py, t in _JSON_TYPES if type(value) is py), None)
        properties[name] = {"type": kind} if kind else {}
    return {"type": "object", "properties": properties}


def _json_safe(value: Any) -> Any:
    """``value`` as JSON data (what is stored and shown); anything JSON cannot hold
    becomes its ``str``."""
    return json.loads(json.dumps(value, default=str))


def _cut(args: dict[str, Any]) -> dict[str, Any]:
    """``args`` whole, or, past ``PLAIN_VALUE_MAX_CHARS`` of JSON, its JSON text cut."""
    text = json.dumps(args, ensure_ascii=False)
    if len(text) <= PLAIN_VALUE_MAX_CHARS:
        return args
    return {"value": text[:PLAIN_VALUE_MAX_CHARS] + CUT_MARK}

"""The typed edit form: Slack input blocks for a tool's arguments, and back to arguments.

``render_inputs`` renders the fields ``bot.form_fields.build_form`` lays out from the
tool's JSON schema; ``parse_submission`` turns the modal's ``view.state.values`` back
into arguments. It does not check them: the submission listener checks the decision
once, with ``agent_bridge.decisions.check_decision``, and ``ParsedEdit.placed`` puts
those errors on the form's inputs, so nothing the tool would refuse is recorded
(docs/architecture.md, invariant 4). Pure: no I/O.

Untouched fields keep the proposed value exactly: when an input comes back with the text
it was rendered with (ignoring surrounding whitespace and ``\\r\\n`` line endings, which
Slack's inputs may normalise), the proposed value is used rather than a re-parse of its
text, so a float's digits, an object's key order or a file's trailing newline survive an
edit of another field. An input rendered empty (argument absent, ``null`` or ``""``) and
returned empty keeps the proposal as it was (absent stays absent). An input the reviewer
*cleared* becomes ``null`` if the schema allows it, else is left out if optional (the
tool's default applies), else gets "This field is required." (as Slack itself says of an
empty required input; a proposed ``""`` stays reachable by leaving the field untouched).
A value too long for any input (over 3,000 characters) is shown read-only and kept as
proposed; a reviewer who must change it rejects the call with a reason instead.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from agent_bridge import wording
from agent_bridge.arguments import GENERAL_KEY
from bot import ids
from bot.form_fields import (
    INPUT_MAX_CHARS,
    Form,
    FormField,
    build_form,
    is_text,
    option_value,
    parse_json,
    parse_number,
)
from bot.mrkdwn import (
    LINE_BREAK_MARK,
    code_block,
    inline_code,
    safe_prefix,
    text_object,
    visible,
)

MULTILINE_OVER_CHARS = 80
"""Strings longer than this (or with a line break) get a multiline input."""
LABEL_MAX_CHARS = 2000
HINT_MAX_CHARS = 2000
OPTION_LABEL_MAX_CHARS = 75
_PREVIEW_CHARS = 1000
_KEEP = object()
"""Parse outcome: use the proposed value (or its absence) unchanged."""
_OMIT = object()
"""Parse outcome: leave the argument out."""


def render_inputs(args_schema: dict[str, Any], args: dict[str, Any]) -> list[dict[str, Any]]:
    """Render the edit form's blocks for a call of a tool with ``args_schema``.

    Args:
        args_schema: JSON schema of the tool's arguments (``model_json_schema()``).
        args: the proposed arguments, used as initial values.

    Returns:
        At most 95 blocks: one ``input`` per argument (``block_id`` =
        ``ids.arg_block_id(name)``, action ``ids.ARG_ACTION``, label = the name, hint =
        its description, ``optional`` unless required), a read-only ``section`` under
        that block ID for a value too long to edit, or the single JSON input
        ``ids.ARGS_JSON_BLOCK`` when the schema has no ``properties``.
    """
    form = build_form(args_schema, args)
    if form.mode == "json":
        element = _text_element(form.json_text, multiline=True)
        label, hint = wording.ARGS_JSON_LABEL, wording.ARGS_JSON_HINT
        if wording.REDACTED in form.json_text:
            hint = f"{hint} {wording.REDACTED_JSON_HINT}"
        return [_input(ids.ARGS_JSON_BLOCK, label, element, False, hint)]
    if form.mode == "kept":
        return [_section(wording.args_kept_text(len(form.json_text), INPUT_MAX_CHARS))]
    if not form.fields:
        return [_section(wording.NO_ARGUMENTS_TO_EDIT)]
    return [_field_block(field) for field in form.fields]


@dataclass(frozen=True)
class ParsedEdit:
    """A submitted edit form, read but not yet checked against the tool's schema.

    Attributes:
        args: The arguments read (an unreadable input's argument left out), or ``None``
            when the form as a whole could not be read (then ``errors`` says why).
        errors: ``block_id`` -> plain-words message for inputs that could not be read.
        fallback: The block that shows errors about no input of its own (``""`` when
            the form has no input at all).
        editable: Names of the arguments that have an input.
    """

    args: dict[str, Any] | None
    errors: dict[str, str]
    fallback: str
    editable: frozenset[str] = frozenset()

    def placed(self, check_errors: dict[str, str]) -> dict[str, str]:
        """Return every error keyed by the block that shows it: the read errors, then
        ``check_decision``'s argument-keyed ones.

        A read error wins over a check error for the same input (the argument was left
        out because it could not be read, so the check would only say it is missing);
        errors about an argument without an input go to ``fallback``, prefixed with
        the argument's name.
        """
        errors = dict(self.errors)
        for name, message in check_errors.items():
            if name in self.editable:
                errors.setdefault(ids.arg_block_id(name), message)
            else:
                said = f"{name}: {message}" if name else message
                fallback = self.fallback
                errors[fallback] = f"{errors[fallback]} {said}" if fallback in errors else said
        return errors


def parse_submission(
    args_schema: dict[str, Any], args: dict[str, Any], state_values: dict[str, Any]
) -> ParsedEdit:
    """Read a submitted edit form back into arguments.

    Args:
        args_schema: the schema the form was rendered from.
        args: the proposed arguments the form was rendered with.
        state_values: ``view.state.values``: ``{block_id: {action_id: {"type": ...,
            "value": str | None}}}`` (``selected_option`` for selects and radio buttons).

    Returns:
        A ``ParsedEdit``. Errors about no input of their own go to the first input
        (``ids.ARGS_JSON_BLOCK`` in JSON mode). An input missing from ``state_values``
        keeps its proposed value.
    """
    form = build_form(args_schema, args)
    if form.mode == "kept":
        return ParsedEdit(dict(args), {}, GENERAL_KEY)
    if form.mode == "json":
        return _parse_json_mode(args, form, state_values)
    result: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for field in form.fields:
        block_id = ids.arg_block_id(field.name)
        action = state_values.get(block_id, {}).get(ids.ARG_ACTION)
        outcome, error = _KEEP, ""
        if field.kind != "kept" and action is not None:
            outcome, error = _parse_field(field, _submitted(action))
        if error:
            errors[block_id] = error
            continue
        if outcome is _KEEP:
            outcome = field.proposed if field.present else _OMIT
        if outcome is not _OMIT:
            result[field.name] = outcome
    editable = frozenset(f.name for f in form.fields if f.kind != "kept")
    first = next((ids.arg_block_id(f.name) for f in form.fields if f.name in editable), "")
    return ParsedEdit(result, errors, first, editable)


def _parse_field(field: FormField, raw: str | None) -> tuple[Any, str]:
    """Return ``(value | _KEEP | _OMIT, error message or "")`` for one submitted input."""
    text = (raw or "") if field.kind == "string" else (raw or "").strip()
    if not is_text(text):
        return _OMIT, wording.NOT_TEXT_PLAIN
    if not text:
        if field.initial is None:
            return _KEEP, ""
        if field.nullable:
            return None, ""
        if not field.required:
            return _OMIT, ""
        return _OMIT, wording.REQUIRED_PLAIN
    if field.initial is not None and _same_text(text, field.initial):
        return _KEEP, ""
    if field.kind == "string":
        return text, ""
    if field.kind == "integer":
        number = parse_number(text)
        if not isinstance(number, int):
            return _OMIT, wording.WHOLE_NUMBER_PLAIN
        return number, ""
    if field.kind == "number":
        number = parse_number(text)
        return (_OMIT, wording.NUMBER_PLAIN) if number is None else (number, "")
    try:
        return parse_json(text), ""
    except ValueError as error:
        if field.kind == "choice":
            return _OMIT, wording.CHOOSE_LISTED_PLAIN
        return _OMIT, wording.invalid_json_plain(str(error))


def _parse_json_mode(args: dict[str, Any], form: Form, state_values: dict[str, Any]) -> ParsedEdit:
    block = ids.ARGS_JSON_BLOCK
    action = state_values.get(block, {}).get(ids.ARG_ACTION)
    text = form.json_text if action is None else (_submitted(action) or "").strip()
    if not is_text(text):
        return ParsedEdit(None, {block: wording.NOT_TEXT_PLAIN}, block)
    if not text:
        return ParsedEdit(None, {block: wording.REQUIRED_PLAIN}, block)
    if _same_text(text, form.json_text):
        return ParsedEdit(dict(args), {}, block)
    try:
        new_args = parse_json(text)
    except ValueError as error:
        return ParsedEdit(None, {block: wording.invalid_json_plain(str(error))}, block)
    if not isinstance(new_args, dict):
        return ParsedEdit(None, {block: wording.NOT_JSON_OBJECT_PLAIN}, block)
    return ParsedEdit(new_args, {}, block)


def _submitted(action: dict[str, Any]) -> str | None:
    """The text of an input's state, or the value of its selected option."""
    if "selected_option" in action:
        option = action.get("selected_option")
        return option.get("value") if isinstance(option, dict) else None
    value = action.get("value")
    return value if isinstance(value, str) else None


def _same_text(submitted: str, rendered: str) -> bool:
    return submitted.replace("\r\n", "\n").strip() == rendered.replace("\r\n", "\n").strip()


def _field_block(field: FormField) -> dict[str, Any]:
    block_id = ids.arg_block_id(field.name)
    if field.kind == "kept":
        preview, _ = code_block(field.initial or "", _PREVIEW_CHARS)
        name = inline_code(field.name, 200)
        kept = wording.arg_kept_text(name, len(field.initial or ""), INPUT_MAX_CHARS)
        return _section(f"{kept}\n{preview}", block_id)
    if field.kind in ("integer", "number"):
        element: dict[str, Any] = {
            "type": "number_input",
            "action_id": ids.ARG_ACTION,
            "is_decimal_allowed": field.kind == "number",
        }
        if field.initial is not None:
            element["initial_value"] = field.initial
    elif field.kind == "choice":
        options = _distinct_labels([_option(choice) for choice in field.choices])
        element = {"type": "static_select", "action_id": ids.ARG_ACTION, "options": options}
        if field.initial is not None:
            element["initial_option"] = next(o for o in options if o["value"] == field.initial)
    else:
        multiline = field.kind == "json" or (
            field.initial is not None
            and (len(field.initial) > MULTILINE_OVER_CHARS or "\n" in field.initial)
        )
        element = _text_element(field.initial, multiline=multiline)
    if field.placeholder and field.kind != "choice":
        element["placeholder"] = _plain(field.placeholder)
    hint = field.hint
    if field.kind == "json":
        hint = wording.json_field_hint(hint)
    optional = not field.required or (field.present and field.initial is None)
    return _input(block_id, field.name or '""', element, optional, hint)


def _input(
    block_id: str, label: str, element: dict[str, Any], optional: bool, hint: str
) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "input",
        "block_id": block_id,
        "label": _plain(_clip(visible(label).replace("\n", LINE_BREAK_MARK), LABEL_MAX_CHARS)),
        "element": element,
        "optional": optional,
    }
    if hint:
        block["hint"] = _plain(_clip(visible(hint), HINT_MAX_CHARS))
    return block


def _text_element(initial: str | None, *, multiline: bool) -> dict[str, Any]:
    element: dict[str, Any] = {
        "type": "plain_text_input",
        "action_id": ids.ARG_ACTION,
        "multiline": multiline,
        "max_length": INPUT_MAX_CHARS,
    }
    if initial:
        element["initial_value"] = initial
    return element


def _option(choice: Any) -> dict[str, Any]:
    if choice is None:
        label = wording.NONE_OPTION
    elif isinstance(choice, str) and choice.strip():
        label = choice
    else:
        label = option_value(choice)
    label = _clip(visible(label), OPTION_LABEL_MAX_CHARS)
    return {"text": _plain(label), "value": option_value(choice)}


def _distinct_labels(options: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``options`` whose labels read alike (``"1"`` the text and ``1`` the number, two
    long values cut to the same start) labelled by their JSON value instead, its end
    kept when it must be cut: a reviewer picks by the label, and two alike would hide
    which value is sent."""
    counts = Counter(o["text"]["text"] for o in options)
    relabelled = []
    for option in options:
        if counts[option["text"]["text"]] > 1:
            value = visible(option["value"])
            if len(value) > OPTION_LABEL_MAX_CHARS:
                value = "…" + value[-(OPTION_LABEL_MAX_CHARS - 1) :]
            option = {**option, "text": _plain(value)}
        relabelled.append(option)
    return relabelled


def _section(text: str, block_id: str | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "section", "text": text_object(text)}
    if block_id:
        block["block_id"] = block_id
    return block


def _plain(text: str) -> dict[str, str]:
    return {"type": "plain_text", "text": text}


def _clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters between graphemes (``mrkdwn.safe_prefix``)."""
    return text if len(text) <= limit else safe_prefix(text, limit - 1) + "…"

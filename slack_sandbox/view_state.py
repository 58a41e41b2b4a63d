"""A modal's ``state.values`` as Slack builds them, and the checks its client makes.

Pure: a submission's values come from what the tester gives and what the modal shows;
Slack's client refuses to submit a view whose required inputs are empty, too long, or
not numbers, and the app is never told.
"""

from __future__ import annotations

import copy
from typing import Any

from slack_sandbox.errors import SandboxError
from slack_sandbox.validation import input_blocks


def state_values(view: dict[str, Any], given: dict[str, Any] | None) -> dict[str, Any]:
    """Return ``view.state.values`` for a submission, filling inputs not in ``given``.

    An input not in ``given`` keeps what the modal shows: the values of the last
    submission if the view stayed open (``response_action: errors``), else its initial
    value.

    Args:
        view: The stored view.
        given: ``block_id -> raw value``: a ``str`` for plain_text_input/number_input,
            the option ``value`` for static_select/radio_buttons, a list of option
            values for checkboxes; ``None`` or ``""`` for an empty input.

    Raises:
        SandboxError: A ``block_id`` is not an input block of the view, or a value is
            not one of its options.
    """
    inputs = input_blocks(view)
    given = dict(given or {})
    unknown = sorted(set(given) - set(inputs))
    if unknown:
        raise SandboxError(
            f"view {view['id']} has no input blocks {unknown}; it has {sorted(inputs)}"
        )
    shown = view.get("state", {}).get("values", {})
    values: dict[str, Any] = {}
    for block_id, block in inputs.items():
        element = block["element"]
        action_id = element["action_id"]
        if block_id in given:
            state = _state_value(element, given[block_id], block_id)
        elif action_id in shown.get(block_id, {}):
            state = copy.deepcopy(shown[block_id][action_id])
        else:
            state = _state_value(element, _initial(element), block_id)
        values[block_id] = {action_id: state}
    return values


def _initial(element: dict[str, Any]) -> Any:
    if element["type"] in ("plain_text_input", "number_input"):
        return element.get("initial_value")
    if element["type"] == "checkboxes":
        return [o["value"] for o in element.get("initial_options") or []]
    option = element.get("initial_option")
    return option["value"] if option else None


def _state_value(element: dict[str, Any], raw: Any, block_id: str) -> dict[str, Any]:
    kind = element["type"]
    if kind in ("plain_text_input", "number_input"):
        if raw is not None and not isinstance(raw, str | int | float):
            raise SandboxError(f"{block_id}: a {kind} value must be a string")
        return {"type": kind, "value": None if raw in (None, "") else str(raw)}
    options = {o["value"]: o for o in element.get("options") or []}
    if kind == "checkboxes":
        chosen = [raw] if isinstance(raw, str) else list(raw or [])
        missing = [v for v in chosen if v not in options]
        if missing:
            raise SandboxError(f"{block_id}: {missing} are not options ({sorted(options)})")
        return {"type": kind, "selected_options": [copy.deepcopy(options[v]) for v in chosen]}
    if raw in (None, ""):
        return {"type": kind, "selected_option": None}
    if not isinstance(raw, str) or raw not in options:
        raise SandboxError(f"{block_id}: {raw!r} is not an option ({sorted(options)})")
    return {"type": kind, "selected_option": copy.deepcopy(options[raw])}


def client_side_errors(view: dict[str, Any], values: dict[str, Any]) -> dict[str, str]:
    """Return the errors Slack's client shows without submitting, by ``block_id``.

    Slack checks required inputs, ``min_length``/``max_length`` and number inputs in the
    client; a view failing them is never sent to the app.
    """
    errors: dict[str, str] = {}
    for block_id, block in input_blocks(view).items():
        element = block["element"]
        state = values[block_id][element["action_id"]]
        value = state.get("value")
        empty = not (value or state.get("selected_option") or state.get("selected_options"))
        if empty:
            if not block.get("optional", False):
                errors[block_id] = "Please complete this required field."
            continue
        if element["type"] == "plain_text_input":
            if len(value) < element.get("min_length", 0):
                errors[block_id] = f"Use at least {element['min_length']} characters."
            elif len(value) > element.get("max_length", 3_000):
                errors[block_id] = f"Use at most {element.get('max_length', 3_000)} characters."
        elif element["type"] == "number_input":
            errors |= _number_error(block_id, element, value)
    return errors


def _number_error(block_id: str, element: dict[str, Any], value: str) -> dict[str, str]:
    try:
        number = float(value) if element.get("is_decimal_allowed") else int(value)
    except ValueError:
        kind = "a number" if element.get("is_decimal_allowed") else "a whole number"
        return {block_id: f"Enter {kind}."}
    low, high = element.get("min_value"), element.get("max_value")
    if low is not None and number < float(low):
        return {block_id: f"Enter a number of at least {low}."}
    if high is not None and number > float(high):
        return {block_id: f"Enter a number of at most {high}."}
    return {}

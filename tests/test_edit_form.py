"""The typed edit form: schema → Slack inputs → submitted state → arguments, exactly."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.tools import BaseTool, StructuredTool, tool
from pydantic import BaseModel, Field
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

from agent_bridge import arguments, wording
from agent_bridge.arguments import check_args, tool_args_schema
from agent_bridge.decisions import check_decision
from agent_bridge.models import ApprovalRequest, Decision
from bot import ids
from bot.edit_form import parse_submission, render_inputs
from bot.modals import render_edit_modal

EVIL = "<!channel> <@U123> & <https://evil|innocent>"

# --- strategies: argument schemas with values that satisfy them -----------------------

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12)

Kinded = tuple[dict[str, Any], st.SearchStrategy[Any]]


def primitive() -> st.SearchStrategy[Kinded]:
    enum = st.lists(SCALARS, min_size=1, max_size=6, unique_by=json.dumps).map(
        lambda values: ({"enum": values}, st.sampled_from(values))
    )
    return st.one_of(
        st.just(({"type": "string"}, st.text(max_size=150))),
        st.just(({"type": "string", "format": "x"}, st.text(min_size=2990, max_size=3010))),
        st.just(({"type": "integer"}, st.integers(min_value=-(10**30), max_value=10**30))),
        st.just(
            (
                {"type": "number"},
                st.floats(allow_nan=False, allow_infinity=False)
                | st.integers(min_value=-1000, max_value=1000),
            )
        ),
        st.just(({"type": "boolean"}, st.booleans())),
        enum,
        SCALARS.map(lambda value: ({"const": value}, st.just(value))),
    )


@st.composite
def nested(draw: st.DrawFn) -> Kinded:
    choice = draw(st.sampled_from(["object", "array", "any"]))
    if choice == "any":
        return {}, JSON_VALUES
    if choice == "array":
        item_schema, item_values = draw(primitive())
        return {"type": "array", "items": item_schema}, st.lists(item_values, max_size=4)
    fields = draw(st.dictionaries(NAMES, primitive(), min_size=1, max_size=3))
    schema = {
        "type": "object",
        "properties": {name: s for name, (s, _) in fields.items()},
        "required": list(fields),
    }
    return schema, st.fixed_dictionaries({name: v for name, (_, v) in fields.items()})


@st.composite
def schemas_and_args(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    fields = draw(st.dictionaries(NAMES, primitive() | nested(), min_size=1, max_size=6))
    properties: dict[str, Any] = {}
    defs: dict[str, Any] = {}
    required: list[str] = []
    args: dict[str, Any] = {}
    for name, (schema, values) in fields.items():
        schema = {**schema, "title": name.title()}
        if draw(st.booleans()):
            schema["description"] = draw(st.sampled_from([f"The {name}.", EVIL, "é" * 300]))
        if draw(st.integers(0, 3)) == 0:  # as pydantic does for models and enums
            defs[name.title()] = schema
            schema = {"$ref": f"#/$defs/{name.title()}"}
        if draw(st.booleans()):  # Optional[X] = None
            schema = {"anyOf": [schema, {"type": "null"}], "default": None}
            values = values | st.none()
        properties[name] = schema
        if draw(st.booleans()):
            required.append(name)
            args[name] = draw(values)
        elif draw(st.booleans()):
            args[name] = draw(values)
    root: dict[str, Any] = {"type": "object", "properties": properties, "required": required}
    if defs:
        root["$defs"] = defs
    return root, args


# --- helpers -----------------------------------------------------------------------------


def simulate(blocks: list[dict[str, Any]], *, retype: bool = False) -> dict[str, Any]:
    """Slack's ``view.state.values`` for a form submitted as rendered.

    ``retype``: write each JSON and number input the way a person might retype the same
    value (other spacing, a ``+`` sign), so the values are parsed rather than kept.
    """
    state: dict[str, Any] = {}
    for block in blocks:
        if block["type"] != "input":
            continue
        element = block["element"]
        if element["type"] == "static_select":
            value = {"type": "static_select", "selected_option": element.get("initial_option")}
        else:
            text = element.get("initial_value")
            if retype and text and element["type"] == "number_input" and text[0] != "-":
                text = "+" + text
            elif retype and text and element.get("multiline") and _is_json(text):
                text = json.dumps(json.loads(text), indent=4, ensure_ascii=False) + "\n "
            value = {"type": element["type"], "value": text}
        state[block["block_id"]] = {element["action_id"]: value}
    return state


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def typed(value: Any) -> Any:
    """``value`` with every scalar tagged by its type, so 1, 1.0 and True differ."""
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    return (type(value).__name__, value)


def assert_valid_modal(schema: dict[str, Any], args: dict[str, Any]) -> None:
    view = render_edit_modal(
        ApprovalRequest(
            request_id="req-1",
            run_id="r",
            thread_id="t",
            interrupt_id="i",
            tool_name="tool",
            args=args,
            args_schema=schema,
            allowed_decisions=["edit"],
        ),
        view_key="view-key-1",
    )
    View(**view).validate_json()
    assert len(view["blocks"]) <= 100
    for block in view["blocks"]:
        parsed = Block.parse(block)
        assert parsed is not None
        parsed.validate_json()
        assert parsed.to_dict() == block
        if block["type"] == "input":
            element = block["element"]
            assert len(element.get("initial_value", "")) <= 3000
            for option in element.get("options", []):
                assert len(option["value"]) <= 150 and len(option["text"]["text"]) <= 75
        else:
            assert len(block["text"]["text"]) <= 3000


def submit_edit(
    schema: dict[str, Any], args: dict[str, Any], values: dict[str, Any]
) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """What the edit submission listener makes of a form: read it, check the decision
    once with ``check_decision``, place the errors; ``(args, {})`` or ``(None, errors)``."""
    parsed = parse_submission(schema, args, values)
    if parsed.args is None:
        return None, parsed.errors
    request = ApprovalRequest(
        request_id="r1",
        run_id="run-1",
        thread_id="t1",
        interrupt_id="i1",
        tool_name="tool",
        args=args,
        allowed_decisions=["edit"],
        args_schema=schema,
    )
    errors = parsed.placed(check_decision(request, Decision(type="edit", edited_args=parsed.args)))
    return (None, errors) if errors else (parsed.args, {})


def state_of(**values: Any) -> dict[str, Any]:
    """State values from ``name=raw``: str → text input, dict → selected option."""
    state = {}
    for name, raw in values.items():
        if isinstance(raw, dict):
            value = {"type": "static_select", "selected_option": raw}
        else:
            value = {"type": "plain_text_input", "value": raw}
        state[ids.arg_block_id(name)] = {ids.ARG_ACTION: value}
    return state


# --- properties ----------------------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=schemas_and_args())
def test_an_untouched_form_round_trips_exactly(
    case: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    schema, args = case
    assert check_args(schema, args) == {}
    blocks = render_inputs(schema, args)
    new_args, errors = submit_edit(schema, args, simulate(blocks))
    assert errors == {}
    assert typed(new_args) == typed(args)
    assert_valid_modal(schema, args)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=schemas_and_args())
def test_retyped_values_parse_back_to_the_same_arguments(
    case: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    schema, args = case
    blocks = render_inputs(schema, args)
    new_args, errors = submit_edit(schema, args, simulate(blocks, retype=True))
    assert errors == {}
    assert json.dumps(typed(new_args), sort_keys=True) == json.dumps(typed(args), sort_keys=True)


def test_a_number_too_large_or_a_lone_surrogate_is_a_field_error() -> None:
    """``1e999`` reads as infinity in Python, which pydantic stores as ``null``; a lone
    surrogate (``"\\ud800"`` in JSON, or sent raw) cannot be stored or drawn: each is an
    error on its own field, and nothing is recorded."""
    schema = {
        "type": "object",
        "properties": {
            "limits": {"type": "array", "items": {"type": "number"}},
            "tags": {"type": "array", "items": {"type": "string"}},
            "note": {"type": "string"},
        },
        "required": ["limits", "tags", "note"],
    }
    args = {"limits": [1.5], "tags": ["a"], "note": "n"}
    new_args, errors = submit_edit(
        schema, args, state_of(limits="[1e999]", tags='["\\ud800"]', note="x\udc00y")
    )
    assert new_args is None
    assert set(errors) == {ids.arg_block_id(n) for n in ("limits", "tags", "note")}, errors
    assert "too large" in errors[ids.arg_block_id("limits")]
    assert "surrogate" in errors[ids.arg_block_id("tags")]
    assert errors[ids.arg_block_id("note")] == wording.NOT_TEXT_PLAIN
    fine, no_errors = submit_edit(schema, args, state_of(limits="[1e300, 2]"))
    assert no_errors == {} and fine == {**args, "limits": [1e300, 2]}


def test_hints_options_and_placeholders_show_invisible_characters() -> None:
    """An agent's schema (a compiled graph's ``json_schema`` interrupt) writes the form's
    hints, choices and placeholders: a right-to-left override, zero-width or isolate
    character in them is shown as its marker, as in labels; the option's value, which
    the submission is read by, stays the agent's own."""
    rtl, zwsp, isolate = "\u202e", "\u200b", "\u2066"
    schema = {
        "type": "object",
        "properties": {
            "action": {
                "type": "string",
                "enum": ["keep", f"delete{rtl}lla"],
                "description": f"Choose{zwsp} one{rtl}: safe",
            },
            "note": {"type": "string", "default": f"ok{isolate}x"},
        },
    }
    blocks = render_inputs(schema, {})
    shown = json.dumps(blocks, ensure_ascii=False)
    assert not {rtl, zwsp, isolate} & set(shown.replace(f"delete{rtl}lla", "")), shown
    assert "[U+202E]" in shown and "[U+200B]" in shown and "[U+2066]" in shown
    (choice,) = [b for b in blocks if b["element"]["type"] == "static_select"]
    values = [json.loads(o["value"]) for o in choice["element"]["options"]]
    assert values == ["keep", f"delete{rtl}lla"]


# --- real tools -------------------------------------------------------------------------------


class Options(BaseModel):
    retries: int = 3
    mode: Literal["fast", "safe"] = "safe"


@tool
def write_file(path: str, content: str) -> str:
    """Write ``content`` to the file at ``path``."""
    return "ok"


@tool(parse_docstring=True)
def run_sql(
    query: str,
    limit: int | None = None,
    color: Literal["red", "green"] = "red",
    options: Options | None = None,
    tags: list[str] | None = None,
    ratio: float = 0.5,
    dry_run: bool = False,
) -> str:
    """Run a SQL query.

    Args:
        query: The SQL statement.
        limit: Most rows to return.
        color: Highlight colour.
        options: Execution options.
        tags: Labels for the audit log.
        ratio: Sample ratio.
        dry_run: Only explain the plan.
    """
    return ""


RUN_SQL_ARGS = {
    "query": "SELECT *\nFROM users\nWHERE id = 1",
    "limit": 10,
    "color": "green",
    "options": {"retries": 2, "mode": "fast"},
    "tags": ["audit"],
    "ratio": 0.25,
    "dry_run": True,
}


def elements(blocks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {b["block_id"]: b["element"] for b in blocks if b["type"] == "input"}


def test_schema_of_a_real_tool_gives_typed_inputs() -> None:
    schema = tool_args_schema(run_sql)
    call_schema = run_sql.tool_call_schema
    assert isinstance(call_schema, type) and issubclass(call_schema, BaseModel)
    assert schema == call_schema.model_json_schema()
    blocks = render_inputs(schema, RUN_SQL_ARGS)
    found = elements(blocks)
    assert found["arg:query"]["type"] == "plain_text_input" and found["arg:query"]["multiline"]
    assert found["arg:limit"] == {
        "type": "number_input",
        "action_id": ids.ARG_ACTION,
        "is_decimal_allowed": False,
        "initial_value": "10",
    }
    assert found["arg:ratio"]["is_decimal_allowed"] is True
    assert [o["value"] for o in found["arg:color"]["options"]] == ['"red"', '"green"']
    assert found["arg:color"]["initial_option"]["value"] == '"green"'
    assert [o["value"] for o in found["arg:dry_run"]["options"]] == ["true", "false"]
    assert json.loads(found["arg:options"]["initial_value"]) == {"retries": 2, "mode": "fast"}
    query = next(b for b in blocks if b["block_id"] == "arg:query")
    assert (query["label"]["text"], query["hint"]["text"], query["optional"]) == (
        "query",
        "The SQL statement.",
        False,
    )
    assert next(b for b in blocks if b["block_id"] == "arg:limit")["optional"] is True
    assert submit_edit(schema, RUN_SQL_ARGS, simulate(blocks)) == (RUN_SQL_ARGS, {})
    assert_valid_modal(schema, RUN_SQL_ARGS)


def test_write_file_form_edits_a_value() -> None:
    schema = tool_args_schema(write_file)
    args = {"path": "/tmp/a.txt", "content": "old"}
    state = simulate(render_inputs(schema, args))
    state["arg:content"][ids.ARG_ACTION]["value"] = "new\ncontent"
    assert submit_edit(schema, args, state) == (
        {"path": "/tmp/a.txt", "content": "new\ncontent"},
        {},
    )


def test_tool_args_schema_of_dict_and_missing_schemas() -> None:
    dict_tool = StructuredTool.from_function(
        func=lambda a: a,
        name="d",
        description="d",
        args_schema={"type": "object", "properties": {"a": {"type": "string"}}},
    )
    assert tool_args_schema(dict_tool)["properties"] == {"a": {"type": "string"}}

    class Bare(BaseTool):
        name: str = "bare"
        description: str = "no schema"

        @property
        def tool_call_schema(self) -> Any:
            return None

        def _run(self) -> str:
            return ""

    assert tool_args_schema(Bare()) == {"type": "object"}


# --- invalid answers: exact errors --------------------------------------------------------

SQL_SCHEMA = tool_args_schema(run_sql)


@pytest.mark.parametrize(
    ("changes", "errors"),
    [
        (
            {"options": '{"retries": 2 "mode": "fast"}'},
            {"arg:options": "Not valid JSON: Expecting ',' delimiter (line 1, column 15)"},
        ),
        ({"options": "NaN"}, {"arg:options": "Not valid JSON: NaN is not a JSON value"}),
        ({"query": None}, {"arg:query": "This field is required."}),
        ({"limit": "2.5"}, {"arg:limit": "Must be a whole number."}),
        ({"limit": "ten"}, {"arg:limit": "Must be a whole number."}),
        ({"ratio": "half"}, {"arg:ratio": "Must be a number."}),
        (
            {"color": {"text": {"type": "plain_text", "text": "blue"}, "value": '"blue"'}},
            {"arg:color": 'Must be one of: "red", "green".'},
        ),
        (
            {"options": '{"retries": "many"}'},
            {"arg:options": "At retries: Must be a whole number."},
        ),
        ({"tags": '["a", 3]'}, {"arg:tags": "At [1]: Must be a string."}),
        (
            {"options": "[1]", "limit": "x"},
            {"arg:options": "Must be an object or null.", "arg:limit": "Must be a whole number."},
        ),
    ],
)
def test_invalid_answers_give_plain_field_errors(
    changes: dict[str, Any], errors: dict[str, str]
) -> None:
    state = simulate(render_inputs(SQL_SCHEMA, RUN_SQL_ARGS))
    for name, raw in changes.items():
        state.update(state_of(**{name: raw}))
    assert submit_edit(SQL_SCHEMA, RUN_SQL_ARGS, state) == (None, errors)


def test_a_missing_required_argument_is_asked_for() -> None:
    args = {"content": "x"}
    blocks = render_inputs(tool_args_schema(write_file), args)
    assert next(b for b in blocks if b["block_id"] == "arg:path")["optional"] is False
    assert submit_edit(tool_args_schema(write_file), args, simulate(blocks)) == (
        None,
        {"arg:path": "This field is required."},
    )


def test_cleared_fields_become_null_or_are_left_out() -> None:
    state = simulate(render_inputs(SQL_SCHEMA, RUN_SQL_ARGS))
    state.update(state_of(limit=None, ratio="", tags="  "))
    new_args, errors = submit_edit(SQL_SCHEMA, RUN_SQL_ARGS, state)
    assert errors == {}
    assert new_args is not None
    assert new_args["limit"] is None and new_args["tags"] is None  # Optional: null
    assert "ratio" not in new_args  # has a default: left out, the tool's default applies


def test_a_value_too_long_to_edit_is_shown_read_only_and_kept() -> None:
    schema = tool_args_schema(write_file)
    args = {"path": "/big.txt", "content": "z" * 5000}
    blocks = render_inputs(schema, args)
    kept = next(b for b in blocks if b["block_id"] == "arg:content")
    assert kept["type"] == "section"
    assert "5,000 characters" in kept["text"]["text"] and "kept as proposed" in kept["text"]["text"]
    state = simulate(blocks)
    state["arg:path"][ids.ARG_ACTION]["value"] = "/other.txt"
    assert submit_edit(schema, args, state) == (
        {"path": "/other.txt", "content": "z" * 5000},
        {},
    )
    assert_valid_modal(schema, args)


def test_untyped_schema_uses_one_json_input() -> None:
    args = {"a": 1, "b": [1, 2]}
    blocks = render_inputs({}, args)
    assert [b["block_id"] for b in blocks] == [ids.ARGS_JSON_BLOCK]
    assert json.loads(blocks[0]["element"]["initial_value"]) == args
    assert submit_edit({}, args, simulate(blocks)) == (args, {})
    state = {
        ids.ARGS_JSON_BLOCK: {ids.ARG_ACTION: {"type": "plain_text_input", "value": '{"a": 2}'}}
    }
    assert submit_edit({}, args, state) == ({"a": 2}, {})
    state[ids.ARGS_JSON_BLOCK][ids.ARG_ACTION]["value"] = "[1]"
    assert submit_edit({}, args, state) == (
        None,
        {ids.ARGS_JSON_BLOCK: 'Must be a JSON object, like {"name": "value"}.'},
    )
    state[ids.ARGS_JSON_BLOCK][ids.ARG_ACTION]["value"] = "{"
    assert submit_edit({}, args, state) == (
        None,
        {
            ids.ARGS_JSON_BLOCK: "Not valid JSON: Expecting property name enclosed in double "
            "quotes (line 1, column 2)"
        },
    )


def test_untyped_schema_with_long_arguments_gets_one_input_per_argument() -> None:
    args = {"small": {"k": 1}, "big": "q" * 4000}
    blocks = render_inputs({"type": "object"}, args)
    assert [(b["block_id"], b["type"]) for b in blocks] == [
        ("arg:small", "input"),
        ("arg:big", "section"),
    ]
    assert submit_edit({"type": "object"}, args, simulate(blocks)) == (args, {})


def test_arguments_the_schema_does_not_know_are_shown_not_dropped() -> None:
    schema = {**tool_args_schema(write_file), "additionalProperties": False}
    args = {"path": "/a", "content": "b", "mode": "0644"}
    blocks = render_inputs(schema, args)
    extra = next(b for b in blocks if b["block_id"] == "arg:mode")
    assert extra["hint"]["text"] == "Not in the tool's schema. (a JSON value)"
    assert submit_edit(schema, args, simulate(blocks)) == (
        None,
        {"arg:mode": "The tool has no argument with this name."},
    )
    state = simulate(blocks)
    state.update(state_of(mode=None))
    assert submit_edit(schema, args, state) == ({"path": "/a", "content": "b"}, {})


class Point(BaseModel):
    x: int
    y: int = Field(ge=0, description="Height, not negative.")


def test_check_args_speaks_plainly() -> None:
    @tool
    def plot(point: Point, label: str = "p", size: int | None = None) -> str:
        """Plot a point."""
        return ""

    schema = tool_args_schema(plot)
    assert check_args(schema, {"point": {"x": 1, "y": 2}}) == {}
    assert check_args(schema, {}) == {"point": "This field is required."}
    negative = {"point": {"x": 1, "y": -1}}
    assert check_args(schema, negative) == {"point": "At y: Must be at least 0."}
    assert check_args(schema, {"point": {"y": 1}}) == {"point": "Missing required field 'x'."}
    assert check_args(schema, {"point": {"x": 1, "y": 0}, "size": "big", "label": 5}) == {
        "size": "Must be a whole number or null.",
        "label": "Must be a string.",
    }
    assert check_args(schema, []) == {"": "The arguments must be a JSON object."}  # type: ignore[arg-type]


def test_a_pattern_that_backtracks_without_end_is_answered_at_once() -> None:
    # An agent's schema may carry a pattern that takes Python's re seconds per character
    # added (^(a+)+$ on "aaaa…!"); the check answers in time, as a field error.
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": "^(a+)+$"}}}
    # (with re this call would not return before the test's timeout)
    refused = check_args(schema, {"code": "a" * 5000 + "!"})
    assert refused["code"] in ("Must match the pattern ^(a+)+$.", wording.PATTERN_TOO_SLOW_PLAIN)
    assert check_args(schema, {"code": "aaaa"}) == {}


def test_one_check_s_patterns_share_one_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many values, each just under a value's limit, held the web process seconds: the
    check's patterns share ``PATTERNS_BUDGET_S`` (here each value's limit is raised past
    the test's timeout: without the budget the call would not return)."""
    monkeypatch.setattr(arguments, "PATTERN_TIMEOUT_S", 60.0)
    schema = {
        "type": "object",
        "properties": {"codes": {"type": "array", "items": {"pattern": "^(a+)+$"}}},
    }
    refused = check_args(schema, {"codes": ["a" * 5000 + "!"] * 10})
    assert refused["codes"].endswith(wording.PATTERN_TOO_SLOW_PLAIN), refused


def test_property_name_patterns_are_bounded_too() -> None:
    """``patternProperties`` and ``additionalProperties`` match names with a schema's
    patterns: with Python's ``re`` (jsonschema's) this backtracking never returned."""
    slow = {
        "type": "object",
        "patternProperties": {"^(a+)+$": {"type": "string"}},
        "additionalProperties": False,
    }
    refused = check_args(slow, {"a" * 5000 + "!": "x"})
    assert list(refused.values()) == [wording.PATTERN_TOO_SLOW_PLAIN]
    assert check_args(slow, {"aaa": "x"}) == {}
    assert check_args(slow, {"aaa": 1}) == {"aaa": "Must be a string."}
    assert check_args(slow, {"b": "x"}) == {"b": "The tool has no argument with this name."}


def test_unique_items_are_checked_in_linear_time_with_json_s_equality() -> None:
    """jsonschema compares every pair of items it cannot sort (15 s for 4,000 objects):
    20,000 here would not return before the test's timeout."""
    schema = {"type": "object", "properties": {"rows": {"type": "array", "uniqueItems": True}}}
    rows = [{"id": n, "tags": [n]} for n in range(20_000)]
    assert check_args(schema, {"rows": rows}) == {}
    assert "rows" in check_args(schema, {"rows": [*rows, {"tags": [7], "id": 7}]})
    assert "rows" in check_args(schema, {"rows": [1, 1.0]})  # the same JSON number
    assert check_args(schema, {"rows": [1, True, "1"]}) == {}


def test_a_value_holding_invisible_characters_says_so_in_its_field_s_hint() -> None:
    """The input shows the proposed value as it is (a submission left unchanged must send
    it back the same), where the card marks a right-to-left override: the field's hint
    says the value holds such characters and shows it marked, as the card does."""
    rtl = "\u202e"
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    [block] = render_inputs(schema, {"path": f"report{rtl}fdp.exe"})
    assert block["element"]["initial_value"] == f"report{rtl}fdp.exe"
    assert "invisible characters" in block["hint"]["text"]
    assert "report[U+202E]fdp.exe" in block["hint"]["text"]
    [plain] = render_inputs(schema, {"path": "report.pdf"})
    assert "hint" not in plain


def test_choices_that_read_alike_are_labelled_by_their_value() -> None:
    """``"1"`` the text and ``1`` the number, or two long values that differ only past
    the label's length, read alike: a reviewer picking by the label could not tell
    which is sent, so such labels show the JSON value (its end, when cut)."""
    long = "x" * 100
    schema = {
        "type": "object",
        "properties": {"mode": {"enum": ["1", 1, f"{long}_dry", f"{long}_DROP", "safe"]}},
    }
    [block] = render_inputs(schema, {})
    labels = [o["text"]["text"] for o in block["element"]["options"]]
    assert labels[:2] == ['"1"', "1"]
    assert labels[2].endswith('_dry"') and labels[3].endswith('_DROP"')
    assert labels[4] == "safe" and len(set(labels)) == len(labels)


def test_a_schema_whose_patterns_jsonschema_matches_unbounded_is_refused_whole() -> None:
    """``unevaluatedProperties`` beside ``patternProperties``: jsonschema matches the
    patterns with Python's ``re`` for it, which would hold the process on a backtracking
    one; an edit of such a tool is refused in words, at once."""
    schema = {
        "type": "object",
        "patternProperties": {"^(a+)+$": {}},
        "unevaluatedProperties": False,
    }
    assert check_args(schema, {"a" * 40 + "!": 1}) == {"": wording.SCHEMA_TOO_SLOW_PLAIN}

"""Block Kit rendering: every message and modal is valid Block Kit within Slack's limits,
shows exactly the allowed decisions, and never lets agent text become markup."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

from agent_bridge import wording
from agent_bridge.models import DECISION_TYPES, ApprovalRequest, ApprovalState, Decision, Run
from bot import ids
from bot.arg_blocks import MAX_ARG_SECTIONS
from bot.blocks import (
    already_decided_text,
    approval_text,
    decided_text,
    render_approval,
    render_decided,
    render_final_answer,
    render_ran_without_review,
    render_run_failed,
    render_run_started,
    render_tool_result,
)
from bot.modals import (
    render_edit_modal,
    render_full_args_modal,
    render_reject_modal,
    render_respond_modal,
)
from bot.mrkdwn import (
    ZERO_WIDTH_SPACE,
    break_fences,
    code_block,
    escape,
    split_code_blocks,
    truncate,
)
from bot.review_blocks import render_pointer

EVIL = "<!channel> <!here> <@U123> <#C1> <https://evil|innocent> <!subteam^S1> & ```"
FORBIDDEN = ("<!channel>", "<!here>", "<@U123>", "<#C1>", "<https://evil|innocent>", "<!subteam")
UNESCAPED_AMP = re.compile(r"&(?!amp;|lt;|gt;)")
RTL = "שלום עולם, مرحبا بالعالم — \u202etxt.exe\u202c 日本語テキスト 🚀👩\u200d💻 e\u0301 ĀĂĄĆĈĊČ"
BIG = "x" * 100_000
MESSAGE_MAX_BLOCKS = 50
VIEW_MAX_BLOCKS = 100
MESSAGE_TEXT_MAX_CHARS = 12_000
RUN = Run(run_id="run-1", thread_id="thread-1", task="Tidy the docs", channel_id="C1", user_id="U1")
EVIL_RUN = RUN.model_copy(update={"task": f"Task {EVIL}", "requester_name": f"Dana {EVIL}"})


def make_request(**changes: Any) -> ApprovalRequest:
    fields: dict[str, Any] = {
        "request_id": "req-1",
        "run_id": "run-1",
        "thread_id": "thread-1",
        "interrupt_id": "int-1",
        "tool_name": "write_file",
        "args": {"path": "/tmp/notes.txt", "content": "hello\nworld"},
        "description": "Tool execution requires approval",
        "allowed_decisions": ["approve", "edit", "reject"],
        "args_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    }
    return ApprovalRequest(**{**fields, **changes})


REQUESTS = {
    "simple": make_request(),
    "all decisions": make_request(allowed_decisions=["respond", "reject", "edit", "approve"]),
    "respond only": make_request(
        tool_name="ask_user",
        args={"question": "Which?"},
        allowed_decisions=["respond"],
        args_schema={},
    ),
    "no args": make_request(args={}, args_schema={"type": "object", "properties": {}}),
    "evil everywhere": make_request(
        tool_name=f"tool {EVIL}",
        description=f"Run this {EVIL}",
        args={"path": EVIL, "content": f"{EVIL}\n{EVIL}", "nested": {"k": [EVIL, 1, None]}},
    ),
    "unicode rtl": make_request(description=RTL, args={"path": RTL, "content": RTL * 3}),
    "big value": make_request(args={"path": "/big", "content": BIG}),
    "long description": make_request(description="d" * 50_000),
    "many args": make_request(
        args={f"arg{i}": f"value {i} {EVIL}" for i in range(30)}, args_schema={}
    ),
    "batch": make_request(batch_size=3, index=1, mode="batched"),
    "odd names": make_request(args={"": 1, "a`b": 2, "<!here>": 3, "x" * 400: 4}),
    "long names": make_request(  # what a model may name its arguments: 200 shown of each
        args={f"k{i:02d}" + "x" * 300: "v" * 5000 for i in range(MAX_ARG_SECTIONS)},
        description="d" * 5000,
    ),
}
DECISIONS = {
    "approve": Decision(type="approve"),
    "edit": Decision(type="edit", edited_args={"path": EVIL, "content": BIG}),
    "reject": Decision(type="reject", message=f"Not that file {EVIL}"),
    "respond": Decision(type="respond", message=f"Use staging {EVIL}"),
}


def strings(node: Any) -> Iterator[str]:
    """Every string value anywhere in a block tree."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from strings(item)


def assert_no_markup(node: Any) -> None:
    """No agent control sequence and no bare ``&`` survive in any string."""
    for text in strings(node):
        for bad in FORBIDDEN:
            assert bad not in text, f"{bad!r} unescaped in {text[:200]!r}"
        assert not UNESCAPED_AMP.search(text), f"bare & in {text[:200]!r}"


def assert_valid_blocks(blocks: list[dict[str, Any]], max_blocks: int) -> None:
    """slack_sdk accepts every block unchanged, and Slack's limits hold."""
    assert 0 < len(blocks) <= max_blocks
    for block in blocks:
        parsed = Block.parse(block)
        assert parsed is not None, block
        parsed.validate_json()
        assert parsed.to_dict() == block  # to_dict validates nested elements too
        if block["type"] == "section":
            assert len(block["text"]["text"]) <= 3000
        if block["type"] == "context":
            assert len(block["elements"]) <= 10
        for element in [*block.get("elements", []), block.get("accessory") or {}]:
            if element.get("type") == "button":
                assert len(element["value"]) <= 2000
                assert len(element["text"]["text"]) <= 75


def assert_valid_message(text: str, blocks: list[dict[str, Any]]) -> None:
    assert_valid_blocks(blocks, MESSAGE_MAX_BLOCKS)
    assert 0 < len(text) <= 3000
    assert sum(len(s) for s in strings(blocks)) <= MESSAGE_TEXT_MAX_CHARS
    assert_no_markup([text, blocks])


def assert_valid_view(view: dict[str, Any]) -> None:
    parsed = View(**view)
    parsed.validate_json()
    assert parsed.to_dict() == view
    assert_valid_blocks(view["blocks"], VIEW_MAX_BLOCKS)
    assert len(view["title"]["text"]) <= 24
    for key in ("submit", "close"):
        assert key not in view or len(view[key]["text"]) <= 24


def buttons(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = []
    for block in blocks:
        found += [e for e in block.get("elements", []) if e.get("type") == "button"]
        if block.get("accessory", {}).get("type") == "button":
            found.append(block["accessory"])
    return found


def decision_buttons(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for b in buttons(blocks) if b["action_id"].startswith(ids.ACTION_PREFIX)]


def has_view_args(blocks: list[dict[str, Any]]) -> bool:
    return any(b["action_id"] == ids.VIEW_ARGS_ACTION for b in buttons(blocks))


def decided(request: ApprovalRequest, decision: Decision) -> ApprovalRequest:
    return request.model_copy(
        update={
            "decision": decision,
            "decided_by": "U0REVIEWER",
            "decided_at": 1_700_000_000.0,
            "state": ApprovalState.DECIDED,
        }
    )


@pytest.mark.parametrize("name", REQUESTS)
def test_approval_card_is_valid_and_safe(name: str) -> None:
    request = REQUESTS[name]
    blocks = render_approval(request, run=EVIL_RUN, decided_count=1)
    assert_valid_message(approval_text(request), blocks)


@pytest.mark.parametrize("name", REQUESTS)
def test_buttons_are_exactly_the_allowed_decisions_carrying_only_request_and_version(
    name: str,
) -> None:
    request = REQUESTS[name]
    found = decision_buttons(render_approval(request, run=RUN))
    expected = [d for d in DECISION_TYPES if d in request.allowed_decisions]
    assert [b["action_id"] for b in found] == [ids.decision_action_id(d) for d in expected]
    assert [b["text"]["text"] for b in found] == [d.capitalize() for d in expected]
    assert {b.get("style") for b in found if b["action_id"].endswith("approve")} <= {"primary"}
    assert {b.get("style") for b in found if b["action_id"].endswith("reject")} <= {"danger"}
    values = {b["value"] for b in found}
    assert values <= {ids.decision_value(request.request_id, request.version)}
    others = [b for b in buttons(render_approval(request, run=RUN)) if b not in found]
    assert all(b["value"] == request.request_id for b in others)  # View full arguments


def test_arguments_show_as_pretty_json_not_a_python_repr() -> None:
    request = make_request(args={"path": "/tmp/x", "flags": {"force": True, "mode": None}})
    text = "\n".join(strings(render_approval(request, run=RUN)))
    assert "```\n/tmp/x\n```" in text  # a string as its text, not a JSON literal
    assert '"force": true' in text and '"mode": null' in text
    assert "True" not in text and "None" not in text and "'" not in text


def test_a_multiline_string_argument_shows_as_its_text() -> None:
    text = "\n".join(strings(render_approval(make_request(), run=RUN)))
    assert "```\nhello\nworld\n```" in text


def test_a_short_card_has_no_view_arguments_button() -> None:
    assert not has_view_args(render_approval(REQUESTS["simple"], run=RUN))


@pytest.mark.parametrize("name", ["big value", "long description"])
def test_a_cut_card_offers_the_full_arguments(name: str) -> None:
    request = REQUESTS[name]
    blocks = render_approval(request, run=RUN)
    assert has_view_args(blocks)
    assert_valid_message(approval_text(request), blocks)
    assert any(b["type"] == "actions" for b in blocks)


def test_batch_progress_and_position_are_shown() -> None:
    blocks = render_approval(REQUESTS["batch"], run=RUN, decided_count=2)
    context = blocks[-1]["elements"][0]["text"]
    assert "2 of 3 decided" in context and "Call 2 of 3" in context
    assert "Task: Tidy the docs" in "\n".join(strings(blocks))
    assert "decided" not in json.dumps(
        render_approval(REQUESTS["simple"], decided_count=1, run=RUN)
    )


def test_a_card_with_long_names_and_a_pending_edit_stays_under_slacks_limit() -> None:
    """Twenty arguments with 300-character names and 5,000-character values, a long
    reason, and five of them changed by a waiting edit (quorum): the card keeps within
    the text Slack takes in one message (it answers ``msg_blocks_too_long`` past it)."""
    request = REQUESTS["long names"]
    edited = {
        name: ("w" * 2999 if i < 5 else v) for i, (name, v) in enumerate(request.args.items())
    }
    waiting = request.model_copy(
        update={
            "reason": "r" * 5000,
            "pending_edit": Decision(type="edit", edited_args=edited),
            "approved_by": ["U0REVIEWER"],
        }
    )
    assert_valid_message(approval_text(waiting), render_approval(waiting, run=RUN))
    for decision in (Decision(type="edit", edited_args=edited), DECISIONS["approve"]):
        blocks = render_decided(decided(waiting, decision), run=RUN)
        assert sum(len(s) for s in strings(blocks)) <= MESSAGE_TEXT_MAX_CHARS


@pytest.mark.parametrize("kind", DECISIONS)
@pytest.mark.parametrize(
    "name", ["simple", "evil everywhere", "big value", "many args", "long names"]
)
def test_decided_card_shows_who_how_and_when_without_decision_buttons(kind: str, name: str) -> None:
    request = decided(REQUESTS[name], DECISIONS[kind])
    blocks = render_decided(request, run=RUN)
    assert_valid_blocks(blocks, MESSAGE_MAX_BLOCKS)
    assert sum(len(s) for s in strings(blocks)) <= MESSAGE_TEXT_MAX_CHARS
    assert not decision_buttons(blocks)
    text = "\n".join(strings(blocks))
    emoji_verb = {
        "approve": "✅ *Approved*",
        "edit": "✏️ *Edited*",
        "reject": "❌ *Rejected*",
        "respond": "💬 *Responded*",
    }[kind]
    when = "<!date^1700000000^{date_short_pretty} {time}|2023-11-14 22:13 UTC>"
    assert f"{emoji_verb} by <@U0REVIEWER> {when}" in text
    if kind == "reject":
        assert "*Reason:*\n> Not that file &lt;!channel&gt;" in text
    if kind == "respond":
        assert "*Answer:*\n> Use staging" in text
    if kind == "edit":
        assert "*What the edit changed:*" in text
    assert has_view_args(blocks) == (
        name in ("big value", "many args", "long names") or kind == "edit"
    )
    # the reviewer's mention is the only one; everything else is escaped
    assert_no_markup([t.replace("<@U0REVIEWER>", "") for t in strings(blocks)])
    assert decided_text(request).startswith(emoji_verb.replace("*", "")[:2])
    assert_no_markup(decided_text(request))


def test_decided_card_refuses_a_reviewer_id_that_could_be_markup() -> None:
    request = decided(REQUESTS["simple"], DECISIONS["approve"])
    request = request.model_copy(update={"decided_by": "U1>|<!channel"})
    assert "<@" not in json.dumps(render_decided(request, run=RUN))


def test_already_decided_and_stale_notes() -> None:
    request = decided(REQUESTS["simple"], DECISIONS["reject"])
    note = already_decided_text(request)
    assert "❌ *Rejected*" in note and "<@U0REVIEWER>" in note and "<!date^1700000000^" in note
    assert "no longer open" in wording.STALE_TEXT


@pytest.mark.parametrize("name", REQUESTS)
def test_modals_are_valid_and_safe(name: str) -> None:
    request = REQUESTS[name]
    edit = render_edit_modal(request, view_key="view-key-1")
    reject = render_reject_modal(request, view_key="view-key-1")
    respond = render_respond_modal(request, view_key="view-key-1")
    full = render_full_args_modal(request, RUN)
    for view in (edit, reject, respond, full):
        assert_valid_view(view)
    assert (edit["callback_id"], reject["callback_id"], respond["callback_id"]) == (
        ids.EDIT_CALLBACK,
        ids.REJECT_CALLBACK,
        ids.RESPOND_CALLBACK,
    )
    assert "submit" not in full
    # a decision form carries only its opened view's key; the read-only one the request ID
    assert {edit["private_metadata"], reject["private_metadata"]} == {"view-key-1"}
    assert respond["private_metadata"] == "view-key-1"
    assert full["private_metadata"] == request.request_id
    for view in (reject, respond, full):
        assert_no_markup(view)
    # the edit form's inputs hold raw values on purpose; everything else is escaped
    assert_no_markup([b for b in edit["blocks"] if b["type"] != "input"])


def test_reject_and_respond_modals_have_their_inputs() -> None:
    reject = render_reject_modal(REQUESTS["simple"], view_key="view-key-1")["blocks"][-1]
    assert (reject["block_id"], reject["element"]["action_id"], reject["optional"]) == (
        ids.REASON_BLOCK,
        ids.REASON_ACTION,
        True,
    )
    respond = render_respond_modal(REQUESTS["respond only"], view_key="view-key-1")
    answer = respond["blocks"][-1]
    assert (answer["block_id"], answer["element"]["action_id"], answer["optional"]) == (
        ids.ANSWER_BLOCK,
        ids.ANSWER_ACTION,
        False,
    )
    assert answer["element"]["multiline"] is True
    assert "```\nWhich?\n```" in "\n".join(strings(respond["blocks"][:-1]))


def shown_text(view: dict[str, Any]) -> str:
    """The agent text a full-arguments modal shows, unescaped, fences removed."""
    parts = []
    for block in view["blocks"]:
        if block["type"] != "section":
            continue
        for body in re.findall(r"```\n(.*?)\n```", block["text"]["text"], flags=re.DOTALL):
            parts.append(
                body.replace(ZERO_WIDTH_SPACE, "")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&")
            )
    return "".join(parts)


def test_full_args_modal_shows_a_100kb_value_whole() -> None:
    view = render_full_args_modal(REQUESTS["big value"], RUN)
    assert_valid_view(view)
    assert BIG in shown_text(view)


def test_full_args_modal_shows_escaped_values_whole() -> None:
    content = (EVIL + "\n") * 2000
    view = render_full_args_modal(make_request(args={"content": content}), None)
    assert_valid_view(view)
    assert_no_markup(view)
    assert shown_text(view).replace("\n", "") == content.replace("\n", "")


def test_full_args_modal_says_how_much_does_not_fit() -> None:
    view = render_full_args_modal(make_request(args={"content": "y" * 400_000}), None)
    assert_valid_view(view)
    assert len(view["blocks"]) == VIEW_MAX_BLOCKS
    note = view["blocks"][-1]["elements"][0]["text"]
    found = re.search(r"About ([\d,]+) more characters", note)
    assert found is not None
    left_out = int(found[1].replace(",", ""))
    assert left_out + len(shown_text(view)) == 400_000


def test_full_args_modal_includes_edited_arguments() -> None:
    view = render_full_args_modal(decided(REQUESTS["big value"], DECISIONS["edit"]), RUN)
    assert_valid_view(view)
    assert "*New arguments*" in json.dumps(view)
    assert shown_text(view).count(BIG) == 2


def test_run_messages_are_valid_and_safe() -> None:
    run = Run(
        run_id="run-1",
        thread_id="t-1",
        task=f"Clean up {EVIL} " + RTL,
        channel_id="C1",
        user_id="U1",
    )
    messages = [
        render_run_started(run),
        render_tool_result("write_file", f"wrote {EVIL}", ok=True),
        render_tool_result(f"bad {EVIL}", BIG, ok=False),
        render_tool_result("noop", "", ok=True),
        render_final_answer(f"Done. {EVIL}\n" * 5000),
        render_final_answer(RTL),
        render_run_failed(f"run-{EVIL}"),
        render_tool_result(f"bad {EVIL}", None, ok=False, run_id=f"run-{EVIL}"),
        render_tool_result(f"quiet {EVIL}", None, ok=True),
        render_ran_without_review("read_file", {"path": EVIL, "data": BIG}),
        render_tool_result(f"sql {EVIL}", f"not today {EVIL}\n" * 500, ok=False, answered="reject"),
        render_tool_result("ask_user", "", ok=True, answered="respond"),
    ]
    for text, blocks in messages:
        assert_valid_message(text, blocks)


def test_a_rejected_call_says_rejected_with_the_reviewer_s_words_not_failed() -> None:
    text, blocks = render_tool_result("execute_sql", "Not on a Friday", ok=False, answered="reject")
    shown = blocks[0]["text"]["text"]
    assert "was rejected by its reviewer" in shown and "> Not on a Friday" in shown
    assert "failed" not in shown and text == "execute_sql rejected"


def test_long_outputs_say_they_were_shortened() -> None:
    _, blocks = render_tool_result("read_file", BIG, ok=True)
    assert "100,000 characters" in json.dumps(blocks)
    _, blocks = render_final_answer("word " * 10_000)
    assert "Answer shortened" in json.dumps(blocks) and len(blocks) > 2


def test_escape_touches_only_the_three_characters() -> None:
    assert escape("a & b < c > d *bold* _it_") == "a &amp; b &lt; c &gt; d *bold* _it_"


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from("a&<>`\n\u0301é"), max_size=60),
    limit=st.integers(min_value=1, max_value=80),
)
def test_truncate_never_splits_an_entity(text: str, limit: int) -> None:
    cut, was_cut = truncate(text, limit)
    assert len(cut) <= limit
    assert was_cut == (len(escape(text)) > limit)
    assert not re.search(r"&(?!amp;|lt;|gt;)", cut)
    body = cut.removesuffix("…") if was_cut else cut
    assert escape(text).startswith(body)


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from("a&<>`\n"), max_size=80),
    limit=st.integers(min_value=18, max_value=60),
)
def test_a_code_block_cannot_be_closed_by_its_value(text: str, limit: int) -> None:
    block, _ = code_block(text, limit)
    assert len(block) <= limit
    assert block.count("```") == 2 and block.startswith("```\n") and block.endswith("\n```")
    pieces = split_code_blocks(text, limit)
    assert all(len(p) <= limit and p.count("```") == 2 for p in pieces)
    # the pieces hold every character; a line break may serve as the boundary
    whole = break_fences(escape(text))
    assert _rebuilds(whole, [p[4:-4] for p in pieces], 0)


def _rebuilds(whole: str, pieces: list[str], at: int) -> bool:
    """Whether ``pieces`` spell ``whole`` from ``at``, a boundary maybe eating one line break."""
    if not pieces:
        return at == len(whole)
    first, rest = pieces[0], pieces[1:]
    return (whole.startswith(first, at) and _rebuilds(whole, rest, at + len(first))) or (
        at > 0
        and whole[at : at + 1] == "\n"
        and whole.startswith(first, at + 1)
        and _rebuilds(whole, rest, at + 1 + len(first))
    )


def test_unicode_and_rtl_text_renders() -> None:
    assert len(RTL) == 60
    request = REQUESTS["unicode rtl"]
    text = "\n".join(strings(render_approval(request, run=RUN)))
    # Scripts render as given; the override that would flip "exe.txt" is shown, not obeyed.
    visible = RTL.replace("\u202e", "[U+202E]").replace("\u202c", "[U+202C]")
    assert visible in text
    assert "\u202e" not in text and "\u202c" not in text
    assert_valid_view(render_full_args_modal(request, RUN))


def test_a_notification_text_keeps_agent_text_on_one_line() -> None:
    # Found by a hostile review: push and desktop notifications show ``text`` unframed.
    request = make_request(description="Harmless\n\n✅ Approved by Jane (DBA) — no action needed")
    text = approval_text(request)
    assert "\n" not in text and "⏎" in text
    assert "\n" not in render_final_answer("Done.\n✅ Approved by Jane")[0]


def test_the_pointer_to_a_card_a_quorum_approved_names_every_approver() -> None:
    """A DBA reading the run's thread sees both approvals, as the card lists them, not
    only the last click's."""
    quorum = decided(make_request(channel_id="C0APPROVALS"), Decision(type="approve")).model_copy(
        update={"approved_by": ["U0DANA", "U0DMITRI"], "decided_by": "U0DMITRI"}
    )
    text, blocks = render_pointer(quorum, link=None)
    assert "by <@U0DANA>, <@U0DMITRI>" in text
    alone = decided(make_request(channel_id="C0APPROVALS"), Decision(type="approve"))
    assert render_pointer(alone, link=None)[0].endswith("by <@U0REVIEWER>")
    assert_valid_message(text, blocks)

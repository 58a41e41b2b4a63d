"""Agent text stays in its frame (invariant 7): every agent-controlled field of every
message and modal, tried with line breaks, backticks, markup, mentions, bare URLs,
invisible characters and cut points, renders with no line of its own outside a frame,
every code block closed, no live mention or link, invisible characters marked and no
grapheme split; and end to end, no message the product sends is unfurled.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator
from typing import Any

import pytest
import regex
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agent_bridge import wording
from agent_bridge.models import ApprovalRequest, ApprovalState, CallResult, Decision, Run
from agent_bridge.settings import DEMO_BOT_TOKEN, DEMO_SIGNING_SECRET
from bot import ids
from bot.arg_blocks import arg_text
from bot.blocks import (
    already_decided_text,
    approval_text,
    decided_text,
    render_approval,
    render_decided,
    render_final_answer,
    render_ran_without_review,
    render_reminder,
    render_run_failed,
    render_run_started,
    render_tool_result,
)
from bot.cards import with_note
from bot.modals import (
    render_edit_modal,
    render_full_args_modal,
    render_reject_modal,
    render_respond_modal,
)
from bot.mrkdwn import (
    ELLIPSIS,
    code_block,
    escape,
    inline_code,
    quote,
    quote_pieces,
    split_code_blocks,
    truncate,
    visible,
)
from bot.review_blocks import render_escalation, render_pointer
from bot.slack_client import make_client
from bot.slack_gateway import single_workspace
from slack_sandbox import Sandbox, live_links, live_mentions, message_live_links
from tests.harness import DBA, REVIEWER, Harness
from tests.test_render import RUN, assert_valid_blocks, assert_valid_view, make_request

SENTINEL = "ZQX"
"""Put between every two hostile pieces: any agent text outside its frame shows it."""
EMOJI = [
    "🇫🇷",
    "👨\u200d👩\u200d👧",
    "👍🏽",
    "🏳\ufe0f\u200d🌈",
    "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",
    "1\ufe0f\u20e3",
    "❤\ufe0f",
]
"""Emoji graphemes (a flag, a ZWJ family, a skin tone, a ZWJ flag, a subdivision flag,
a keycap, VS16): rendered unchanged, invisible parts included."""
PIECES = [
    "\n",
    "`",
    "``",
    "```",
    "````",
    "*bold*",
    "_it_",
    "~del~",
    "> ",
    ">",
    "\n> quoted",
    "<!channel>",
    "<@U123>",
    "<https://evil.example|innocent>",
    "https://evil.example/p?q=1",
    "www.evil.example",
    "mailto:a@evil.example",
    "\u200b",
    "\u200c",
    "\u200d",
    "\u2060",
    "\u00ad",
    "\u200e",
    "\u200f",
    "\u061c",
    "\ufeff",
    "\u2028",
    "\u2029",
    "\u202e",
    "\U000e0041",
    "\x1b[31m",
    "\u00a0",
    "\u3000",
    *EMOJI,
    "e\u0301",
    "\u1100\u1161\u11a8",
    "✅ *Pre-approved by Jane (DBA)*",
    "&",
    " ",
    "x" * 40,
]
REVIEWER_ID = "U0REVIEWER"
PRODUCT_MENTIONS = {f"<@{REVIEWER_ID}>", "<#C2>"}
"""The decided card's reviewer and the pointer's channel: built by the product."""
THREAD_LINK = "https://example.slack.com/archives/C1/p1"
PRODUCT_LINKS = {f"<{THREAD_LINK}|{wording.RUN_THREAD_LINK}>"}
"""A card's link to its run's Slack thread (a permalink from Slack): the product's."""
_CODE_SPAN = re.compile(r"`[^`\n]+`")
_OUR_ZERO_WIDTH = re.compile(r"(?<=`)\u200b(?=`)")


def hostile(pieces: list[str]) -> str:
    """The pieces joined by (and wrapped in) the sentinel."""
    return SENTINEL + SENTINEL.join(pieces) + SENTINEL


def text_objects(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, list):
        for item in node:
            yield from text_objects(item)
    elif isinstance(node, dict):
        if node.get("type") in ("mrkdwn", "plain_text") and isinstance(node.get("text"), str):
            yield node
        else:
            for value in node.values():
                yield from text_objects(value)


def assert_framed(text: str) -> None:
    """One mrkdwn text: code blocks close, and no line outside a frame starts with
    agent text.

    Outside a code block, a line is a quote (``> …``: the prose frame), or starts with
    the product's own words or an inline code span (a name), agent text after them on
    that line only (``one_line``: no line break, no backtick of its own).
    """
    assert text.count("```") % 2 == 0, text
    in_code = False
    for line in text.split("\n"):
        if "```" in line:
            assert line == "```", f"a fence shares its line: {line!r}"
            in_code = not in_code
            continue
        if in_code:
            continue
        if line.startswith("> "):
            continue
        outside = _CODE_SPAN.sub("", line)
        assert not outside.lstrip().startswith(SENTINEL), f"agent text starts a line: {line!r}"
        assert "`" not in outside, f"an unpaired backtick: {line!r}"
    assert not in_code


def assert_nothing_invisible(text: str) -> None:
    """Only emoji graphemes and our zero-width space between two backticks are invisible."""
    for emoji in EMOJI:
        text = text.replace(emoji, "")
    text = _OUR_ZERO_WIDTH.sub("", text)
    for char in text:
        category = unicodedata.category(char)
        hidden = category in ("Cf", "Zl", "Zp", "Co", "Cs", "Cn") or (
            category == "Cc" and char != "\n"
        )
        assert not hidden and not (category == "Zs" and char != " "), f"{char!r} in {text!r}"


def assert_safe(node: Any) -> None:
    """Every text object of a message or view: framed, verbatim, nothing live, visible."""
    for obj in text_objects(node):
        if obj["type"] == "plain_text":
            assert SENTINEL not in obj["text"], obj  # titles, labels, buttons: ours
            continue
        assert obj.get("verbatim") is True, obj
        assert_framed(obj["text"])
        assert_nothing_invisible(obj["text"])
        assert set(live_mentions(obj["text"])) <= PRODUCT_MENTIONS | PRODUCT_LINKS, obj["text"]
    assert set(message_live_links(None, node)) <= PRODUCT_LINKS


def decided(request: ApprovalRequest, decision: Decision) -> ApprovalRequest:
    return request.model_copy(
        update={
            "decision": decision,
            "decided_by": REVIEWER_ID,
            "decided_at": 1_700_000_000.0,
            "state": ApprovalState.DECIDED,
        }
    )


def ran(request: ApprovalRequest, *, ok: bool, text: str = "") -> ApprovalRequest:
    return request.model_copy(update={"result": CallResult(ok=ok, text=text)})


def everything(text: str) -> tuple[list[tuple[str, list[dict[str, Any]]]], list[dict[str, Any]]]:
    """Every message and modal, with ``text`` in every agent-controlled field."""
    request = make_request(
        tool_name=text,
        description=text,
        args={text: text, "query": text, "nested": {text: [text, 1]}, "n": 1},
        args_schema={},
        note=text,
        reason=text,
    )
    run = Run(
        run_id="run-1",
        thread_id="t-1",
        task=text,
        channel_id="C1",
        user_id="U1",
        requester_name=text,
        thread_link=THREAD_LINK,
        thread_ts="1.000001",
    )
    decisions = [
        Decision(type="approve"),
        Decision(type="edit", edited_args={text: text}),
        Decision(type="reject", message=text),
        Decision(type="respond", message=text),
    ]
    pending = request.model_copy(update={"channel_id": "C2"})
    messages = [
        (approval_text(request), render_approval(request, run=run, decided_count=1)),
        (approval_text(request), with_note(render_approval(request, run=run), text, ":warning:")),
        *(
            (decided_text(decided(request, d)), render_decided(decided(request, d), run=run))
            for d in decisions
        ),
        *(
            (decided_text(done), render_decided(done, run=run))
            for done in (
                ran(decided(request, decisions[0]), ok=True, text=text),
                ran(decided(request, decisions[1]), ok=False),
            )
        ),
        render_run_started(run),
        render_tool_result(text, text, ok=True),
        render_tool_result(text, text, ok=False),
        render_final_answer(text),
        render_run_failed(text),
        render_ran_without_review(text, {text: text}),
        render_reminder(request),
        render_pointer(pending, link=None),
        render_escalation(pending, waited="10 minutes"),
        (already_decided_text(request), []),
    ]
    views = [
        render_edit_modal(request, view_key="k"),
        render_reject_modal(request, view_key="k"),
        render_respond_modal(request, view_key="k"),
        render_full_args_modal(request, run),
        render_full_args_modal(decided(request, decisions[1]), run),
    ]
    return messages, views


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(st.sampled_from(PIECES), min_size=1, max_size=40))
def test_no_agent_text_leaves_its_frame_in_any_message_or_modal(pieces: list[str]) -> None:
    messages, views = everything(hostile(pieces))
    for fallback, blocks in messages:
        if blocks:
            assert_valid_blocks(blocks, 50)
        assert_safe(blocks)
        assert set(live_mentions(fallback)) <= PRODUCT_MENTIONS
        if not blocks:  # a private note: sent as text and as one verbatim section
            assert_framed(fallback)
            assert_nothing_invisible(fallback)
    for view in views:
        assert_valid_view(view)
        assert_safe(view)


def test_a_name_with_a_line_break_cannot_write_a_line_of_its_own() -> None:
    """The reviewer's finding on main: an extra argument's name wrote a bold
    "✅ Pre-approved" line outside its code block on an execute_sql card."""
    name = "note`\n```\n✅ *Pre-approved by Jane (DBA)*\n```\n`"
    request = make_request(
        tool_name="execute_sql", args={"query": "DELETE FROM orders", name: "x"}, args_schema={}
    )
    texts = [o["text"] for o in text_objects(render_approval(request, run=RUN))]
    for text in texts:
        assert_framed(text.replace("Pre-approved", SENTINEL))
    shown = "\n".join(texts)
    assert "`note[U+0060]⏎[U+0060][U+0060][U+0060]⏎✅ *Pre-approved by Jane (DBA)*" in shown


def test_every_line_of_prose_is_quoted() -> None:
    text, cut = quote("first\n✅ *Approved* by DBA\n\n```\n> not a quote of ours", 500)
    assert not cut
    assert text.split("\n") == [
        "> first",
        "> ✅ *Approved* by DBA",
        "> ",
        "> `\u200b`\u200b`",
        "> &gt; not a quote of ours",
    ]


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("DROP TABLE orders", "DROP TABLE orders"),
        ("line one\nline two", "line one\nline two"),
        ('{"a": 1}', '{"a": 1}'),
        ("false", '"false"'),
        ("42", '"42"'),
        ("null", '"null"'),
        ("", '""'),
        ("   ", '"   "'),
        (False, "false"),
        (42, "42"),
        (None, "null"),
        ({"force": True, "paths": ["a", "b"]}, '{\n  "force": true,\n  "paths": [\n    "a",'),
    ],
)
def test_strings_show_as_text_and_other_values_as_json(value: Any, shown: str) -> None:
    assert arg_text(value).startswith(shown)
    blocks = render_approval(make_request(args={"v": value}, args_schema={}), run=RUN)
    assert any(o["text"].startswith(f"`v`\n```\n{escape(shown)}") for o in text_objects(blocks))


INVISIBLE = {
    "zero-width space": "\u200b",
    "zero-width non-joiner": "\u200c",
    "zero-width joiner": "\u200d",
    "word joiner": "\u2060",
    "soft hyphen": "\u00ad",
    "tag latin small a": "\U000e0061",
    "cancel tag": "\U000e007f",
    "left-to-right mark": "\u200e",
    "right-to-left mark": "\u200f",
    "arabic letter mark": "\u061c",
    "byte order mark": "\ufeff",
    "line separator": "\u2028",
    "paragraph separator": "\u2029",
    "right-to-left override": "\u202e",
    "first strong isolate": "\u2068",
    "escape": "\x1b",
    "carriage return": "\r",
    "null": "\x00",
    "no-break space": "\u00a0",
    "ideographic space": "\u3000",
    "thin space": "\u2009",
    "hangul filler": "\u3164",
    "variation selector 16 after a letter": "\ufe0f",
    "variation selector 17": "\U000e0100",
    "private use": "\ue000",
}


@pytest.mark.parametrize("char", INVISIBLE.values(), ids=INVISIBLE.keys())
def test_an_invisible_character_is_shown_as_its_code_point(char: str) -> None:
    marker = f"[U+{ord(char):04X}]"
    text = f"rm{char}-rf"
    assert visible(text) == f"rm{marker}-rf"
    request = make_request(tool_name=text, description=text, args={text: text}, args_schema={})
    shown_in = (render_approval(request, run=RUN), render_full_args_modal(request, RUN)["blocks"])
    for blocks in shown_in:
        shown = [o["text"] for o in text_objects(blocks) if o["type"] == "mrkdwn"]
        assert all(char not in s for s in shown)
        assert sum(s.count(marker) for s in shown) >= 4  # tool name, description, arg, value


@pytest.mark.parametrize("emoji", EMOJI)
def test_an_emoji_grapheme_renders_unchanged(emoji: str) -> None:
    assert visible(emoji) == emoji
    assert emoji in inline_code(emoji, 50)
    assert emoji in code_block(emoji, 50)[0]
    assert emoji in quote(emoji, 50)[0]


def test_an_invisible_character_beside_an_emoji_is_still_marked() -> None:
    assert visible("👍\u200b") == "👍[U+200B]"
    assert visible("👍\u200d") == "👍[U+200D]"  # a joiner that joins nothing
    assert visible("🏴\U000e0041\U000e007f") == "🏴[U+E0041][U+E007F]"  # not a valid flag
    assert visible("👍" + "\U000e0100" * 3) == "👍" + "[U+E0100]" * 3  # smuggled data


GRAPHEMES = [
    "a",
    "&",
    "<",
    "`",
    "\n",
    "🇫🇷",
    "🇩🇪",
    "👨\u200d👩\u200d👧\u200d👦",
    "👍🏽",
    "e\u0301\u0323",
    "\u1100\u1161\u11a8",
    "1\ufe0f\u20e3",
    "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",
    "\u200b",
]
"""Whole graphemes whose concatenation splits only between them."""


def _unescape(text: str) -> str:
    text = _OUR_ZERO_WIDTH.sub("", text).replace("[U+200B]", "\u200b")
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _prefixes(graphemes: list[str]) -> set[str]:
    return {"".join(graphemes[:k]) for k in range(len(graphemes) + 1)}


@settings(max_examples=300, deadline=None)
@given(
    graphemes=st.lists(st.sampled_from(GRAPHEMES), max_size=30),
    limit=st.integers(min_value=20, max_value=120),
)
@example(graphemes=["a", "a", "a", "&", GRAPHEMES[12], "`", "`"], limit=20)  # found once:
# the zero-width space between two backticks was left at the end of a cut
def test_a_cut_keeps_every_grapheme_entity_and_marker_whole(
    graphemes: list[str], limit: int
) -> None:
    text = "".join(graphemes)
    prefixes = _prefixes(graphemes)
    cut, was_cut = truncate(text, limit)
    assert len(cut) <= limit
    assert _unescape(cut.removesuffix(ELLIPSIS) if was_cut else cut) in prefixes
    block, was_cut = code_block(text, limit)
    body = block[4:-4]
    assert len(block) <= limit
    assert _unescape(body.removesuffix(ELLIPSIS) if was_cut else body) in prefixes
    name = inline_code(text, limit)
    assert len(name) <= limit and name.count("`") == 2
    flat = name[1:-1].removesuffix(ELLIPSIS).replace("⏎", "\n").replace("[U+0060]", "`")
    assert _unescape(flat) in prefixes | {" "}
    quoted, was_cut = quote(text, limit)
    assert len(quoted) <= limit
    lines = [line.removeprefix("> ") for line in quoted.split("\n")] if quoted else []
    assert _unescape("\n".join(lines).removesuffix(ELLIPSIS)) in prefixes
    for piece in [b[4:-4] for b in split_code_blocks(text, limit)]:
        assert not re.search(r"&(?!amp;|lt;|gt;)|\[U\+[0-9A-F]*$", piece)
        assert regex.match(r"\p{M}|\p{Regional_Indicator}(?!\p{Regional_Indicator})", piece) is None


def test_a_grapheme_longer_than_the_limit_is_cut_between_code_points() -> None:
    zalgo = "Z" + "\u0301" * 5000
    block, cut = code_block(zalgo, 100)
    assert cut and block == "```\n" + ELLIPSIS + "\n```"  # no whole grapheme fits
    pieces = split_code_blocks(zalgo, 3000)
    assert "".join(p[4:-4] for p in pieces) == zalgo


def test_quote_pieces_fit_their_sections_and_budget() -> None:
    text = ("word " * 200 + "\n") * 30
    pieces, cut = quote_pieces(text, 9000, piece_chars=3000)
    assert cut and 8900 < sum(len(p) for p in pieces) <= 9000 and len(pieces) > 2
    assert all(len(p) <= 3000 for p in pieces)
    assert all(line.startswith("> ") for p in pieces for line in p.split("\n"))
    assert pieces[-1].endswith(ELLIPSIS)


def test_live_links_finds_explicit_links_and_bare_urls_unless_verbatim() -> None:
    text = "see https://x.io/a, www.y.io and mailto:a@b.io in `https://z.io` <https://w.io|w>"
    bare = ["https://x.io/a,", "www.y.io", "mailto:a@b.io", "https://z.io"]
    assert sorted(live_links(text)) == sorted([*bare, "<https://w.io|w>"])
    assert live_links(text, verbatim=True) == ["<https://w.io|w>"]
    assert live_links("&lt;https://x.io&gt; user@www.example") == ["https://x.io&gt;"]
    section = {"type": "section", "text": {"type": "mrkdwn", "text": "https://x.io"}}
    assert message_live_links("fallback https://f.io", [section]) == ["https://x.io"]
    assert message_live_links("no blocks https://f.io", []) == ["https://f.io"]


async def test_end_to_end_agent_text_stays_framed_and_nothing_unfurls(harness: Harness) -> None:
    text = hostile(PIECES)
    name = "note`\n```\n✅ *Pre-approved by Jane (DBA)*\n```\n`"
    run = await harness.start_run(
        {
            "tool_calls": [
                {"name": "execute_sql", "args": {"query": f"SELECT '{text}'", name: text}},
                {"name": "write_file", "args": {"path": "x.txt", "content": text}},
            ]
        }
    )
    sql, write = await harness.requests(run, count=2)
    await harness.reject(sql, text, user_id=DBA)
    view = await harness.open_modal(write, "respond", user_id=REVIEWER)
    await harness.sandbox.submit_view(
        view_id=view["id"], user_id=REVIEWER, values={ids.ANSWER_BLOCK: text}
    )
    await harness.finished(run)
    for card in (sql, write):
        await harness.decided_card(card)
    posts = [c for c in harness.sandbox.calls if c["method"].startswith("chat.")]
    sent = [c for c in posts if c["method"] in ("chat.postMessage", "chat.update")]
    assert len(sent) >= 6
    for call in posts:
        if call["method"] in ("chat.postMessage", "chat.update", "chat.postEphemeral"):
            assert call["args"].get("unfurl_links") is False, call
            assert call["args"].get("unfurl_media") is False, call
    product = {f"<@{DBA}>", f"<@{REVIEWER}>"}
    for call in sent:
        blocks = call["args"].get("blocks")
        blocks = json.loads(blocks) if isinstance(blocks, str) else blocks
        for obj in text_objects(blocks):
            assert obj.get("verbatim") is True or obj["type"] == "plain_text"
            if obj["type"] == "mrkdwn":
                assert_framed(obj["text"])
                assert_nothing_invisible(obj["text"])
                tokens = live_mentions(obj["text"])
                assert {t for t in tokens if not harness.is_card_link(t)} <= product
        # the product's own links are Slack's permalinks of its cards (the progress line)
        permalink = f"<{harness.sandbox.base_url}archives/"
        links = message_live_links(call["args"].get("text"), blocks)
        assert [link for link in links if not link.startswith(permalink)] == []
    assert any("Pre-approved" in json.dumps(c["args"], ensure_ascii=False) for c in sent)
    for opened in harness.sandbox.calls:
        if opened["method"] == "views.open":
            view_args = opened["args"]["view"]
            view_args = json.loads(view_args) if isinstance(view_args, str) else view_args
            assert message_live_links(None, view_args["blocks"]) == []


async def test_no_post_update_or_private_note_is_unfurled() -> None:
    sandbox = Sandbox(signing_secret=DEMO_SIGNING_SECRET, bot_token=DEMO_BOT_TOKEN)
    await sandbox.start()
    try:
        gateway = single_workspace(make_client(token=DEMO_BOT_TOKEN, base_url=sandbox.api_url))
        channel_id = sandbox.channel_id("general")
        sandbox.add_user(REVIEWER, "reviewer")
        blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "see https://x.io"}}]
        note, _ = quote("see https://x.io", 100)
        ts = await gateway.post_message(
            team_id=None, channel_id=channel_id, text="t", blocks=blocks
        )
        await gateway.update_message(
            team_id=None, channel_id=channel_id, ts=ts, text="t", blocks=blocks
        )
        await gateway.post_ephemeral(
            team_id=None, channel_id=channel_id, user_id=REVIEWER, text=note
        )
    finally:
        await sandbox.stop()
    calls = {c["method"]: c["args"] for c in sandbox.calls}
    for method in ("chat.postMessage", "chat.update", "chat.postEphemeral"):
        assert (calls[method]["unfurl_links"], calls[method]["unfurl_media"]) == (False, False)
    ephemeral = calls["chat.postEphemeral"]
    assert ephemeral["text"] == note
    assert message_live_links(ephemeral["text"], ephemeral["blocks"]) == []  # verbatim

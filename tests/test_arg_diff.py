"""What an edit changed, argument by argument (``bot.arg_diff``), and the card's context
(``bot.context_blocks``): pure rendering."""

from __future__ import annotations

import json

from agent_bridge.models import ApprovalRequest, Run
from agent_bridge.redaction import DEFAULT_REDACT, restore
from bot.arg_diff import arg_changes, diff_lines, render_changes
from bot.context_blocks import context_blocks

RUN = Run(
    run_id="run-1",
    thread_id="t-1",
    task="Tidy the docs",
    channel_id="C1",
    user_id="U0ALICE",
    thread_ts="1.000100",
    requester_name="Alice",
    thread_link="https://acme.slack.com/archives/C1/p1000100",
)


def request(**changes: object) -> ApprovalRequest:
    fields: dict[str, object] = {
        "request_id": "r1",
        "run_id": "run-1",
        "thread_id": "t-1",
        "interrupt_id": "i1",
        "tool_name": "write_file",
        "allowed_decisions": ["approve"],
        "channel_id": "C0APPROVAL",
    }
    return ApprovalRequest.model_validate({**fields, **changes})


def test_only_changed_added_and_removed_arguments_are_listed_in_order() -> None:
    changes = arg_changes({"a": 1, "b": "x", "c": True}, {"b": "y", "a": 1, "d": [1]})
    assert [(c.name, c.added, c.removed) for c in changes] == [
        ("b", False, False),
        ("d", True, False),
        ("c", False, True),
    ]
    assert arg_changes({"a": 1}, {"a": 1}) == []


def test_a_short_value_shows_as_minus_old_plus_new() -> None:
    (change,) = arg_changes({"path": "a.txt"}, {"path": "b.txt"})
    assert diff_lines(change) == ["- a.txt", "+ b.txt"]  # strings as text (arg_text)


def test_a_long_text_shows_only_the_changed_lines_with_one_line_of_context() -> None:
    old = "".join(f"row {i}\n" for i in range(100))
    (change,) = arg_changes({"content": old}, {"content": old.replace("row 50\n", "row L\n")})
    lines = diff_lines(change)
    assert "-row 50" in lines and "+row L" in lines
    assert " row 49" in lines and " row 51" in lines
    assert not any("row 10" in line for line in lines)


def test_changes_that_do_not_fit_are_counted_not_dropped_silently() -> None:
    before = {f"k{i}": "v" * 200 for i in range(40)}
    after = {f"k{i}": "w" * 200 for i in range(40)}
    text, cut = render_changes(arg_changes(before, after), 2000)
    assert cut and len(text) <= 2100
    assert "more arguments changed" in text


def test_no_change_is_said() -> None:
    assert render_changes([], 2000) == ("_No argument changed._", False)


def test_the_context_names_the_requester_as_text_and_links_the_run_only_from_elsewhere() -> None:
    blocks, cut = context_blocks(request(reason="Because you asked."), RUN)
    text = json.dumps(blocks)
    assert "Asked by Alice" in text and "<@" not in text
    assert "<https://acme.slack.com/archives/C1/p1000100|Open the run's thread>" in text
    assert "Because you asked." in text and not cut
    in_thread = request(channel_id="C1", thread_ts="1.000100")
    assert "Open the run's thread" not in json.dumps(context_blocks(in_thread, RUN)[0])


def test_a_link_that_could_leave_its_brackets_is_not_shown() -> None:
    run = RUN.model_copy(update={"thread_link": "https://x.io|<!channel>"})
    text = json.dumps(context_blocks(request(), run)[0])
    assert "x.io" not in text and "<!channel>" not in text


def test_a_requester_without_a_name_is_shown_by_id_never_mentioned() -> None:
    run = RUN.model_copy(update={"requester_name": None})
    text = json.dumps(context_blocks(request(), run)[0])
    assert "Asked by `U0ALICE`" in text and "<@U0ALICE>" not in text


def test_a_long_task_or_reason_is_cut_and_offers_the_full_text() -> None:
    run = RUN.model_copy(update={"task": "t" * 5000})
    assert context_blocks(request(), run)[1]
    assert context_blocks(request(reason="r" * 5000), RUN)[1]


def test_true_and_1_or_1_0_and_1_are_changes() -> None:
    """Python's ``==`` says ``True == 1 == 1.0``; a tool and its schema tell them apart,
    so an edit between them is a change on the card, and the edit form sends it."""
    changes = arg_changes(
        {"replicas": True, "ratio": 1, "tags": [0]}, {"replicas": 1, "ratio": 1.0, "tags": [False]}
    )
    assert [c.name for c in changes] == ["replicas", "ratio", "tags"]
    assert restore({"replicas": 1}, {"replicas": True}, DEFAULT_REDACT) == {"replicas": 1}
    assert restore({"replicas": True}, {"replicas": True}, DEFAULT_REDACT) == {"replicas": True}

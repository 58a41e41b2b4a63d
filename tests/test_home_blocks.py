"""The App Home view (pure): hostile agent text stays in its frame, secrets are masked,
the view fits Block Kit (checked by the sandbox's ``views.publish`` rules, slack_sdk
models), and a long inbox is cut with a count."""

from __future__ import annotations

import json

from agent_bridge.models import Decision
from agent_bridge.sql_risk import analyse
from bot import ids
from bot.home_blocks import HOME_REQUESTS_MAX, InboxItem, render_home, safe_link, short_args
from slack_sandbox import live_links, live_mentions
from slack_sandbox.api_home import check_home_view
from tests.test_store import make_request

HOSTILE = "<!channel> <@U0BOSS> <https://evil.example|click> ``` *bold*\nnext line"


def test_hostile_names_and_values_stay_in_their_code_spans() -> None:
    request = make_request("r1").model_copy(
        update={"tool_name": f"tool {HOSTILE}", "args": {HOSTILE: HOSTILE}, "created_at": 100.0}
    )
    view = render_home("U1", pending=[InboxItem(request, "https://x/y")], decided=[], now=160.0)
    assert check_home_view(view) == []
    section = view["blocks"][1]["text"]
    assert section["verbatim"] is True
    assert live_mentions(section["text"]) == []
    assert live_links(section["text"], verbatim=True) == []
    context = view["blocks"][2]["elements"][0]["text"]
    assert live_links(context, verbatim=True) == ["<https://x/y|Open the card>"]  # ours only
    assert "\n" not in section["text"].split("\n", 1)[1]  # a value's line break is ⏎
    assert "waiting 1 min" in json.dumps(view["blocks"][2])
    assert view["private_metadata"] == ids.home_metadata("U1")


def test_redacted_arguments_are_masked() -> None:
    request = make_request("r1").model_copy(
        update={"args": {"path": "a", "api_key": "sk-very-secret"}}
    )
    view = render_home("U1", pending=[InboxItem(request)], decided=[], now=0.0)
    assert "sk-very-secret" not in json.dumps(view)


def test_a_long_inbox_is_cut_and_counted_and_still_valid() -> None:
    items = [InboxItem(make_request(f"r{i}")) for i in range(HOME_REQUESTS_MAX + 5)]
    decided = [
        make_request(f"d{i}").model_copy(
            update={"decision": Decision(type="approve"), "decided_at": 1.0}
        )
        for i in range(10)
    ]
    view = render_home("U1", pending=items, decided=decided, now=0.0)
    assert check_home_view(view) == []
    assert f"newest {HOME_REQUESTS_MAX} of {HOME_REQUESTS_MAX + 5}" in json.dumps(view)
    assert json.dumps(view).count("Approved") == 10


def test_only_plain_links_are_linked() -> None:
    assert safe_link("https://sandbox.slack.com/archives/C1/p1") is not None
    for bad in ("javascript:x", "https://x|label", "https://x>y", None):
        assert safe_link(bad) is None
    assert short_args({"a": 1, "b": 2, "c": 3, "d": 4}).endswith("…")


def test_an_inbox_item_without_edit_says_why_as_its_card_does() -> None:
    withheld = make_request("r1").model_copy(
        update={"allowed_decisions": ["approve", "reject"], "edit_withheld": "shared_call_id"}
    )
    view = render_home("U1", pending=[InboxItem(withheld)], decided=[], now=0.0)
    assert check_home_view(view) == []
    assert "No Edit here" in view["blocks"][2]["elements"][0]["text"]
    plain = render_home("U1", pending=[InboxItem(make_request("r2"))], decided=[], now=0.0)
    assert "No Edit here" not in json.dumps(plain)


def test_a_sql_request_shows_its_risk_as_its_card_does() -> None:
    """An Approve from Home is the card's: a DBA reads what the statement would do there
    too, not only the start of its text (a DELETE after a CTE of 80 characters)."""
    sql = (
        "WITH recent AS (SELECT id, customer, total FROM orders WHERE created_at > "
        "'2025-01-01' AND total > 0) DELETE FROM orders"
    )
    risk = analyse(sql, dialect="sqlite", argument="query")
    items = [
        InboxItem(
            make_request(f"r{i}").model_copy(
                update={"tool_name": "execute_sql", "args": {"query": sql}, "risk": risk}
            )
        )
        for i in range(HOME_REQUESTS_MAX + 5)
    ]
    view = render_home("U1", pending=items, decided=[], now=0.0)
    assert check_home_view(view) == []
    first = json.dumps(view["blocks"][1:5])
    assert "Destructive" in first and "without WHERE" in first
    assert json.dumps(view).count("Destructive") == HOME_REQUESTS_MAX

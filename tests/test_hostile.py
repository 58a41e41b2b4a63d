"""Hostile and broken input, end to end: huge and numerous arguments, mention injection
in any agent text, unknown actions, stale buttons, a modal submitted twice. Every
message stays valid Block Kit (the harness fails a test on any sandbox violation).
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from agent_bridge import wording
from agent_bridge.models import ApprovalRequest, ApprovalState, RunState
from agent_bridge.scripted_model import DEMO_TASK
from bot import ids
from slack_sandbox import live_mentions
from slack_sandbox.delivery import payload_body
from tests.harness import DBA, REVIEWER, Harness
from tests.slack_bodies import card_click, submission_payload

HOSTILE = "<!channel> <!here> <!everyone> <@U123> <#C1> <!subteam^S1> <https://evil.example|ok>"
BIG = "0123456789" * 10_000  # 100 KB


def slack_text(harness: Harness) -> str:
    """Every argument of every Web API call the bot made, as one string."""
    return "\n".join(json.dumps(c["args"], ensure_ascii=False) for c in harness.sandbox.calls)


async def test_mentions_in_any_agent_text_are_never_live(harness: Harness) -> None:
    insert = f"INSERT INTO orders VALUES (9, '{HOSTILE}', 1, '2020-01-01')"
    run = await harness.start_run(
        {
            "tool_calls": [
                {"name": "execute_sql", "args": {"query": insert}},
                {"name": "write_file", "args": {"path": "x.txt", "content": HOSTILE}},
                {"name": "read_data", "args": {"table": "orders"}},
            ]
        }
    )
    sql, write = await harness.requests(run, count=2)
    await harness.click(sql, "approve", user_id=DBA)
    view = await harness.open_modal(write, "reject", user_id=REVIEWER)
    await harness.sandbox.submit_view(
        view_id=view["id"], user_id=REVIEWER, values={ids.REASON_BLOCK: HOSTILE}
    )
    done = await harness.finished(run)
    for card in (sql, write):
        await harness.decided_card(card)  # the reason shows there, redrawn after the ack
    assert HOSTILE in (done.final_answer or "")  # the data went everywhere ...
    sent = slack_text(harness)
    assert sent.count("&lt;!channel&gt;") >= 4  # card, result, reason, answer
    mentions = {m for m in live_mentions(sent) if not harness.is_card_link(m)}
    assert mentions <= {f"<@{REVIEWER}>", f"<@{DBA}>"}, mentions  # ... and stayed text


async def test_a_100_kb_argument_is_cut_on_the_card_and_whole_in_the_modal(
    harness: Harness,
) -> None:
    run = await harness.start_run(
        {"tool_calls": [{"name": "write_file", "args": {"path": "big.txt", "content": BIG}}]}
    )
    (write,) = await harness.requests(run, count=1)
    card = harness.sandbox.message(write.channel_id or "", write.message_ts or "")
    assert len(json.dumps(card["blocks"])) < 20_000
    await harness.sandbox.click(
        channel_id=write.channel_id or "",
        ts=write.message_ts or "",
        action_id=ids.VIEW_ARGS_ACTION,
        user_id=REVIEWER,
        value=write.request_id,
    )
    view = await harness.wait_for(lambda: _top(harness, REVIEWER))
    shown = "".join(b.get("text", {}).get("text", "") for b in view["blocks"])
    # Split across sections (each a code block), but every character is reachable.
    assert BIG in re.sub(r"[^0-9]", "", shown)
    await harness.click(write, "approve")
    await harness.finished(run)
    assert (harness.settings.workspace_dir / "files/big.txt").read_text() == BIG


NOT_RECORDED = (wording.STORE_SLOW_DECISION_TEXT, wording.STORE_DOWN_TEXT)


async def _click_again_while_told_not_recorded(
    harness: Harness, clicked: list[ApprovalRequest]
) -> None:
    """Once each click on ``clicked`` is answered (recorded, or told privately it was not:
    sixty at once can outlast the web's database deadline on a busy machine), click the
    ones told so again, as their reviewer would, until every one is recorded."""
    told = 0
    while clicked:
        (pending,) = await harness.wait_for(
            lambda c=clicked, t=told: _told_not_recorded(harness, c, t)  # type: ignore[misc]
        )
        told += len(pending)
        for request in pending:  # one at a time, as a reviewer clicks
            await harness.click(request, "approve")
        clicked = pending


async def _told_not_recorded(
    harness: Harness, clicked: list[ApprovalRequest], told_before: int
) -> tuple[list[ApprovalRequest]] | None:
    """The requests of ``clicked`` still pending (in a tuple: none is an answer too), once
    as many clicks were told they were not recorded since the first ``told_before`` such
    notes; else ``None``."""
    notes = harness.sandbox.ephemerals(user_id=REVIEWER)
    told = len([n for n in notes if any(t in n.get("text", "") for t in NOT_RECORDED)])
    current = [await harness.store.get_request(r.request_id) for r in clicked]
    pending = [r for r in current if r is not None and r.state == ApprovalState.PENDING]
    return (pending,) if told - told_before == len(pending) else None


async def test_sixty_gated_calls_in_one_turn(harness: Harness) -> None:
    calls = [
        {"name": "write_file", "args": {"path": f"f{i:02d}.txt", "content": f"{i}"}}
        for i in range(60)
    ]
    run = await harness.start_run({"tool_calls": calls})
    requests = await harness.requests(run, count=60)
    assert [r.index for r in requests] == list(range(60))
    await asyncio.gather(*(harness.click(r, "approve") for r in requests))
    await _click_again_while_told_not_recorded(harness, requests)
    done = await harness.finished(run)
    assert done.state == RunState.DONE
    for request in requests:
        await harness.decided_card(request)  # each click's last call, after its ack
    assert len(list((harness.settings.workspace_dir / "files").glob("f*.txt"))) == 60
    updates = [c for c in harness.sandbox.calls if c["method"] == "chat.update"]
    # Each card is redrawn once decided and once its call ran, and again when a redraw
    # finds its batch changed while drawing (clicks' redraws meet the results being
    # recorded): a few per card, never one per sibling (60 by 60).
    assert len(updates) <= 6 * 60 + 1


async def test_unknown_actions_and_stale_buttons_are_answered_privately(
    harness: Harness,
) -> None:
    run = await harness.start_run(
        {"tool_calls": [{"name": "write_file", "args": {"path": "a.txt", "content": "x"}}]}
    )
    (write,) = await harness.requests(run, count=1)
    unknown = card_click(harness.sandbox, write, "approval:frobnicate", user_id=DBA)
    status, _ = await harness.sandbox.post_signed(payload_body(unknown))
    assert status == 200
    assert await harness.wait_for(lambda: harness.ephemeral("no longer open"))
    await harness.click(write, "approve")
    await harness.finished(run)
    stale = card_click(harness.sandbox, write, ids.decision_action_id("approve"), user_id=DBA)
    status, _ = await harness.sandbox.post_signed(payload_body(stale))
    assert status == 200
    note = await harness.wait_for(lambda: harness.ephemeral("already decided"))
    assert note["user"] == DBA


async def test_a_modal_submitted_twice_records_once(harness: Harness) -> None:
    run = await harness.start_run(DEMO_TASK)
    _, sql = await harness.requests(run, count=2)
    view = await harness.open_modal(sql, "reject", user_id=DBA)

    def submission(reason: str) -> bytes:
        values = {ids.REASON_BLOCK: reason}
        return payload_body(submission_payload(view, user_id=DBA, values=values))

    first = await harness.sandbox.post_signed(submission("first"))
    second = await harness.sandbox.post_signed(submission("again"))
    assert first == (200, "")
    answer = json.loads(second[1])
    assert answer["response_action"] == "errors"
    assert "already decided" in answer["errors"][ids.REASON_BLOCK]
    stored = await harness.store.get_request(sql.request_id)
    assert stored is not None and stored.state == ApprovalState.DECIDED
    assert stored.decision is not None and stored.decision.message == "first"


async def _top(harness: Harness, user_id: str) -> dict[str, Any] | None:
    views = harness.sandbox.open_views(user_id)
    return views[-1] if views else None

"""End to end through the sandbox: the SQL risk and affected rows on posted cards, and
the approvals they need (issue 10, items 3, 4 and 9)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agent_bridge.settings import WorkerConfig
from bot import ids
from tests.harness import DBA, REVIEWER, Harness
from tests.test_sql_risk import HIDDEN_DELETE

FIXTURES = Path(__file__).parent / "fixtures"
SMALL_DELETE = "DELETE FROM orders WHERE created_at < '2024-01-01'"
"""Two of the demo database's five orders: a write, below the row threshold."""
WIDE_UPDATE = "UPDATE orders SET total = 0 WHERE total > 50"
"""Four of five orders: above the policy's threshold of 3 rows."""


@pytest.fixture
def agent_settings(settings: WorkerConfig) -> WorkerConfig:
    return settings.model_copy(update={"policy": FIXTURES / "sql_risk_policy.yml"})


def risk_line(harness: Harness, channel_id: str | None, ts: str | None) -> str:
    """The section right under the card's heading."""
    blocks: list[dict[str, Any]] = harness.sandbox.message(channel_id or "", ts or "")["blocks"]
    return str(blocks[1]["text"]["text"])


def orders(settings: WorkerConfig) -> int:
    with sqlite3.connect(settings.workspace_dir / "orders.db") as conn:
        return int(conn.execute("SELECT count(*) FROM orders").fetchone()[0])


async def test_cards_show_the_risk_and_rows_and_need_approvals_by_them(harness: Harness) -> None:
    calls = [
        {"name": "execute_sql", "args": {"query": query}}
        for query in (SMALL_DELETE, WIDE_UPDATE, HIDDEN_DELETE)
    ]
    run = await harness.start_run({"tool_calls": calls})
    small, wide, hidden = await harness.requests(run, count=3)

    line = risk_line(harness, small.channel_id, small.message_ts)
    assert line.startswith(":large_orange_circle: *SQL risk:* Writes data · DELETE")
    assert "Tables: `orders`" in line and "Affected rows: 2 (exact count)" in line
    assert small.rules.required_approvals == 1

    line = risk_line(harness, wide.channel_id, wide.message_ts)
    assert "Affected rows: 4 (exact count)" in line
    assert wide.rules.required_approvals == 2  # more than 3 rows

    line = risk_line(harness, hidden.channel_id, hidden.message_ts)
    card = harness.sandbox.message(hidden.channel_id or "", hidden.message_ts or "")
    shown = "\n".join(b.get("text", {}).get("text", "") for b in card["blocks"][2:])
    assert "DELETE FROM orders" not in shown  # the statement is cut on the card...
    assert ":red_circle: *SQL risk:* Destructive · DELETE" in line  # ...its risk is not
    assert "`DELETE orders` without WHERE" in line and "Affected rows: 5 (exact count)" in line
    assert hidden.rules.required_approvals == 2
    assert orders(harness.settings) == 5  # counting ran none of them

    await harness.sandbox.click(
        channel_id=hidden.channel_id or "",
        ts=hidden.message_ts or "",
        action_id=ids.VIEW_ARGS_ACTION,
        user_id=REVIEWER,
        value=hidden.request_id,
    )

    async def modal() -> dict[str, Any] | None:
        views = harness.sandbox.open_views(REVIEWER)
        return views[-1] if views else None

    view = await harness.wait_for(modal)
    assert "*SQL risk:* Destructive" in view["blocks"][1]["text"]["text"]

    for request in (small, wide, hidden):
        await harness.reject(request, "not today")
    await harness.finished(run)
    assert orders(harness.settings) == 5


async def test_the_second_approval_a_wide_update_needs_is_asked_for(harness: Harness) -> None:
    run = await harness.start_run(
        {"tool_calls": [{"name": "execute_sql", "args": {"query": WIDE_UPDATE}}]}
    )
    (wide,) = await harness.requests(run, count=1)
    assert (await harness.click(wide, "approve", user_id=REVIEWER))[0] == 200

    async def counted() -> bool:
        stored = await harness.store.get_request(wide.request_id)
        return bool(stored and stored.approved_by == [REVIEWER])

    await harness.wait_for(counted)
    stored = await harness.store.get_request(wide.request_id)
    assert stored is not None and stored.approvals_needed == 1
    await harness.click(stored, "approve", user_id=DBA)
    await harness.finished(run)
    with sqlite3.connect(harness.settings.workspace_dir / "orders.db") as conn:
        assert conn.execute("SELECT count(*) FROM orders WHERE total = 0").fetchone()[0] == 4

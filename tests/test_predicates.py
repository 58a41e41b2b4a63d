"""The ready-made ``when`` predicates: only risky calls are reviewed."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from agent_bridge.predicates import sql_is_not_read_only, writes_outside_workspace


def call(**args: str) -> SimpleNamespace:
    return SimpleNamespace(tool_call={"name": "t", "args": args, "id": "1"})


@pytest.mark.parametrize(
    ("path", "reviewed"),
    [
        ("notes.txt", False),
        ("archive/a.csv", False),
        ("a/../b.txt", False),
        ("../escape.txt", True),
        ("a/../../b", True),
        ("/etc/passwd", True),
        ("~/x", True),
        ("", True),
        ("..\\..\\win", True),
    ],
)
def test_writes_outside_workspace(path: str, reviewed: bool) -> None:
    assert writes_outside_workspace(call(path=path)) is reviewed


@pytest.mark.parametrize(
    ("query", "reviewed"),
    [
        ("SELECT * FROM orders", False),
        ("select id from orders where total > 10 union select 1", False),
        ("DELETE FROM orders", True),
        ("UPDATE orders SET total = 0", True),
        ("SELECT 1; DROP TABLE orders", True),
        ("WITH d AS (DELETE FROM orders RETURNING *) SELECT * FROM d", True),
        ("SELECT * INTO backup FROM orders", True),
        ("CREATE TABLE x (a INT)", True),
        ("this is not sql ((", True),
        ("/* /* */ DELETE FROM orders -- */ SELECT 1", True),  # SQLite does not nest comments
        ("", True),
    ],
)
def test_sql_is_not_read_only(query: str, reviewed: bool) -> None:
    assert sql_is_not_read_only(call(query=query)) is reviewed

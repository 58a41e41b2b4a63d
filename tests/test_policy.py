"""The policy file: what the demo policy gates, and how a broken one is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_bridge.errors import ConfigurationError
from agent_bridge.policy_file import load_policy


def test_demo_policy_gates_write_and_sql_not_read() -> None:
    kwargs = load_policy(None).middleware_kwargs()
    assert set(kwargs["interrupt_on"]) == {"write_file", "execute_sql", "ask_user"}
    assert kwargs["interrupt_on"]["ask_user"]["allowed_decisions"] == ["respond"]
    assert kwargs["interrupt_on"]["execute_sql"] == {
        "allowed_decisions": ["approve", "reject"],
        "description": "🚨 SQL execution requires DBA approval",
    }


def test_a_broken_policy_names_the_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "policy.yml"
    path.write_text("tools:\n  write_file:\n    allowed_decision: [approve]\n")
    with pytest.raises(ConfigurationError, match=r"(?s)policy.yml.*allowed_decision"):
        load_policy(path)

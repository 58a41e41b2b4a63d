"""The policy file: what the demo policy gates, and how a broken one is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_bridge.errors import ConfigurationError
from agent_bridge.models import ReviewRules, StartRules
from agent_bridge.policy import DEFAULT_MAX_ACTIVE_RUNS_PER_USER
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


def test_who_decides_keys_are_read_into_each_requests_rules(tmp_path: Path) -> None:
    path = tmp_path / "policy.yml"
    path.write_text(
        "requesters: [S0REQ, U0ALICE]\n"
        "max_active_runs_per_user: 3\n"
        "tools:\n"
        "  execute_sql:\n"
        "    channel: C0APPROVAL\n"
        "    approvers: [S0DBA]\n"
        "    required_approvals: 2\n"
        "    requester_may_approve: true\n"
        "    escalate_to: S0BACKUP\n"
        "    escalate_after_s: 600\n"
        "    review_timeout_s: 3600\n"
    )
    policy = load_policy(path)
    sql = policy.gated("execute_sql")
    assert sql is not None and sql.channel == "C0APPROVAL"
    assert sql.rules() == ReviewRules(
        approvers=("S0DBA",),
        required_approvals=2,
        requester_may_approve=True,
        escalate_to=("S0BACKUP",),
        escalate_after_s=600,
    )
    assert policy.start_rules() == StartRules(
        requesters=("S0REQ", "U0ALICE"), max_active_runs_per_user=3
    )
    defaults = load_policy(None).gated("write_file")
    assert defaults is not None and defaults.rules() == ReviewRules()  # anyone but the requester
    assert load_policy(None).max_active_runs_per_user == DEFAULT_MAX_ACTIVE_RUNS_PER_USER


@pytest.mark.parametrize(
    ("yaml_text", "line", "problem"),
    [
        ("tools:\n  execute_sql:\n    approver: [S0DBA]\n", 3, "tools.execute_sql.approver: Extra"),
        (
            "tools:\n  x:\n    approvers:\n      - S0DBA\n      - dba-team\n",
            5,
            "approvers.1: 'dba-team' is not a Slack user ID",
        ),
        (
            "tools:\n  x:\n    channel: '#approvals'\n",
            3,
            "channel: '#approvals' is not a Slack channel ID",
        ),
        ("tools:\n  x:\n    approvers: []\n", 3, "approvers: must name at least one"),
        (
            "tools:\n  x:\n    required_approvals: 0\n",
            3,
            "required_approvals: Input should be greater",
        ),
        (
            "tools:\n  x:\n    escalate_to: S0B\n",
            2,
            "tools.x: escalate_to and escalate_after_s go together",
        ),
        (
            "tools:\n  x:\n    escalate_to: S0B\n"
            "    escalate_after_s: 90\n    review_timeout_s: 60\n",
            2,
            "escalate_after_s (90) must be less than review_timeout_s (60)",
        ),
        (
            "\n\nmax_active_runs_per_user: 0\n",
            3,
            "max_active_runs_per_user: Input should be greater",
        ),
        ("requesters: [alice]\n", 1, "requesters.0: 'alice' is not a Slack user ID"),
        (
            "tools:\n  execute_sql:\n    approvers: [S0DBA]\n  execute_sql:\n    approvers: []\n",
            4,
            "execute_sql: given twice (first on line 2)",
        ),
        (
            "tools:\n  x:\n    approvers: [U1A]\n    approvers: [U2B]\n",
            4,
            "x.approvers: given twice",
        ),
        (
            "tools:\n  x:\n    approvers: [U0DBA, U0DBA]\n    required_approvals: 2\n",
            2,
            "approvers names only 1 person: no call could ever be approved",
        ),
        ("tools:\n  x:\n    required_approvals: true\n", 3, "required_approvals: Input should be"),
    ],
)
def test_a_bad_key_or_value_is_refused_with_its_name_and_line(
    tmp_path: Path, yaml_text: str, line: int, problem: str
) -> None:
    assert_refused(tmp_path, yaml_text, line=line, problem=problem)


def assert_refused(tmp_path: Path, yaml_text: str, *, line: int, problem: str) -> str:
    """Loading ``yaml_text`` as a policy file is refused, naming ``line`` and ``problem``;
    return the refusal."""
    path = tmp_path / "policy.yml"
    path.write_text(yaml_text)
    with pytest.raises(ConfigurationError) as refused:
        load_policy(path)
    assert f"line {line}, " in str(refused.value), str(refused.value)
    assert problem in str(refused.value), str(refused.value)
    return str(refused.value)


def test_the_python_api_is_the_same_policy() -> None:
    policy = load_policy("tests.policy_objects:DBA_POLICY")
    sql = policy.gated("execute_sql")
    assert sql is not None and sql.rules().escalate_to == ("S0BACKUP",)
    assert policy.start_rules().requesters == ("S0REQ",)
    with pytest.raises(ConfigurationError, match=r"names a dict, not an agent_bridge\.policy"):
        load_policy("tests.policy_objects:NOT_A_POLICY")

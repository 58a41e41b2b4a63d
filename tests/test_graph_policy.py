"""The policy of a compiled-graph agent (``graph_policy.policy_for_graph``): the graph
gates, the policy keeps only its Slack-side rules, and what contradicts the graph is
refused at start."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from agent_bridge.errors import ConfigurationError
from agent_bridge.graph_agent import discover
from agent_bridge.graph_policy import policy_for_graph
from agent_bridge.policy import Policy, ToolPolicy
from agent_bridge.policy_file import load_policy
from tests.compiled_agent import make_graph

GRAPH_POLICY = Path(__file__).parent / "fixtures" / "graph_policy.yml"
SHAPE = discover(make_graph("per_call"))
"""``send_email`` gated with approve and reject (per-call); ``lookup_customer`` not."""


def test_the_graphs_gating_replaces_the_policys_and_its_slack_rules_stay(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="agent_bridge.graph_policy"):
        policy = policy_for_graph(load_policy(GRAPH_POLICY), SHAPE)
    email = policy.gated("send_email")
    assert email is not None
    assert email.allowed_decisions == ["approve", "reject"]  # not the file's four
    assert email.approvers == ["U0DBA"]
    assert policy.interrupt_mode == "per_call"  # the graph's, the file says none
    assert policy.gated("lookup_customer") is None
    assert policy.posts_results("lookup_customer") == "all"
    assert "tools.send_email sets allowed_decisions, ignored" in caplog.text


def test_a_gated_tool_with_no_entry_gets_the_default_rules() -> None:
    policy = policy_for_graph(Policy(), SHAPE)
    email = policy.gated("send_email")
    assert email is not None and email.allowed_decisions == ["approve", "reject"]
    assert email.rules() == ToolPolicy().rules()


def test_an_entry_for_a_tool_the_graph_does_not_gate_is_refused() -> None:
    policy = Policy.model_validate({"tools": {"lookup_customer": {"approvers": ["U0DBA"]}}})
    with pytest.raises(ConfigurationError) as refused:
        policy_for_graph(policy, SHAPE)
    assert str(refused.value).startswith(
        "The policy gates lookup_customer, but the graph's HumanInTheLoopMiddleware does not "
        "(it gates send_email)."
    )


def test_an_entry_for_a_tool_the_graph_lacks_is_refused() -> None:
    policy = Policy.model_validate({"tools": {"drop_table": True}})
    with pytest.raises(ConfigurationError, match="The policy gates drop_table, but the graph"):
        policy_for_graph(policy, SHAPE)


@pytest.mark.parametrize("entry", [False, {"gated": False}])
def test_ungating_a_tool_the_graph_gates_is_refused(entry: object) -> None:
    policy = Policy.model_validate({"tools": {"send_email": entry}})
    with pytest.raises(ConfigurationError, match="says send_email is not gated, but the graph"):
        policy_for_graph(policy, SHAPE)


def test_an_interrupts_entry_named_like_a_tool_the_graph_gates_is_refused() -> None:
    """``Policy.gated`` reads ``interrupts`` first: its rules and all four decisions would
    apply to the tool's calls instead of the graph's gating."""
    policy = Policy.model_validate({"interrupts": {"send_email": {"approvers": ["U0DBA"]}}})
    with pytest.raises(ConfigurationError) as refused:
        policy_for_graph(policy, SHAPE)
    assert str(refused.value).startswith(
        "The policy names send_email under interrupts, but the graph's "
        "HumanInTheLoopMiddleware gates a tool of that name"
    )


def test_a_timeout_decision_the_graph_does_not_allow_is_refused() -> None:
    policy = Policy.model_validate(
        {"tools": {"send_email": {"review_timeout_s": 60, "on_timeout": "respond"}}}
    )
    with pytest.raises(ConfigurationError) as refused:
        policy_for_graph(policy, SHAPE)
    assert "tools.send_email: Value error, on_timeout 'respond' is not among" in str(refused.value)
    assert "allows approve, reject" in str(refused.value)


def test_the_policys_own_gating_keys_are_ignored_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    policy = Policy.model_validate(
        {
            "interrupt_mode": "batched",
            "tools": {"send_email": {"when": "tests.nowhere:never", "description": "Mail"}},
        }
    )
    with caplog.at_level(logging.WARNING, logger="agent_bridge.graph_policy"):
        applied = policy_for_graph(policy, SHAPE)
    assert applied.interrupt_mode == "per_call"
    email = applied.gated("send_email")
    assert email is not None and email.when is None and email.description is None
    assert "tools.send_email sets description, when, ignored" in caplog.text
    assert "the policy sets interrupt_mode, ignored" in caplog.text


def test_a_sql_block_naming_an_argument_the_graphs_tool_does_not_take_is_refused() -> None:
    policy = Policy.model_validate(
        {"tools": {"send_email": {"sql": {"argument": "query", "dialect": "sqlite"}}}}
    )
    with pytest.raises(ConfigurationError, match="'query', but send_email takes subject, to"):
        policy_for_graph(policy, SHAPE)

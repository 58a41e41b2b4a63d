"""End to end: a compiled graph as the agent (``AGENT=tests.compiled_agent:graph``).

The engineer's own ``create_agent`` graph (its model, system prompt, extra middleware
and ``HumanInTheLoopMiddleware`` configuration) run by a real worker on the real
PostgreSQL checkpointer, its cards in the sandbox Slack, decided by clicks, in both
interrupt modes and as a sub-agent (a node of a hand-built graph). The policy only says
who decides (``tests/fixtures/graph_policy.yml``). And ``examples/compiled_graph_agent.py``
as its docstring says.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_bridge.models import ApprovalState, RunState
from agent_bridge.settings import WorkerConfig
from bot import ids
from tests import compiled_agent
from tests.compiled_agent import EMAIL_DESCRIPTION, STAMP, SYSTEM_PROMPT
from tests.harness import DBA, Harness, decision_buttons

GRAPH_POLICY = Path(__file__).parent / "fixtures" / "graph_policy.yml"
REASON = "Invoice 2 was already paid."
WHY = "Ada asked for both invoices."
GRAPHS = {"batched": "graph", "per_call": "per_call_graph", "sub_agent": "sub_agent_graph"}
"""The graphs run: the agent in each interrupt mode, and as a sub-agent (a subgraph node)."""


@pytest.fixture(params=sorted(GRAPHS))
def agent_settings(request: pytest.FixtureRequest, settings: WorkerConfig) -> WorkerConfig:
    return settings.model_copy(
        update={"agent": f"tests.compiled_agent:{GRAPHS[request.param]}", "policy": GRAPH_POLICY}
    )


async def test_the_graph_runs_with_its_own_prompt_middleware_and_gating(
    harness: Harness, agent_settings: WorkerConfig
) -> None:
    name = agent_settings.agent.partition(":")[2]
    mode = "per_call" if name == "per_call_graph" else "batched"
    approved, rejected = f"Invoice 1 ({name})", f"Invoice 2 ({name})"
    task = {
        "tool_calls": [
            {"name": "lookup_customer", "args": {"name": "Ada"}},
            {"name": "send_email", "args": {"to": "ada@example.com", "subject": approved}},
            {"name": "send_email", "args": {"to": "ada@example.com", "subject": rejected}},
        ],
        "say": WHY,
    }
    run = await harness.start_run(task)
    cards = {r.args["subject"]: r for r in await harness.requests(run, count=2)}
    assert set(cards) == {approved, rejected}  # lookup_customer: not gated by the graph
    for request in cards.values():
        assert request.mode == mode and request.tool_name == "send_email"
        assert request.allowed_decisions == ["approve", "reject"]  # the graph's, not the policy's
        assert request.description == EMAIL_DESCRIPTION
        assert request.rules.approvers == (DBA,)  # the policy's Slack-side rule
        # the model's reason and the call's ID, read from the state of the graph that
        # raised the interrupt (a sub-agent's own, before its turn reaches the parent)
        assert request.reason == WHY and request.tool_call_id is not None
        message = harness.sandbox.message(request.channel_id or "", request.message_ts or "")
        assert decision_buttons(message) == [
            ids.decision_action_id(d) for d in ("approve", "reject")
        ]

    assert (await harness.click(cards[approved], "approve", user_id=DBA))[0] == 200
    await harness.reject(cards[rejected], REASON)
    done = await harness.finished(run)

    assert done.state == RunState.DONE
    assert compiled_agent.sent[approved] == 1 and compiled_agent.sent[rejected] == 0
    assert compiled_agent.prompts[json.dumps(task)] == SYSTEM_PROMPT
    results = await harness.tool_messages(run)  # read from the worker's checkpointer
    contents: dict[str, list[str]] = {}
    for m in results:
        contents.setdefault(m.name, []).append(m.content)
    assert contents["lookup_customer"] == [f"ada@example.com{STAMP}"]
    assert f"Sent {approved!r} to ada@example.com{STAMP}" in contents["send_email"]
    assert any(REASON in c for c in contents["send_email"])
    decided = await harness.store.requests_for_run(run.run_id)
    assert len(decided) == 2 and {r.state for r in decided} == {ApprovalState.APPLIED}

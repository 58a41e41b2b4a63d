"""A tool that never returns, bounded by ``STEP_TIMEOUT_S`` (LangGraph's
``step_timeout``): its step is cancelled, its run fails, its card says the call may have
run, and the worker's room it held is free for the next run. Refused with ``AGENT_URL``
(the Agent Server runs that graph), and against a graph's own different bound."""

from __future__ import annotations

import json

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from agent_bridge.agent import assemble_agent, build_agent, with_step_timeout
from agent_bridge.errors import ConfigurationError
from agent_bridge.models import RunState
from agent_bridge.policy_file import load_policy
from agent_bridge.scripted_model import ScriptedChatModel
from agent_bridge.settings import WorkerConfig
from agent_bridge.wording import run_failed_call_may_have_run_note
from tests.hanging_agent import (
    DELEGATE_TASK,
    GIVE_UP_TASK,
    HANG_TASK,
    HANGING_AGENT,
    HANGING_POLICY,
    NOTE_TASK,
    make_tools,
)
from tests.harness import Harness

STEP_TIMEOUT_S = 5.0
"""Far above a scripted model's turn (milliseconds, a busy 2-core machine's included), far
below the harness's waits."""


@pytest.fixture
def agent_settings(settings: WorkerConfig) -> WorkerConfig:
    """The hanging agent, one run at a time, its steps bounded."""
    return settings.model_copy(
        update={
            "agent": HANGING_AGENT,
            "policy": HANGING_POLICY,
            "step_timeout_s": STEP_TIMEOUT_S,
            "max_concurrent_runs": 1,
        }
    )


async def test_a_tool_that_never_returns_fails_its_run_and_frees_its_room(
    harness: Harness,
) -> None:
    hung = await harness.start_run(HANG_TASK)
    (hang,) = await harness.requests(hung, count=1)
    status, _ = await harness.click(hang, "approve")
    assert status == 200
    # The worker drives one run at a time: this one waits for the hung run's room.
    waiting = await harness.start_run(NOTE_TASK)

    failed = await harness.finished(hung)
    assert failed.state == RunState.FAILED
    assert "ran longer than its step_timeout (5 s" in (failed.error or "")

    closed = await harness.closed_and_drawn(hang)
    assert closed.note == run_failed_call_may_have_run_note(hung.run_id)
    card = json.dumps(harness.sandbox.message(closed.channel_id or "", closed.message_ts or ""))
    assert "may have run" in card

    (note,) = await harness.requests(waiting, count=1)
    status, _ = await harness.click(note, "approve")
    assert status == 200
    done = await harness.finished(waiting)
    assert done.state == RunState.DONE and "noted hello" in (done.final_answer or "")


@pytest.mark.parametrize("task", [GIVE_UP_TASK, DELEGATE_TASK], ids=["its_own", "a_sub_agents"])
async def test_a_tools_own_timeout_is_not_taken_for_the_bound(harness: Harness, task: str) -> None:
    """A tool's own ``TimeoutError``, or that of a sub-agent it runs with a
    ``step_timeout`` of its own (a review), is the tool's error, not the graph's bound."""
    run = await harness.start_run(task)
    failed = await harness.finished(run)
    assert failed.state == RunState.FAILED
    assert "TimeoutError" in (failed.error or "")
    assert "step_timeout" not in (failed.error or "")


def test_an_agent_server_graph_is_not_bounded_here(settings: WorkerConfig) -> None:
    deployed = settings.model_copy(
        update={"agent_url": "http://127.0.0.1:9", "step_timeout_s": STEP_TIMEOUT_S}
    )
    with pytest.raises(ConfigurationError, match="STEP_TIMEOUT_S is set, but AGENT_URL"):
        assemble_agent(
            settings=deployed, policy=load_policy(HANGING_POLICY), checkpointer=InMemorySaver()
        )


def test_a_graphs_own_bound_is_kept_or_must_agree(settings: WorkerConfig) -> None:
    graph = build_agent(
        tools=make_tools(settings),
        model=ScriptedChatModel(),
        policy=load_policy(HANGING_POLICY),
        checkpointer=None,
    )
    assert graph.step_timeout is None
    bounded = with_step_timeout(graph, 5.0, reference="mine")
    assert bounded.step_timeout == 5.0 and graph.step_timeout is None  # a copy
    assert with_step_timeout(bounded, None, reference="mine") is bounded
    assert with_step_timeout(bounded, 5.0, reference="mine") is bounded
    with pytest.raises(ConfigurationError, match="step_timeout=5 of its own"):
        with_step_timeout(bounded, 7.0, reference="mine")

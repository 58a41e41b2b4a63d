"""The run driver on graphs whose nodes call ``interrupt`` themselves (tests/interrupt_graphs.py),
with a real SQLite store and the notifier port's twin: each interrupt gets its cards
and is resumed by its ID with the answer in its own shape."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from agent_bridge.models import ApprovalRequest, ApprovalState, Decision, Run, RunState
from agent_bridge.policy import Policy
from agent_bridge.run_driver import RunDriver
from agent_bridge.store import ApprovalStore
from bot.testing import RecordingNotifier
from tests.interrupt_graphs import INBOX_ARGS, graph_of


@pytest.fixture
def store(sqlite_store: ApprovalStore) -> ApprovalStore:
    """This module's store: SQLite."""
    return sqlite_store


async def start(store: ApprovalStore, name: str) -> tuple[RunDriver, Run, RecordingNotifier]:
    notifier = RecordingNotifier(store)
    # A compiled graph is an AgentGraph at runtime, though not to mypy (its astream takes
    # typed keywords, the port's any **kwargs), as in tests/test_run_driver.py.
    graph: Any = graph_of(name, InMemorySaver())
    driver = RunDriver(
        store=store,
        graph=graph,
        notifier=notifier,
        policy=Policy(),
        args_schemas={},
    )
    run = await store.create_run(
        Run(run_id="run-1", thread_id="t-1", task="go", channel_id="C1", user_id="U1")
    )
    claimed = await store.claim_run(run.run_id, owner="w", lease_s=60, from_state=RunState.QUEUED)
    assert claimed is not None
    assert await driver.drive(claimed) == (RunState.WAITING, None)
    return driver, claimed, notifier


async def decide(store: ApprovalStore, request: ApprovalRequest, decision: Decision) -> None:
    await store.record_decision(request.request_id, decision, user_id="U2")


async def answers(driver: RunDriver, store: ApprovalStore, run: Run) -> dict[str, Any]:
    current = await store.get_run(run.run_id)
    assert current is not None
    state, answer = await driver.drive(current)
    assert state == RunState.DONE and answer is not None
    result: dict[str, Any] = json.loads(answer)
    return result


async def test_a_human_interrupt_is_resumed_with_its_human_response(store: ApprovalStore) -> None:
    driver, run, notifier = await start(store, "inbox")
    (request,) = await store.requests_for_run(run.run_id)
    assert [e for e, _ in notifier.events].count("card") == 1
    assert request.allowed_decisions == ["approve", "edit", "respond", "ignore"]
    await decide(store, request, Decision(type="ignore"))
    assert await answers(driver, store, run) == {"inbox": {"type": "ignore", "args": None}}
    applied = await store.get_request(request.request_id)
    assert applied is not None and applied.state == ApprovalState.APPLIED


async def test_a_human_interrupts_edit_reaches_the_graph_as_an_action_request(
    store: ApprovalStore,
) -> None:
    driver, run, _ = await start(store, "inbox")
    (request,) = await store.requests_for_run(run.run_id)
    edited = {**INBOX_ARGS, "subject": "Monthly report"}
    await decide(store, request, Decision(type="edit", edited_args=edited))
    assert await answers(driver, store, run) == {
        "inbox": {"type": "edit", "args": {"action": "send_email", "args": edited}}
    }


async def test_a_form_is_resumed_with_the_submitted_object(store: ApprovalStore) -> None:
    driver, run, _ = await start(store, "form")
    (request,) = await store.requests_for_run(run.run_id)
    assert request.mode == "json_schema"
    answer = {"environment": "staging", "replicas": 3}
    await decide(store, request, Decision(type="edit", edited_args=answer))
    assert await answers(driver, store, run) == {"form": answer}


async def test_two_parallel_branches_get_a_card_each_and_are_resumed_each_by_id(
    store: ApprovalStore,
) -> None:
    driver, run, notifier = await start(store, "parallel")
    left, right = sorted(await store.requests_for_run(run.run_id), key=lambda r: r.description)
    assert left.interrupt_id != right.interrupt_id
    assert [e for e, _ in notifier.events].count("card") == 2
    await decide(store, right, Decision(type="respond", message="R"))
    current = await store.get_run(run.run_id)
    assert current is not None
    assert await driver.drive(current) == (RunState.WAITING, None)
    now = {r.request_id: r.state for r in await store.requests_for_run(run.run_id)}
    assert now == {left.request_id: ApprovalState.PENDING, right.request_id: ApprovalState.APPLIED}
    # left's card is not posted again
    assert [e for e, _ in notifier.events].count("card") == 2
    await decide(store, left, Decision(type="respond", message="L"))
    assert await answers(driver, store, run) == {"left": "L", "right": "R"}


async def test_a_sub_graphs_interrupt_gets_its_card_and_is_resumed_by_id(
    store: ApprovalStore,
) -> None:
    driver, run, _ = await start(store, "subgraph")
    (request,) = await store.requests_for_run(run.run_id)
    assert request.mode == "plain_value"
    await decide(store, request, Decision(type="respond", message="eu-west"))
    assert await answers(driver, store, run) == {"plain": "eu-west"}

"""The run driver against a real LangGraph graph and a real SQLite store, with the
notifier port's in-memory twin: paths that are hard to provoke through Slack."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_config
from langgraph.constants import TAG_HIDDEN
from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, interrupt
from pydantic import TypeAdapter, ValidationError

from agent_bridge import review_wording
from agent_bridge.agent import build_agent, load_tools, when_rules_of
from agent_bridge.arguments import tool_args_schema
from agent_bridge.audit import read_events
from agent_bridge.bus import InProcessBus
from agent_bridge.errors import (
    ERROR_TEXT_MAX_CHARS,
    AgentServerUnavailableError,
    CheckpointUnavailableError,
    StoreUnavailableError,
    UndecidableCallError,
    error_text,
)
from agent_bridge.expiry import ExpiryKeeper
from agent_bridge.graph import AgentGraph, thread_config
from agent_bridge.lease import LeaseLost
from agent_bridge.message_text import message_text
from agent_bridge.models import (
    AlreadyDecided,
    ApprovalState,
    Decision,
    Run,
    RunState,
)
from agent_bridge.notifier import NotifyError
from agent_bridge.policy import Policy
from agent_bridge.policy_file import POLICIES_DIR, load_policy
from agent_bridge.progress import NoProgress
from agent_bridge.remote_agent import REFUSED_TITLE
from agent_bridge.run_driver import RunDriver
from agent_bridge.run_failure import RunFailures
from agent_bridge.scripted_model import ScriptedChatModel
from agent_bridge.store import ApprovalStore
from agent_bridge.wording import (
    run_failed_after_call_ran_note,
    run_failed_call_may_have_run_note,
    run_failed_note,
)
from agent_bridge.worker import CHECKPOINT_RETRIES, Worker
from bot.review_blocks import render_pointer
from bot.testing import RecordingNotifier
from tests.clocks import ManualClock
from tests.graph_wrappers import ResumeInterceptor
from tests.harness import agent_config
from tests.interrupt_graphs import State, human_interrupt


@pytest.fixture
def store(sqlite_store: ApprovalStore) -> ApprovalStore:
    """This module's store: SQLite."""
    return sqlite_store


def driver_for(
    store: ApprovalStore,
    tmp_path: Path,
    notifier: RecordingNotifier,
    schemas: dict[str, dict[str, Any]],
    policy_path: Path = POLICIES_DIR / "per_call.yml",
    checkpointer: InMemorySaver | None = None,
) -> tuple[RunDriver, CompiledStateGraph[Any, Any, Any, Any]]:
    """A driver of the agent graph (per-call unless ``policy_path`` says otherwise), and
    that compiled graph, for a test to call beyond what the driver's ``AgentGraph`` port
    offers; on ``checkpointer`` (a new one by default)."""
    settings = agent_config(tmp_path / "ws")
    policy = load_policy(policy_path)
    # build_agent returns Any: a compiled graph is an AgentGraph at runtime, though not to
    # mypy (its astream takes typed keywords, the port's any **kwargs).
    graph = build_agent(
        tools=load_tools(settings),
        model=ScriptedChatModel(),
        policy=policy,
        checkpointer=checkpointer or InMemorySaver(),
    )
    driver = RunDriver(
        store=store,
        graph=graph,
        notifier=notifier,
        policy=policy,
        args_schemas=schemas,
        when_rules=when_rules_of(graph),
    )
    return driver, graph


async def new_run(store: ApprovalStore, task: str) -> Run:
    run = await store.create_run(
        Run(run_id="run-1", thread_id="t-1", task=task, channel_id="C1", user_id="U1")
    )
    claimed = await store.claim_run(run.run_id, owner="w", lease_s=60, from_state=RunState.QUEUED)
    assert claimed is not None
    return claimed


def worker_for(store: ApprovalStore, driver: RunDriver, notifier: RecordingNotifier) -> Worker:
    """A worker advancing runs with ``driver``, failures told through ``notifier``."""
    return Worker(
        store=store,
        bus=InProcessBus(),
        driver=driver,
        failures=RunFailures(store=store, notifier=notifier),
    )


WRITE_TASK = '{"tool_calls": [{"name": "write_file", "args": {"path": "a.txt", "content": "x"}}]}'
SERVER_GONE = "the server closed the connection unexpectedly"


async def an_approved_write(store: ApprovalStore, tmp_path: Path) -> tuple[RunDriver, Worker, Run]:
    """A driver, its worker, and a run paused on one ``write_file`` call, approved and
    released ``waiting`` (the next advance resumes it)."""
    notifier = RecordingNotifier(store)
    driver, _ = driver_for(store, tmp_path, notifier, {})
    run = await new_run(store, WRITE_TASK)
    state, _ = await driver.drive(run)
    await store.release_run(run.run_id, owner="w", state=state, drives_in_a_row=0)  # went through
    (request,) = await store.requests_for_run(run.run_id)
    await store.record_decision(request.request_id, Decision(type="approve"), user_id="U2")
    return driver, worker_for(store, driver, notifier), run


def raise_at_each_resume(driver: RunDriver, exc: Exception) -> list[Command[Any]]:
    """Make each resume of ``driver``'s graph yield a chunk, then raise ``exc``.

    Returns:
        The resumes' commands, appended as each resume starts (their count: the times
        the approved tool could have run).
    """
    resumes: list[Command[Any]] = []

    async def raising(command: Command[Any]) -> AsyncIterator[Any]:
        resumes.append(command)
        yield {"messages": []}
        raise exc

    driver.graph = ResumeInterceptor(driver.graph, on_resume=raising)
    return resumes


def refuse_requeues(store: ApprovalStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every release of a run back to ``queued`` fail as an outage would; the
    store's other releases go through."""
    released = store.release_run

    async def requeue_fails(run_id: str, **kwargs: Any) -> None:
        if kwargs["state"] == RunState.QUEUED:
            raise StoreUnavailableError("the database system is in recovery mode")
        await released(run_id, **kwargs)

    monkeypatch.setattr(store, "release_run", requeue_fails)


async def drive_after_each_lease(
    store: ApprovalStore, worker: Worker, run: Run, *, drives: int
) -> ManualClock:
    """Advance the waiting ``run``, then ``drives`` times more, each once the lease
    before it has expired (the store's clock moved past it). Returns that clock."""
    clock = ManualClock(store.clock())
    store.clock = clock
    await worker.advance(run.run_id, RunState.WAITING)
    for _ in range(drives):
        clock.now += worker.lease_s + 1  # the lease left to expire has
        await worker.advance(run.run_id, RunState.QUEUED)
    return clock


async def test_an_answer_the_graph_refuses_goes_back_to_pending(
    store: ApprovalStore, tmp_path: Path
) -> None:
    notifier = RecordingNotifier(store)
    # Our own check is as loose as a JSON-schema tool's; LangGraph's is the tool's own.
    driver, _ = driver_for(store, tmp_path, notifier, {"write_file": {"type": "object"}})
    run = await new_run(
        store, '{"tool_calls": [{"name": "write_file", "args": {"path": "a.txt", "content": "x"}}]}'
    )
    assert await driver.drive(run) == (RunState.WAITING, None)
    (request,) = await store.requests_for_run(run.run_id)
    await store.record_decision(
        request.request_id,
        Decision(type="edit", edited_args={"path": 7, "content": "x"}),
        user_id="U2",
    )

    assert await driver.drive(await store.get_run(run.run_id)) == (RunState.WAITING, None)
    reopened = await store.get_request(request.request_id)
    assert reopened is not None and reopened.state == ApprovalState.PENDING
    assert reopened.note and reopened.note.startswith("the agent refused the answer (Validation")
    assert [e for e, _ in notifier.events].count("updated") == 1
    assert not (tmp_path / "ws/files/a.txt").exists()

    await store.record_decision(request.request_id, Decision(type="approve"), user_id="U2")
    state, answer = await driver.drive(await store.get_run(run.run_id))
    assert state == RunState.DONE and answer and "Wrote 1 characters to a.txt" in answer
    applied = await store.get_request(request.request_id)
    assert applied is not None and applied.state == ApprovalState.APPLIED


async def test_an_edit_on_a_card_drawn_before_its_edit_was_withheld_is_not_sent(
    store: ApprovalStore, tmp_path: Path
) -> None:
    """A batched card posted before ``edit_withheld`` existed offered Edit on a call
    whose ID another call of its turn has; an edit recorded there would run in place of
    both calls. The drive reopens it as the call is now, without Edit, and says why."""
    notifier = RecordingNotifier(store)
    driver, _ = driver_for(store, tmp_path, notifier, {}, POLICIES_DIR / "demo.yml")
    shared = {
        "tool_calls": [
            {"name": "write_file", "args": {"path": "a.txt", "content": "x"}, "id": "dup"},
            {"name": "read_data", "args": {"table": "orders"}, "id": "dup"},
        ]
    }
    run = await new_run(store, json.dumps(shared))
    assert await driver.drive(run) == (RunState.WAITING, None)
    (request,) = await store.requests_for_run(run.run_id)
    assert request.edit_withheld == "shared_call_id"
    await store.db.execute(  # as the card was stored before: Edit offered
        "UPDATE approval_requests SET allowed_decisions = :allowed, edit_withheld = NULL",
        {"allowed": json.dumps(["approve", "edit", "reject", "respond"])},
    )
    edit = Decision(type="edit", edited_args={"path": "b.txt", "content": "y"})
    await store.record_decision(request.request_id, edit, user_id="U2")

    assert await driver.drive(await store.get_run(run.run_id)) == (RunState.WAITING, None)
    reopened = await store.get_request(request.request_id)
    assert reopened is not None and reopened.state == ApprovalState.PENDING
    assert reopened.note == review_wording.DECISION_UNOFFERED_NOTE
    assert reopened.edit_withheld == "shared_call_id"
    assert "edit" not in reopened.allowed_decisions
    assert not (tmp_path / "ws/files/b.txt").exists()
    assert not (tmp_path / "ws/files/a.txt").exists()


WRITE_A = '{"tool_calls": [{"name": "write_file", "args": {"path": "a.txt", "content": "x"}}]}'
ALL_FOUR = "allowed_decisions: [approve, edit, reject, respond]"


PREDICATES = "agent_bridge.predicates"


def broken_rule(request: Any) -> bool:
    """A ``when`` rule that raises (it reads an argument the call does not have)."""
    return bool(request.tool_call["args"]["mode"])


def still_asks(request: Any) -> bool:
    """A ``when`` rule that asks about every call."""
    return True


def base_policy(mode: str) -> Path:
    """The demo policy in ``mode`` (``write_file`` allowing all four decisions)."""
    return POLICIES_DIR / ("demo.yml" if mode == "batched" else "per_call.yml")


def deployed(
    store: ApprovalStore,
    tmp_path: Path,
    notifier: RecordingNotifier,
    graph: CompiledStateGraph[Any, Any, Any, Any],
    policy_text: str,
) -> RunDriver:
    """The driver of a worker restarted with the policy ``policy_text`` (a deploy): its
    middleware built from it, on ``graph``'s checkpoints."""
    path = tmp_path / "deployed.yml"
    path.write_text(policy_text)
    assert isinstance(graph.checkpointer, InMemorySaver)
    schemas = {t.name: tool_args_schema(t) for t in load_tools(agent_config(tmp_path / "ws"))}
    driver, _ = driver_for(store, tmp_path, notifier, schemas, path, graph.checkpointer)
    return driver


@pytest.mark.parametrize("mode", ["batched", "per_call"])
async def test_a_decision_a_deploy_took_away_is_reopened_not_sent(
    store: ApprovalStore, tmp_path: Path, mode: str
) -> None:
    """The worker restarts with a policy that no longer allows Edit on ``write_file``;
    an Edit made on the card drawn before is not sent (the middleware checks each
    decision against its configuration as it is now: batched, it would raise and fail
    the run; per call, LangGraph would refuse it and the card would offer Edit again).
    The drive reopens it without Edit, and an Approve then runs the call."""
    notifier = RecordingNotifier(store)
    driver, graph = driver_for(store, tmp_path, notifier, {}, base_policy(mode))
    run = await new_run(store, WRITE_A)
    assert await driver.drive(run) == (RunState.WAITING, None)
    (request,) = await store.requests_for_run(run.run_id)
    assert "edit" in request.allowed_decisions
    edit = Decision(type="edit", edited_args={"path": "b.txt", "content": "y"})
    await store.record_decision(request.request_id, edit, user_id="U2")

    without_edit = (
        base_policy(mode)
        .read_text()
        .replace(ALL_FOUR, "allowed_decisions: [approve, reject, respond]")
    )
    driver = deployed(store, tmp_path, notifier, graph, without_edit)
    assert await driver.drive(await store.get_run(run.run_id)) == (RunState.WAITING, None)
    reopened = await store.get_request(request.request_id)
    assert reopened is not None and reopened.state == ApprovalState.PENDING
    assert reopened.note == review_wording.DECISION_UNOFFERED_NOTE
    assert reopened.allowed_decisions == ["approve", "reject", "respond"]
    assert not (tmp_path / "ws/files/b.txt").exists()

    await store.record_decision(request.request_id, Decision(type="approve"), user_id="U2")
    state, answer = await driver.drive(await store.get_run(run.run_id))
    assert state == RunState.DONE and answer and "Wrote 1 characters to a.txt" in answer
    assert not (tmp_path / "ws/files/b.txt").exists()


@pytest.mark.parametrize("mode", ["batched", "per_call"])
async def test_a_call_offers_what_a_deploy_allows_now_not_only_what_both_allowed(
    store: ApprovalStore, tmp_path: Path, mode: str
) -> None:
    """``[approve, edit]`` became ``[approve, reject]``: the reopened card offers Reject,
    which the middleware now takes, and a Reject made there is applied."""
    notifier = RecordingNotifier(store)
    before = tmp_path / "before.yml"
    before.write_text(
        base_policy(mode).read_text().replace(ALL_FOUR, "allowed_decisions: [approve, edit]")
    )
    driver, graph = driver_for(store, tmp_path, notifier, {}, before)
    run = await new_run(store, WRITE_A)
    assert await driver.drive(run) == (RunState.WAITING, None)
    (request,) = await store.requests_for_run(run.run_id)
    assert request.allowed_decisions == ["approve", "edit"]
    edit = Decision(type="edit", edited_args={"path": "b.txt", "content": "y"})
    await store.record_decision(request.request_id, edit, user_id="U2")

    now = before.read_text().replace(
        "allowed_decisions: [approve, edit]", "allowed_decisions: [approve, reject]"
    )
    driver = deployed(store, tmp_path, notifier, graph, now)
    assert await driver.drive(await store.get_run(run.run_id)) == (RunState.WAITING, None)
    reopened = await store.get_request(request.request_id)
    assert reopened is not None and reopened.allowed_decisions == ["approve", "reject"]

    await store.record_decision(request.request_id, Decision(type="reject"), user_id="U2")
    state, _ = await driver.drive(await store.get_run(run.run_id))
    assert state == RunState.DONE
    rejected = await store.get_request(request.request_id)
    assert rejected is not None and rejected.state == ApprovalState.APPLIED
    assert not (tmp_path / "ws/files/a.txt").exists()
    assert not (tmp_path / "ws/files/b.txt").exists()


UNGATED = (f"write_file:\n    {ALL_FOUR}\n", "write_file: false\n")
WHEN_ADDED = (
    f"write_file:\n    {ALL_FOUR}\n",
    f"write_file:\n    {ALL_FOUR}\n    when: {PREDICATES}:writes_outside_workspace\n",
)
"""Deploys after which the middleware no longer gates the waiting ``write_file`` of
``a.txt`` (a write inside the workspace): the tool is not gated, or its ``when`` rule
lets the call through."""
EVERY_DECISION = [
    Decision(type="approve"),
    Decision(type="reject"),
    Decision(type="edit", edited_args={"path": "b.txt", "content": "y"}),
    Decision(type="respond", message="use b.txt"),
]


async def decided_then_deployed(
    store: ApprovalStore, tmp_path: Path, mode: str, decision: Decision, change: tuple[str, str]
) -> tuple[RunDriver, Run]:
    """A run paused on ``write_file`` (``a.txt``), ``decision`` recorded on it, and the
    driver of a worker restarted with the policy ``change`` made (old text, new text)."""
    notifier = RecordingNotifier(store)
    driver, graph = driver_for(store, tmp_path, notifier, {}, base_policy(mode))
    run = await new_run(store, WRITE_A)
    assert await driver.drive(run) == (RunState.WAITING, None)
    (request,) = await store.requests_for_run(run.run_id)
    await store.record_decision(request.request_id, decision, user_id="U2")
    now = base_policy(mode).read_text().replace(*change)
    assert now != base_policy(mode).read_text()
    return deployed(store, tmp_path, notifier, graph, now), await store.get_run(run.run_id)


@pytest.mark.parametrize("decision", EVERY_DECISION, ids=lambda d: d.type)
@pytest.mark.parametrize(
    ("mode", "change", "why"),
    [
        ("batched", UNGATED, "no longer gates"),
        ("per_call", UNGATED, "no longer gates"),
        ("batched", WHEN_ADDED, "now lets it through"),
        ("per_call", WHEN_ADDED, "now lets it through"),
        (
            "per_call",
            ("interrupt_mode: per_call", "interrupt_mode: batched"),
            "reviews calls batched",
        ),
        (
            "batched",
            ("interrupt_mode: batched", "interrupt_mode: per_call"),
            "reviews calls per_call",
        ),
    ],
    ids=[
        "ungated-batched",
        "ungated-per-call",
        "when-added-batched",
        "when-added-per-call",
        "per-call-to-batched",
        "batched-to-per-call",
    ],
)
async def test_a_decision_a_deploy_would_ignore_stops_the_run_before_the_call_runs(
    store: ApprovalStore,
    tmp_path: Path,
    mode: str,
    change: tuple[str, str],
    why: str,
    decision: Decision,
) -> None:
    """A deploy stopped gating ``write_file``, changed ``interrupt_mode``, or gave it a
    ``when`` rule that lets this call (a write inside the workspace) through, while a
    decision waited to be sent: the middleware would run the call as proposed anyway
    (LangChain asks the rule again on resume) or ask about it again, so the drive stops
    the run, saying why, and nothing is written. An Approve too: the middleware would
    not take it for this call (batched, it matches the turn's decisions to its gated
    calls by position; per call, a later ``interrupt()`` of the tool's task takes the
    interrupt's ID), so what it would be given to is not what the reviewer saw."""
    driver, run = await decided_then_deployed(store, tmp_path, mode, decision, change)
    with pytest.raises(UndecidableCallError, match=why):
        await driver.drive(run)
    assert not (tmp_path / "ws/files/a.txt").exists()
    assert not (tmp_path / "ws/files/b.txt").exists()
    (still,) = await store.requests_for_run(run.run_id)
    assert still.state == ApprovalState.DECIDED  # not marked applied: it was not


async def test_decisions_a_deploy_would_shift_onto_other_calls_of_the_turn_are_not_sent(
    store: ApprovalStore, tmp_path: Path
) -> None:
    """One turn: write ``a.txt`` (approved), ``DELETE FROM orders`` (rejected), read
    ``orders`` (not gated). A deploy stops gating ``write_file`` and gates ``read_data``:
    LangChain's batched middleware would gather two gated calls against the two
    decisions and give them by position (the Approve to the DELETE, the Reject to the
    read), without raising. The drive stops the run first: no tool of the turn runs."""
    notifier = RecordingNotifier(store)
    driver, graph = driver_for(store, tmp_path, notifier, {}, base_policy("batched"))
    task = json.dumps(
        {
            "tool_calls": [
                {"name": "write_file", "args": {"path": "a.txt", "content": "x"}},
                {"name": "execute_sql", "args": {"query": "DELETE FROM orders"}},
                {"name": "read_data", "args": {"table": "orders"}},
            ]
        }
    )
    run = await new_run(store, task)
    assert await driver.drive(run) == (RunState.WAITING, None)
    write, sql = await store.requests_for_run(run.run_id)
    assert (write.tool_name, sql.tool_name) == ("write_file", "execute_sql")
    await store.record_decision(write.request_id, Decision(type="approve"), user_id="U2")
    await store.record_decision(sql.request_id, Decision(type="reject"), user_id="U3")

    now = base_policy("batched").read_text().replace(*UNGATED)
    now = now.replace("read_data: false", "read_data: true")
    assert "read_data: true" in now
    driver = deployed(store, tmp_path, notifier, graph, now)
    with pytest.raises(UndecidableCallError, match="no longer gates"):
        await driver.drive(await store.get_run(run.run_id))
    state = await graph.aget_state({"configurable": {"thread_id": run.thread_id}})
    assert not [m for m in state.values["messages"] if isinstance(m, ToolMessage)]
    assert not (tmp_path / "ws/files/a.txt").exists()
    with sqlite3.connect(tmp_path / "ws/orders.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM orders").fetchone()[0] > 0


async def rejected_then_deployed(
    store: ApprovalStore, tmp_path: Path, mode: str, rule: str
) -> tuple[RunDriver, Run]:
    """A run paused on ``write_file`` (``a.txt``), rejected, and the driver of a worker
    restarted with the ``when`` rule ``rule`` (``module:attr``) added to the tool."""
    with_rule = (
        f"write_file:\n    {ALL_FOUR}\n",
        f"write_file:\n    {ALL_FOUR}\n    when: {rule}\n",
    )
    return await decided_then_deployed(store, tmp_path, mode, Decision(type="reject"), with_rule)


@pytest.mark.parametrize("mode", ["batched", "per_call"])
async def test_a_when_rule_that_raises_on_the_check_is_left_to_langchain(
    store: ApprovalStore, tmp_path: Path, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A rule that raises on the driver's check (it may read what the check's request
    lacks) does not stop the run: the resume goes on, and LangChain's own call of it
    decides (here it raises too: the run fails, nothing is written). Its text, which
    may repeat the call's arguments, is not logged."""
    driver, run = await rejected_then_deployed(store, tmp_path, mode, f"{__name__}:broken_rule")
    with caplog.at_level(logging.WARNING, logger="agent_bridge.when_rules"):
        with pytest.raises(Exception, match="mode"):
            await driver.drive(run)
    logged = [record.getMessage() for record in caplog.records]
    assert logged and all("raised KeyError" in m and "'mode'" not in m for m in logged)
    assert not (tmp_path / "ws/files/a.txt").exists()


@pytest.mark.parametrize("mode", ["batched", "per_call"])
async def test_a_when_rule_a_deploy_added_that_still_asks_takes_the_rejection(
    store: ApprovalStore, tmp_path: Path, mode: str
) -> None:
    """The rule a deploy added still asks about the waiting call: the Reject is sent and
    taken, the run ends, nothing is written (no false stop of a run the rule reviews)."""
    driver, run = await rejected_then_deployed(store, tmp_path, mode, f"{__name__}:still_asks")
    state, _ = await driver.drive(run)
    assert state == RunState.DONE
    (rejected,) = await store.requests_for_run(run.run_id)
    assert rejected.state == ApprovalState.APPLIED
    assert not (tmp_path / "ws/files/a.txt").exists()


WRITE_AND_READ = json.dumps(
    {
        "tool_calls": [
            {"name": "write_file", "args": {"path": "a.txt", "content": "x"}},
            {"name": "read_data", "args": {"table": "orders"}},
        ]
    }
)


async def test_a_deploy_gating_another_call_of_a_waiting_turn_stops_the_run_before_any_runs(
    store: ApprovalStore, tmp_path: Path
) -> None:
    """The turn wrote ``a.txt`` (gated) and read ``orders`` (not); while the Reject
    waited, a deploy gated ``read_data`` too. LangChain's batched middleware gathers two
    gated calls against one decision and raises before any tool of the turn runs: the
    drive stops the run saying why, and no answer counts as sent (the cards say the
    calls will not run, not that they may have)."""
    notifier = RecordingNotifier(store)
    driver, graph = driver_for(store, tmp_path, notifier, {}, base_policy("batched"))
    run = await new_run(store, WRITE_AND_READ)
    assert await driver.drive(run) == (RunState.WAITING, None)
    (request,) = await store.requests_for_run(run.run_id)
    assert request.tool_name == "write_file"
    await store.record_decision(request.request_id, Decision(type="reject"), user_id="U2")

    now = base_policy("batched").read_text().replace("read_data: false", "read_data: true")
    assert now != base_policy("batched").read_text()
    driver = deployed(store, tmp_path, notifier, graph, now)
    with pytest.raises(UndecidableCallError, match=r"refused this turn's decisions"):
        await driver.drive(await store.get_run(run.run_id))
    assert driver.answers_sent(run.run_id) == frozenset()
    assert not (tmp_path / "ws/files/a.txt").exists()
    state = await graph.aget_state({"configurable": {"thread_id": run.thread_id}})
    assert not [m for m in state.values["messages"] if isinstance(m, ToolMessage)]


def absolute_by_config(request: Any) -> bool:
    """Review absolute paths; reads LangGraph's ``get_config()``, which works inside the
    middleware's node and raises outside a run (the driver's check)."""
    assert get_config()["configurable"]["thread_id"]
    return str(request.tool_call["args"]["path"]).startswith("/")


async def test_a_rule_raising_on_the_check_leaves_the_call_to_langchain(
    store: ApprovalStore, tmp_path: Path
) -> None:
    """No deploy: the rule gates the absolute path and lets the relative one through, and
    raises on the driver's check (outside a run): not known, so the run goes on and
    LangChain's own check decides: the Reject is taken, the relative write runs
    unreviewed, the absolute one does not."""
    policy = tmp_path / "rule.yml"
    policy.write_text(
        base_policy("batched")
        .read_text()
        .replace(
            f"write_file:\n    {ALL_FOUR}\n",
            f"write_file:\n    {ALL_FOUR}\n    when: {__name__}:absolute_by_config\n",
        )
    )
    notifier = RecordingNotifier(store)
    driver, _ = driver_for(store, tmp_path, notifier, {}, policy)
    task = json.dumps(
        {
            "tool_calls": [
                {"name": "write_file", "args": {"path": "/abs.txt", "content": "x"}},
                {"name": "write_file", "args": {"path": "rel.txt", "content": "y"}},
            ]
        }
    )
    run = await new_run(store, task)
    assert await driver.drive(run) == (RunState.WAITING, None)
    (request,) = await store.requests_for_run(run.run_id)
    assert request.args["path"] == "/abs.txt"
    await store.record_decision(request.request_id, Decision(type="reject"), user_id="U2")
    state, _ = await driver.drive(await store.get_run(run.run_id))
    assert state == RunState.DONE
    assert (tmp_path / "ws/files/rel.txt").exists()
    assert not (tmp_path / "ws/files/abs.txt").exists()


async def test_a_reopened_call_takes_the_time_limit_a_deploy_set(
    store: ApprovalStore, tmp_path: Path
) -> None:
    """A deploy took ``reject``, the time limit's decision, away (``on_timeout:
    respond`` now): the card reopened after its expiry keeps no Reject to expire to, so
    its next expiry sends the new decision, which the middleware takes."""
    clock = ManualClock(store.clock())
    store.clock = clock
    notifier = RecordingNotifier(store)
    limited = "    review_timeout_s: 60\n    on_timeout: {}\n"
    before = tmp_path / "before.yml"
    before.write_text(
        "interrupt_mode: batched\ntools:\n  write_file:\n"
        f"    {ALL_FOUR}\n" + limited.format("reject")
    )
    driver, graph = driver_for(store, tmp_path, notifier, {}, before)
    run = await new_run(store, WRITE_A)
    assert await driver.drive(run) == (RunState.WAITING, None)
    (request,) = await store.requests_for_run(run.run_id)
    assert request.expires_at is not None and request.timeout_decision is not None
    clock.now = request.expires_at + 1
    assert (await ExpiryKeeper(store=store, notifier=notifier).sweep()).expired_runs == [run.run_id]
    expired = await store.get_request(request.request_id)
    assert expired is not None and expired.decision and expired.decision.type == "reject"

    now = (
        "interrupt_mode: batched\ntools:\n  write_file:\n"
        "    allowed_decisions: [approve, edit, respond]\n" + limited.format("respond")
    )
    driver = deployed(store, tmp_path, notifier, graph, now)
    assert await driver.drive(await store.get_run(run.run_id)) == (RunState.WAITING, None)
    reopened = await store.get_request(request.request_id)
    assert reopened is not None and reopened.state == ApprovalState.PENDING
    assert reopened.timeout_decision is not None
    assert reopened.timeout_decision.type == "respond"
    assert reopened.expires_at == clock.now + 60


async def test_a_decision_whose_interrupt_is_gone_is_marked_applied_not_resent(
    store: ApprovalStore, tmp_path: Path
) -> None:
    notifier = RecordingNotifier(store)
    driver, graph = driver_for(store, tmp_path, notifier, {})
    run = await new_run(
        store, '{"tool_calls": [{"name": "write_file", "args": {"path": "a.txt", "content": "x"}}]}'
    )
    await driver.drive(run)
    (request,) = await store.requests_for_run(run.run_id)
    await store.record_decision(request.request_id, Decision(type="approve"), user_id="U2")
    # Resumed elsewhere (or by a worker that died before marking): the checkpoint has moved on.
    config: RunnableConfig = {"configurable": {"thread_id": run.thread_id}}
    await graph.ainvoke(Command(resume={request.interrupt_id: {"type": "approve"}}), config)
    state, _ = await driver.drive(await store.get_run(run.run_id))
    assert state == RunState.DONE
    applied = await store.get_request(request.request_id)
    assert applied is not None and applied.state == ApprovalState.APPLIED
    answers = [payload for event, payload in notifier.events if event == "answer"]
    assert len(answers) == 1 and "Wrote 1 characters to a.txt" in answers[0]


async def _nothing() -> AsyncIterator[Any]:
    items: tuple[Any, ...] = ()
    for item in items:
        yield item


async def test_a_resume_that_consumes_nothing_is_logged_and_reopened(
    store: ApprovalStore, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    notifier = RecordingNotifier(store)
    driver, _ = driver_for(store, tmp_path, notifier, {})
    run = await new_run(
        store, '{"tool_calls": [{"name": "write_file", "args": {"path": "a.txt", "content": "x"}}]}'
    )
    await driver.drive(run)
    # The resume is accepted without error and runs nothing: the interrupt stays pending.
    driver.graph = ResumeInterceptor(driver.graph, on_resume=lambda _: _nothing())
    (request,) = await store.requests_for_run(run.run_id)
    await store.record_decision(request.request_id, Decision(type="approve"), user_id="U2")
    assert await driver.drive(await store.get_run(run.run_id)) == (RunState.WAITING, None)
    assert "resume consumed nothing" in caplog.text
    reopened = await store.get_request(request.request_id)
    assert reopened is not None and reopened.state == ApprovalState.PENDING
    assert reopened.note and "consumed no answer" in reopened.note
    assert not (tmp_path / "ws/files/a.txt").exists()


async def test_a_tool_that_raises_fails_the_run_and_closes_its_cards(
    store: ApprovalStore, tmp_path: Path
) -> None:
    """Not a refused answer: re-answering would replay the saved one, so the run fails
    and its open cards are closed, never reopened (per-call mode keeps the answer). The
    approved call that raised ran: its card says it may have run, not that it will not
    (the pending one's does: it was never sent)."""
    notifier = RecordingNotifier(store)
    driver, _ = driver_for(store, tmp_path, notifier, {})
    worker = worker_for(store, driver, notifier)
    (tmp_path / "ws/files/adir").mkdir(parents=True)  # writing to it raises IsADirectoryError
    run = await new_run(
        store,
        json.dumps(
            {
                "tool_calls": [
                    {"name": "write_file", "args": {"path": "adir", "content": "x"}},
                    {"name": "execute_sql", "args": {"query": "DELETE FROM orders"}},
                ]
            }
        ),
    )
    state, _ = await driver.drive(run)
    await store.release_run(run.run_id, owner="w", state=state)
    write, sql = await store.requests_for_run(run.run_id)
    await store.record_decision(write.request_id, Decision(type="approve"), user_id="U2")

    await worker.advance(run.run_id, RunState.WAITING)

    failed = await store.get_run(run.run_id)
    assert failed.state == RunState.FAILED and "IsADirectoryError" in (failed.error or "")
    closed = {r.tool_name: r for r in await store.requests_for_run(run.run_id)}
    assert {r.state for r in closed.values()} == {ApprovalState.CANCELLED}
    assert closed["execute_sql"].note == run_failed_note(run.run_id)
    assert closed["write_file"].note == run_failed_call_may_have_run_note(run.run_id)
    assert str(tmp_path) not in (closed["execute_sql"].note or "")  # no server path on a card
    audit = {e.tool_name: e.reason for e in await read_events(store.db) if e.kind == "cancelled"}
    assert audit == {name: request.note for name, request in closed.items()}
    assert not driver.answers_sent(run.run_id)  # read by the worker, then forgotten
    redrawn = [e for e, _ in notifier.events if e == "updated"]
    assert len(redrawn) == 2 and ("failed", run.run_id) in notifier.events
    late = await store.record_decision(sql.request_id, Decision(type="approve"), user_id="U3")
    assert isinstance(late, AlreadyDecided)  # a click on the closed card records nothing


async def test_a_call_an_earlier_drive_ran_is_said_to_have_run_when_a_later_drive_fails(
    store: ApprovalStore, tmp_path: Path
) -> None:
    """Drive 1 runs the approved tool, records its result, and is sent back to the queue
    (its result's post failed for a while); drive 2 fails before it plans (the post,
    caught up, refused for good), knowing of no answer it gave: the card says the call
    ran, not that it will not (found by a hostile review), in the run's thread too."""
    driver, worker, run = await an_approved_write(store, tmp_path)
    errors = [
        NotifyError("ratelimited", retryable=True),
        NotifyError("is_archived", retryable=False),
    ]

    async def tool_ran(*args: Any, **kwargs: Any) -> None:
        raise errors.pop(0)

    driver.notifier.tool_ran = tool_ran  # type: ignore[method-assign]
    await worker.advance(run.run_id, RunState.WAITING)
    assert (await store.get_run(run.run_id)).state == RunState.QUEUED
    assert (tmp_path / "ws/files/a.txt").read_text() == "x"
    await worker.advance(run.run_id, RunState.QUEUED)
    assert (await store.get_run(run.run_id)).state == RunState.FAILED
    (write,) = await store.requests_for_run(run.run_id)
    assert write.result is not None and write.result.ok
    assert write.note == run_failed_after_call_ran_note(run.run_id)
    pointer, _ = render_pointer(write.model_copy(update={"channel_id": "C9"}), link=None)
    assert "after this call ran" in pointer


class ForgetsAfterADrop:
    """A deployed agent whose first resume runs the tool on the server, then drops the
    connection (the run is sent back to the queue); the server then restarts in memory
    and forgets the thread (its state reads empty: ``CheckpointLostError``)."""

    def __init__(self, graph: AgentGraph) -> None:
        self.graph = graph
        self.restarted = False

    async def aget_state(self, config: Any, *, subgraphs: bool = False) -> Any:
        if self.restarted:
            config = {"configurable": {"thread_id": "forgotten"}}
        return await self.graph.aget_state(config, subgraphs=subgraphs)

    async def astream(self, input: Any, config: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
        async for chunk in self.graph.astream(input, config, **kwargs):
            if not isinstance(input, Command):
                yield chunk
        if isinstance(input, Command):
            raise AgentServerUnavailableError("the server closed the connection")


async def test_a_call_sent_before_its_checkpoints_were_lost_may_have_run(
    store: ApprovalStore, tmp_path: Path
) -> None:
    """What the drives before the loss gave the graph is not known once its checkpoints
    are gone: the approved call (it ran on the server) may have run (a hostile review)."""
    driver, worker, run = await an_approved_write(store, tmp_path)
    server = ForgetsAfterADrop(driver.graph)
    driver.graph, driver.deployed = server, True
    await worker.advance(run.run_id, RunState.WAITING)
    assert (tmp_path / "ws/files/a.txt").read_text() == "x"
    server.restarted = True
    await worker.advance(run.run_id, RunState.QUEUED)
    failed = await store.get_run(run.run_id)
    assert failed.state == RunState.FAILED and "can no longer be" in (failed.error or "")
    (write,) = await store.requests_for_run(run.run_id)
    assert write.note == run_failed_call_may_have_run_note(run.run_id)


ACTED_ON: list[Any] = []


def _ask_then_act(state: State) -> State:
    ACTED_ON.append(interrupt("Which table should I drop?"))
    raise RuntimeError("connection reset after DROP TABLE")


def _inbox_then_act(state: State) -> State:
    ACTED_ON.append(interrupt([human_interrupt(allow=("respond",))])[0]["args"])
    raise RuntimeError("connection reset after acting on the response")


@pytest.mark.parametrize("node", [_ask_then_act, _inbox_then_act])
async def test_a_text_answer_the_node_acted_on_may_have_run(
    store: ApprovalStore, node: Any
) -> None:
    """A plain question's or an Agent Inbox ``response``'s answer is acted on by the node
    that asked, unlike a middleware's ``respond``, which keeps its call from running:
    the node acted, then raised, so its card says it may have run (a hostile review)."""
    ACTED_ON.clear()
    builder = StateGraph(State)
    builder.add_node("ask", node)
    builder.add_edge(START, "ask")
    graph: Any = builder.compile(checkpointer=InMemorySaver())
    notifier = RecordingNotifier(store)
    driver = RunDriver(
        store=store, graph=graph, notifier=notifier, policy=Policy(), args_schemas={}
    )
    worker = worker_for(store, driver, notifier)
    run = await store.create_run(
        Run(run_id="run-1", thread_id="t-1", task="go", channel_id="C1", user_id="U1")
    )
    await worker.advance(run.run_id, RunState.QUEUED)
    (request,) = await store.requests_for_run(run.run_id)
    answer = Decision(type="respond", message="orders")
    await store.record_decision(request.request_id, answer, user_id="U2")
    await worker.advance(run.run_id, RunState.WAITING)
    assert (await store.get_run(run.run_id)).state == RunState.FAILED
    assert ACTED_ON == ["orders"]
    (closed,) = await store.requests_for_run(run.run_id)
    assert closed.note == run_failed_call_may_have_run_note(run.run_id)


class Unreadable(StoreUnavailableError):
    """A node's error whose text cannot be read: its ``__str__`` raises ``inner``."""

    def __init__(self, inner: Exception) -> None:
        super().__init__("unread")
        self.inner = inner

    def __str__(self) -> str:
        raise self.inner


class NotTheCheckpointers(CheckpointUnavailableError):
    """A node's subclass of the checkpointer's error that keeps ``tools_may_have_run``
    false whatever is set."""

    @property
    def tools_may_have_run(self) -> bool:
        return False

    @tools_may_have_run.setter
    def tools_may_have_run(self, _: bool) -> None:
        pass


@pytest.mark.parametrize(
    ("raised", "ends"),
    [
        (StoreUnavailableError("the tool's own database is down"), RunState.FAILED),
        (NotifyError("the tool's own Slack post was rate limited"), RunState.FAILED),
        (AgentServerUnavailableError("the tool's own sub-agent is unreachable"), RunState.FAILED),
        (Unreadable(StoreUnavailableError("raised by str()")), RunState.FAILED),
        (Unreadable(NotifyError("raised by str()")), RunState.FAILED),
        (Unreadable(AgentServerUnavailableError("raised by str()")), RunState.FAILED),
        (NotTheCheckpointers("a node's look-alike"), RunState.FAILED),
        (CheckpointUnavailableError("the checkpoint's write lost its connection"), RunState.QUEUED),
    ],
)
async def test_only_the_checkpointers_outage_out_of_a_resume_sends_the_run_back_to_the_queue(
    store: ApprovalStore, tmp_path: Path, raised: Exception, ends: RunState
) -> None:
    """A node of the agent's that raises an error the worker retries on itself (the
    database's, Slack's, or an Agent Server's of its own: a local graph's stream raises
    none of them) fails its run like any other exception: sent back, it would run the
    tool again on every sweep, forever (found by reviews: a node's ``NotifyError`` or
    ``AgentServerUnavailableError`` even took its drive's count back; an error whose
    ``__str__`` raised one of them, or a subclass of the checkpointer's error that
    ignores ``tools_may_have_run``, was retried without bound). The checkpointer's
    outage sends the run back from its intact checkpoint, until the
    ``CHECKPOINT_RETRIES``-th drive in a row, whichever workers drove it, which fails
    it."""
    driver, worker, run = await an_approved_write(store, tmp_path)
    agent = driver.graph
    resumes = raise_at_each_resume(driver, raised)
    await worker.advance(run.run_id, RunState.WAITING)

    ended = await store.get_run(run.run_id)
    assert ended is not None and ended.state == ends, ended
    if ends == RunState.FAILED:
        assert f"a node raised {error_text(raised)}" in (ended.error or "")
        assert len(resumes) == 1
        return
    # Another failure between (the Agent Server busy: the graph stands for a deployed
    # one here) neither counts nor starts it over; the count is the run's: each drive
    # here is another worker's (or a restarted one's).
    driver.deployed = True
    interlude = AgentServerUnavailableError("another server run of the thread in flight")
    raised_next = [interlude] + [raised] * (CHECKPOINT_RETRIES - 1)

    async def raising_next(_: Command[Any]) -> AsyncIterator[Any]:
        yield {"messages": []}
        raise raised_next.pop(0)

    driver.graph = ResumeInterceptor(agent, on_resume=raising_next)
    while len(raised_next) > 1:  # sent back each time, up to the last
        await worker_for(store, driver, RecordingNotifier(store)).advance(
            run.run_id, RunState.QUEUED
        )
        assert (await store.get_run(run.run_id)).state == RunState.QUEUED
    await worker_for(store, driver, RecordingNotifier(store)).advance(run.run_id, RunState.QUEUED)
    ended = await store.get_run(run.run_id)
    assert ended.state == RunState.FAILED
    assert f"in {CHECKPOINT_RETRIES} drives in a row" in (ended.error or "")


async def test_a_drive_that_went_through_starts_the_count_over_though_its_release_failed(
    store: ApprovalStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``CHECKPOINT_RETRIES`` counts drives in a row: one that went through (the graph
    reached its interrupt, the checkpoint saved) starts the count over, even when the
    database failed its release and the run went back ``queued`` instead (found by a
    hostile review)."""
    notifier = RecordingNotifier(store)
    driver, _ = driver_for(store, tmp_path, notifier, {})
    run = await new_run(store, WRITE_TASK)
    # CHECKPOINT_RETRIES - 1 drives had failed so (this one's claim counts the last).
    await store.release_run(
        run.run_id, owner="w", state=RunState.QUEUED, drives_in_a_row=CHECKPOINT_RETRIES - 1
    )
    released = store.release_run
    lost: list[str] = []

    async def release_lost_once(run_id: str, **kwargs: Any) -> None:
        if kwargs["state"] == RunState.WAITING and not lost:
            lost.append(run_id)
            raise StoreUnavailableError("the connection was lost at the release")
        await released(run_id, **kwargs)

    monkeypatch.setattr(store, "release_run", release_lost_once)
    worker = worker_for(store, driver, notifier)
    await worker.advance(run.run_id, RunState.QUEUED)  # went through; its release failed
    assert lost == [run.run_id]
    after = await store.get_run(run.run_id)
    assert after.state == RunState.QUEUED
    assert after.drives_in_a_row == 0  # a drive went through

    (request,) = await store.requests_for_run(run.run_id)
    await store.record_decision(request.request_id, Decision(type="approve"), user_id="U2")
    raise_at_each_resume(driver, CheckpointUnavailableError("the write lost its connection"))
    await worker.advance(run.run_id, RunState.QUEUED)
    ended = await store.get_run(run.run_id)
    assert ended.state == RunState.QUEUED, ended.error  # 1 drive failed since one went through


async def test_a_checkpoint_failure_whose_requeue_fails_still_counts(
    store: ApprovalStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint that takes the database down with it (a write that crashes the
    server, which restarts) fails the release that would record the count too: the
    lease expires and the next drive runs the tool again. It must still be bounded by
    ``CHECKPOINT_RETRIES``: each claim counts its drive before the graph runs (found by a
    hostile review)."""
    driver, worker, run = await an_approved_write(store, tmp_path)
    resumes = raise_at_each_resume(driver, CheckpointUnavailableError(SERVER_GONE))
    refuse_requeues(store, monkeypatch)
    await drive_after_each_lease(store, worker, run, drives=2 * CHECKPOINT_RETRIES)
    ended = await store.get_run(run.run_id)
    assert (ended.state, len(resumes)) == (RunState.FAILED, CHECKPOINT_RETRIES), ended


async def test_a_checkpoint_write_taking_the_database_down_is_bounded_though_nothing_is_recorded(
    store: ApprovalStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint write that crashes the server fails every release after it: the
    requeue that would count it and the failing of the run at the last retry. The claim
    counts each drive before the graph runs, so the claim after ``CHECKPOINT_RETRIES``
    such drives fails the run without running the tool again (found by a hostile
    review: 11 resumes in 11 drives, the run never failed)."""
    driver, worker, run = await an_approved_write(store, tmp_path)
    resumes = raise_at_each_resume(driver, CheckpointUnavailableError(SERVER_GONE))
    refuse_requeues(store, monkeypatch)
    failed = store.fail_run
    down = [True]

    async def fail_fails(*args: Any, **kwargs: Any) -> Any:
        if down[0]:
            raise StoreUnavailableError("the database system is in recovery mode")
        return await failed(*args, **kwargs)

    monkeypatch.setattr(store, "fail_run", fail_fails)
    clock = await drive_after_each_lease(store, worker, run, drives=2 * CHECKPOINT_RETRIES)
    assert len(resumes) == CHECKPOINT_RETRIES
    down[0] = False  # the database takes the failing at last
    clock.now += worker.lease_s + 1
    await worker.advance(run.run_id, RunState.QUEUED)
    ended = await store.get_run(run.run_id)
    assert (ended.state, len(resumes)) == (RunState.FAILED, CHECKPOINT_RETRIES), ended
    assert "did not go through" in (ended.error or "")


async def test_drives_cut_by_a_lost_lease_fail_the_run_at_the_bound(
    store: ApprovalStore, tmp_path: Path
) -> None:
    """A resume that costs its worker the lease every time (it holds the event loop past
    the lease, or the worker dies in it) runs the approved tool again at each drive:
    each claim counts its drive, and the one after ``CHECKPOINT_RETRIES`` of them fails
    the run before the graph runs (found by a hostile review: unbounded before)."""
    driver, worker, run = await an_approved_write(store, tmp_path)
    # As Leases.hold raises it when the lease was not renewed in time.
    resumes = raise_at_each_resume(driver, LeaseLost("lease not renewed in time"))
    await drive_after_each_lease(store, worker, run, drives=2 * CHECKPOINT_RETRIES)
    ended = await store.get_run(run.run_id)
    assert (ended.state, len(resumes)) == (RunState.FAILED, CHECKPOINT_RETRIES), ended
    # Which drive gave the graph the answer is not known then: the approved call may have run.
    (write,) = await store.requests_for_run(run.run_id)
    assert write.note == run_failed_call_may_have_run_note(run.run_id)


class StateReads:
    """Delegates to the agent graph (an ``AgentGraph``), counting its state reads; the
    first ``failures`` raise the checkpointer's outage (a lock held past
    ``lock_timeout``, before any resume). It has the ``config`` and ``nodes`` of
    ``shape`` (the compiled graph, by default ``graph``: what tells the driver whether
    its stream shows every interrupt)."""

    def __init__(self, graph: AgentGraph, *, failures: int = 0, shape: Any = None) -> None:
        self.graph = graph
        self.failures = failures
        self.config = getattr(shape or graph, "config", None)
        self.nodes = getattr(shape or graph, "nodes", None)
        self.reads = 0

    async def aget_state(self, config: Any, *, subgraphs: bool = False) -> Any:
        self.reads += 1
        if self.failures:
            self.failures -= 1
            raise CheckpointUnavailableError("lock timeout on checkpoints")
        return await self.graph.aget_state(config, subgraphs=subgraphs)

    def astream(self, input: Any, config: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
        return self.graph.astream(input, config, **kwargs)


async def test_a_checkpoint_read_failing_before_the_graph_runs_is_retried_as_long_as_it_takes(
    store: ApprovalStore, tmp_path: Path
) -> None:
    """Only a drive whose graph ran counts toward ``CHECKPOINT_RETRIES`` (a retry of it
    runs a tool again); one that fails reading the state (no tool ran) is retried however
    often, and the run goes on once the read works."""
    driver, worker, run = await an_approved_write(store, tmp_path)
    driver.graph = StateReads(driver.graph, failures=2 * CHECKPOINT_RETRIES)

    await worker.advance(run.run_id, RunState.WAITING)
    for _ in range(2 * CHECKPOINT_RETRIES - 1):
        assert (await store.get_run(run.run_id)).state == RunState.QUEUED
        await worker.advance(run.run_id, RunState.QUEUED)
    await worker.advance(run.run_id, RunState.QUEUED)

    done = await store.get_run(run.run_id)
    assert done.state == RunState.DONE, done.error
    assert (tmp_path / "ws/files/a.txt").read_text() == "x"


async def test_a_failed_read_of_the_requests_cancels_the_read_of_the_state_and_the_progress(
    store: ApprovalStore, tmp_path: Path
) -> None:
    # The drive reads the checkpoint and the requests at once; a deployed agent's state
    # read waits for the thread's server runs, which must not outlive a failed drive.
    notifier = RecordingNotifier(store)
    driver, _ = driver_for(store, tmp_path, notifier, {})
    run = await new_run(store, "{}")
    state_read = asyncio.Event()
    cancelled = asyncio.Event()

    class SlowState:
        async def aget_state(self, config: Any, *, subgraphs: bool = False) -> Any:
            state_read.set()
            try:
                await asyncio.Event().wait()  # a server run that never ends
            except asyncio.CancelledError:
                cancelled.set()
                raise

    async def requests_fail(run_id: str) -> list[Any]:
        await state_read.wait()
        raise StoreUnavailableError("PostgreSQL is unavailable: test")

    class Abandoned(NoProgress):
        def __init__(self) -> None:
            self.runs: list[str] = []

        def abandon(self, run: Run) -> None:
            self.runs.append(run.run_id)

    driver.graph = SlowState()  # type: ignore[assignment]
    driver.progress = progress = Abandoned()
    store.requests_for_run = requests_fail  # type: ignore[method-assign]
    with pytest.raises(StoreUnavailableError):
        await driver.drive(run)
    await asyncio.wait_for(cancelled.wait(), timeout=5)
    assert progress.runs == [run.run_id]  # its progress is left to the next drive


SENT: list[str] = []
"""What ``acting_then_raising``'s node sent, one item per time its side effect ran."""


def acting_then_raising(exc: Callable[[], BaseException]) -> Any:
    """A graph whose node asks a person (an Agent Inbox interrupt), sends an email on
    the answer (``SENT``), then raises ``exc()``: as a node parsing the mail API's reply
    with pydantic would."""

    def ask_then_send(state: State) -> State:
        answer = interrupt([human_interrupt(allow=("accept", "ignore"))])[0]
        SENT.append(answer["type"])
        raise exc()

    builder = StateGraph(State)
    builder.add_node("ask_then_send", ask_then_send)
    builder.add_edge(START, "ask_then_send")
    return builder.compile(checkpointer=InMemorySaver())


def a_replys_validation_error() -> ValidationError:
    try:
        TypeAdapter(int).validate_python("not a number")
    except ValidationError as exc:
        return exc
    raise AssertionError("validated")


@pytest.mark.parametrize(
    "raised",
    [a_replys_validation_error, lambda: RuntimeError("x" * 1_000_000)],
    ids=["validation_error", "a_megabyte_of_text"],
)
async def test_a_nodes_own_error_after_it_acted_on_the_answer_fails_the_run_once(
    store: ApprovalStore, raised: Callable[[], BaseException]
) -> None:
    """A node's own ``ValidationError`` after it took the answer and acted on it is not
    LangGraph refusing the answer (that is raised inside ``interrupt``): the run fails,
    its card closed. Read as a refusal, the card was reopened and each approval sent the
    email again, and with ``on_timeout: approve`` without anyone clicking (found by a
    hostile review). The run's recorded error is cut to ``ERROR_TEXT_MAX_CHARS``."""
    SENT.clear()
    notifier = RecordingNotifier(store)
    driver = RunDriver(
        store=store,
        graph=acting_then_raising(raised),
        notifier=notifier,
        policy=Policy(),
        args_schemas={},
    )
    run = await new_run(store, "send the weekly report")
    assert await driver.drive(run) == (RunState.WAITING, None)
    await store.release_run(run.run_id, owner="w", state=RunState.WAITING, drives_in_a_row=0)
    (request,) = await store.requests_for_run(run.run_id)
    await store.record_decision(request.request_id, Decision(type="approve"), user_id="U2")

    await worker_for(store, driver, notifier).advance(run.run_id, RunState.WAITING)

    failed = await store.get_run(run.run_id)
    assert failed.state == RunState.FAILED, failed
    assert type(raised()).__name__ in (failed.error or "")
    assert len(failed.error or "") <= ERROR_TEXT_MAX_CHARS
    closed = await store.get_request(request.request_id)
    assert closed is not None and closed.state == ApprovalState.CANCELLED
    assert SENT == ["accept"]


@pytest.mark.parametrize(("deployed", "ends"), [(True, RunState.WAITING), (False, RunState.FAILED)])
async def test_a_deployed_graphs_refused_answer_reopens_its_card(
    store: ApprovalStore, tmp_path: Path, deployed: bool, ends: RunState
) -> None:
    """The Agent Server names only the error of a server run that refused the answer:
    ``RemoteAgent`` stands a ``ValidationError`` titled ``REFUSED_TITLE`` in for it, and
    the driver of a deployed graph reopens the card as a refused answer. A local graph's
    stream raising that look-alike is a node's error: the run fails."""
    driver, worker, run = await an_approved_write(store, tmp_path)
    driver.deployed = deployed
    raise_at_each_resume(driver, ValidationError.from_exception_data(REFUSED_TITLE, []))
    await worker.advance(run.run_id, RunState.WAITING)

    ended = await store.get_run(run.run_id)
    assert ended is not None and ended.state == ends, ended
    (request,) = await store.requests_for_run(run.run_id)
    if deployed:
        assert request.state == ApprovalState.PENDING
        assert (request.note or "").startswith("the agent refused the answer (ValidationError")
    else:
        assert request.state == ApprovalState.CANCELLED


async def test_a_resume_that_ends_the_run_reads_its_state_once(
    store: ApprovalStore, tmp_path: Path
) -> None:
    """The stream's last values are what the last checkpoint holds when no chunk raised an
    interrupt and none was left pending: the drive finishes from them, without reading
    the state again (issue 11), and answers what the checkpoint says."""
    driver, _, run = await an_approved_write(store, tmp_path)
    graph = driver.graph
    reads = StateReads(graph)
    driver.graph = reads
    state, answer = await driver.drive(run)
    assert (state, reads.reads) == (RunState.DONE, 1)  # the read before the resume
    final = await graph.aget_state(thread_config(run.thread_id))
    assert answer and answer == message_text(final.values["messages"][-1])
    (request,) = await store.requests_for_run(run.run_id)
    assert request.state == ApprovalState.APPLIED


async def test_a_resume_that_leaves_a_parallel_call_pending_reads_the_state_again(
    store: ApprovalStore, tmp_path: Path
) -> None:
    """Two per-call interrupts in one turn, one answered: the run is not over. LangGraph
    raises the other again as it re-runs its node, but the driver does not rely on the
    stream for an interrupt pending before it: with a stream that shows none, the state
    is still read after it, and the run waits on the other call."""
    notifier = RecordingNotifier(store)
    driver, _ = driver_for(store, tmp_path, notifier, {})
    two_writes = json.dumps(
        {
            "tool_calls": [
                {"name": "write_file", "args": {"path": "a.txt", "content": "x"}},
                {"name": "write_file", "args": {"path": "b.txt", "content": "y"}},
            ]
        }
    )
    run = await new_run(store, two_writes)
    assert (await driver.drive(run))[0] == RunState.WAITING
    first, second = await store.requests_for_run(run.run_id)
    await store.record_decision(first.request_id, Decision(type="approve"), user_id="U2")
    graph = driver.graph

    async def showing_no_interrupt(command: Command[Any]) -> AsyncIterator[Any]:
        stream = graph.astream(
            command, thread_config(run.thread_id), stream_mode="values", version="v2"
        )
        async for chunk in stream:
            yield {**chunk, "interrupts": ()}

    reads = StateReads(ResumeInterceptor(graph, on_resume=showing_no_interrupt), shape=graph)
    driver.graph = reads
    state, _ = await driver.drive(run)
    assert (state, reads.reads) == (RunState.WAITING, 2)
    states = {r.request_id: r.state for r in await store.requests_for_run(run.run_id)}
    assert states == {
        first.request_id: ApprovalState.APPLIED,
        second.request_id: ApprovalState.PENDING,
    }


async def test_a_graph_whose_tasks_langgraph_does_not_stream_has_its_state_read(
    store: ApprovalStore, tmp_path: Path
) -> None:
    """LangGraph streams nothing of a task tagged ``langsmith:hidden``, its interrupt
    included: a graph given the tag (to keep it out of LangSmith's traces) ends its
    stream silent on a pause, and the state read finds the interrupt (a review)."""
    notifier = RecordingNotifier(store)
    driver, graph = driver_for(store, tmp_path, notifier, {})
    hidden: Any = graph.with_config(tags=[TAG_HIDDEN])  # an AgentGraph, as build_agent's
    reads = StateReads(hidden)
    driver.graph = reads
    run = await new_run(store, WRITE_TASK)
    state, answer = await driver.drive(run)
    assert (state, answer, reads.reads) == (RunState.WAITING, None, 2)
    assert len(await store.requests_for_run(run.run_id)) == 1


@tool(return_direct=True)
def lookup_balance(account: str) -> str:
    """Look up an account's balance; its result is the agent's answer."""
    return f"Balance of {account}: 42 EUR"


async def test_a_return_direct_tools_result_is_the_final_answer(store: ApprovalStore) -> None:
    """``create_agent`` ends on a ``return_direct`` tool's result, with no model turn
    after it: that result is the answer, not the text the model called the tool with."""
    graph: Any = create_agent(  # an AgentGraph at runtime (see driver_for)
        ScriptedChatModel(), tools=[lookup_balance], checkpointer=InMemorySaver()
    )
    driver = RunDriver(
        store=store,
        graph=graph,
        notifier=RecordingNotifier(store),
        policy=Policy(),
        args_schemas={"lookup_balance": {"type": "object"}},
    )
    call = {"name": "lookup_balance", "args": {"account": "ACME"}}
    run = await new_run(store, json.dumps({"say": "Let me check that.", "tool_calls": [call]}))
    assert await driver.drive(run) == (RunState.DONE, "Balance of ACME: 42 EUR")

"""Exactly-once and threads started elsewhere, against a real LangGraph Agent Server
(``AGENT_URL``; the session's ``langgraph dev``, ``tests/agent_server.py``).

A worker SIGKILLed mid-resume (its server run goes on) or before marking applied sends
the decision once; a server run in flight is joined before the state is read; a thread
the engineer's own app runs is attached by ID (``agent-bridge attach``), and one paused
by a run no worker streamed is found by the sweep; an answer the server's graph refuses
is LangGraph's ``ValidationError``, as locally; a thread the server lost (an in-memory
server restarted) fails its run rather than starting it over.
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langgraph.types import Command
from pydantic import ValidationError

from agent_bridge.graph import thread_config
from agent_bridge.models import DEFAULT_AGENT, ApprovalState, RunState
from agent_bridge.remote_agent import THREAD_METADATA_KEY, RemoteAgent
from agent_bridge.scripted_model import DEMO_TASK
from agent_bridge.settings import DEMO_TOOLS, WorkerConfig
from bot.starts import new_run
from tests.agent_server import ASSISTANTS, AgentServer, cli, paused_elsewhere, remote
from tests.harness import CHANNEL, REQUESTER, Harness
from tests.test_crash_recovery import approval_cards
from tests.worker_processes import killed, start_worker, stop

REASON = "Archive the rows before deleting them."
ARCHIVE = "archive/old_orders.csv"
MAKE_WAITING = "UPDATE runs SET state = 'waiting', agent = 'default' WHERE run_id = :run_id"


class TestKilledWorker:
    """A worker SIGKILLed after recording a decision, then restarted: the decision is
    sent to the server once (one resume run), applied once, nothing posted twice."""

    @pytest.fixture
    def agent_settings(self, settings: WorkerConfig, agent_server: AgentServer) -> WorkerConfig:
        return remote(settings, agent_server, "batched")

    @pytest.fixture
    def harness_options(self) -> dict[str, Any]:
        return {"workers": 0}  # the worker is a child process that kills itself

    @pytest.mark.parametrize("crash_at", ["in_server_run", "before_mark_applied"])
    async def test_a_decision_is_sent_to_the_server_once(
        self, harness: Harness, agent_server: AgentServer, crash_at: str, tmp_path: Path
    ) -> None:
        log = tmp_path / "worker.log"
        env: dict[str, str | None] = {
            "AGENT_URL": agent_server.url,
            "ASSISTANT_ID": ASSISTANTS["batched"],
            "AGENT": DEMO_TOOLS,
        }
        worker = await start_worker(harness, log, crash_at, env_changes=env)
        try:
            run = await harness.start_run(DEMO_TASK)
            write, sql = await harness.requests(run, count=2)
            await harness.click(write, "approve")
            await harness.reject(sql, REASON)
            await killed(worker)
            worker = await start_worker(harness, log, env_changes=env)
            done = await harness.finished(run)
        finally:
            await stop(worker)

        assert done.state == RunState.DONE, log.read_text()
        runs = await agent_server.server_runs(run.thread_id)
        assert len(runs) == 2, runs  # the task's run and one resume: the decision sent once
        assert {r["multitask_strategy"] for r in runs} == {"reject"}
        stored = await harness.store.requests_for_run(run.run_id)
        assert [r.state for r in stored] == [ApprovalState.APPLIED, ApprovalState.APPLIED]
        names = sorted(str(m.name) for m in await agent_server.tool_messages(run.thread_id))
        assert names == ["execute_sql", "read_data", "write_file"]
        assert approval_cards(harness) == 2
        answers = [t for t in harness.slack_thread_texts(done) if t.startswith("Done.")]
        assert len(answers) == 1 and REASON in answers[0]


async def test_a_run_in_flight_is_joined_before_the_state_is_read(
    agent_server: AgentServer,
) -> None:
    """A resume created on the server and still going (a dead worker's, or one the
    engineer's app made) is waited for: its interrupt never looks pending meanwhile, so
    no second answer is planned for it (docs/architecture.md, invariant 3)."""
    client = agent_server.client()
    agent = RemoteAgent(client=client, assistant_id=ASSISTANTS["batched"], agent_name="default")
    config = thread_config(str(uuid.uuid4()))
    try:
        assert (await agent.aget_state(config)).values == {}  # a new thread on the server
        task = {"messages": [{"role": "user", "content": DEMO_TASK}]}
        async for _ in agent.astream(task, config, stream_mode="values", version="v2"):
            pass
        (interrupt,) = (await agent.aget_state(config)).interrupts
        answer = {"decisions": [{"type": "approve"}, {"type": "reject", "message": REASON}]}
        thread_id = config["configurable"]["thread_id"]
        await client.runs.create(
            thread_id, ASSISTANTS["batched"], command={"resume": {interrupt.id: answer}}
        )

        state = await agent.aget_state(config)  # right away: the resume is in flight
    finally:
        await client.aclose()
    assert not state.interrupts and not state.next and not state.tasks
    assert isinstance(state.values["messages"][-1], AIMessage)
    assert str(state.values["messages"][-1].content).startswith("Done.")


class TestThreadsStartedElsewhere:
    """Threads the engineer's own app runs on the server: attached by ID
    (``agent-bridge attach``), or paused by a run no worker streamed (the sweep)."""

    @pytest.fixture
    def agent_settings(self, settings: WorkerConfig, agent_server: AgentServer) -> WorkerConfig:
        return remote(settings, agent_server, "batched")

    async def test_a_thread_attached_by_id_gets_its_cards_and_runs_on(
        self, harness: Harness, agent_server: AgentServer
    ) -> None:
        thread_id = await paused_elsewhere(agent_server, DEMO_TASK, metadata={"app": "theirs"})
        env = {
            **os.environ,
            "AGENT_URL": agent_server.url,
            "DATABASE_URL": harness.settings.database_url,
            "REDIS_URL": harness.settings.redis_url or "",
            "SIGNAL_CHANNEL": harness.channel,
        }
        command = [sys.executable, "-m", "bot.cli", "attach", thread_id, "--channel", CHANNEL]
        command += ["--requester", REQUESTER, "--team", harness.sandbox.team_id]
        command += ["--task", "Clean up the orders"]
        code, out, err = await cli(command, env)
        assert code == 0, err
        run = await harness.store.run_of_thread(thread_id)
        assert run is not None and run.run_id in out

        write, sql = await harness.requests(run, count=2)
        await harness.click(write, "approve")
        await harness.reject(sql, REASON)
        done = await harness.finished(run)

        assert done.state == RunState.DONE, done.error
        assert "Clean up the orders" in harness.slack_thread_texts(done)[0]
        assert (agent_server.files(thread_id) / ARCHIVE).exists()
        code, _, err = await cli(command, env)
        assert code == 2 and f"is run {run.run_id} already" in err
        unknown = str(uuid.uuid4())
        code, _, err = await cli([*command[:4], unknown, *command[5:]], env)
        assert code == 2 and f"has no thread {unknown}" in err
        assert await harness.store.run_of_thread(unknown) is None
        client = agent_server.client()
        try:
            metadata = (await client.threads.get(thread_id))["metadata"]
        finally:
            await client.aclose()
        assert metadata is not None and metadata["app"] == "theirs"  # the app's own is kept

    async def test_the_sweep_finds_a_thread_paused_by_a_run_no_worker_streamed(
        self, harness: Harness, agent_server: AgentServer
    ) -> None:
        thread_id = await paused_elsewhere(
            agent_server, DEMO_TASK, metadata={THREAD_METADATA_KEY: DEFAULT_AGENT}
        )
        # A run already waiting (an attached thread whose earlier pause was answered):
        # no signal, not queued; only the sweep's look at the server can find the pause.
        # Recorded for no worker's agent, then made this agent's waiting run at once.
        recorded = await harness.store.create_run(
            new_run(
                task="Clean up the orders",
                channel_id=CHANNEL,
                user_id=REQUESTER,
                team_id=harness.sandbox.team_id,
                agent="no-worker",
            ).model_copy(update={"thread_id": thread_id})
        )
        await harness.store.db.execute(MAKE_WAITING, {"run_id": recorded.run_id})
        run = await harness.store.get_run(recorded.run_id)
        assert (run.state, run.agent) == (RunState.WAITING, DEFAULT_AGENT)

        write, sql = await harness.requests(run, count=2)
        await harness.click(write, "approve")
        await harness.reject(sql, REASON)
        done = await harness.finished(run)
        assert done.state == RunState.DONE, done.error
        assert (agent_server.files(thread_id) / ARCHIVE).exists()


async def test_an_answer_the_servers_graph_refuses_is_a_validation_error(
    agent_server: AgentServer,
) -> None:
    """A per-call answer outside the interrupt's ``response_schema`` fails the server run
    before anything is saved; the worker sees LangGraph's ``ValidationError`` (it reopens
    the request, invariant 4) and the interrupt is still pending."""
    client = agent_server.client()
    agent = RemoteAgent(client=client, assistant_id=ASSISTANTS["per_call"], agent_name="default")
    config = thread_config(str(uuid.uuid4()))
    try:
        await agent.aget_state(config)
        task = {"messages": [{"role": "user", "content": DEMO_TASK}]}
        async for _ in agent.astream(task, config, stream_mode="values", version="v2"):
            pass
        pending = [i.id for i in (await agent.aget_state(config)).interrupts]
        refused: Command[Any] = Command(resume={pending[0]: {"type": "bogus"}})
        with pytest.raises(ValidationError):
            async for _ in agent.astream(refused, config, stream_mode="values", version="v2"):
                pass
        assert [i.id for i in (await agent.aget_state(config)).interrupts] == pending
    finally:
        await client.aclose()


class TestThreadLostOnTheServer:
    """An in-memory Agent Server restarted (or a thread deleted there) while a card is
    pending: the server has no thread any more. The decision must not be marked applied
    (it never ran) nor the task started again from the beginning: the run fails, saying
    why, and its cards are closed."""

    @pytest.fixture
    def agent_settings(self, settings: WorkerConfig, agent_server: AgentServer) -> WorkerConfig:
        return remote(settings, agent_server, "batched")

    async def test_a_decision_on_a_lost_thread_fails_the_run(
        self, harness: Harness, agent_server: AgentServer
    ) -> None:
        run = await harness.start_run(DEMO_TASK)
        write, sql = await harness.requests(run, count=2)
        client = agent_server.client()
        try:
            await client.threads.delete(run.thread_id)  # what a restart of `langgraph dev` does
        finally:
            await client.aclose()
        # the first decision's drive finds the thread gone (the run fails there, so the
        # batch's other card is closed, never decided)
        await harness.click(write, "approve")
        done = await harness.finished(run)

        assert done.state == RunState.FAILED, done.error
        assert "has no state any more" in (done.error or "")
        stored = await harness.store.requests_for_run(run.run_id)
        assert ApprovalState.APPLIED not in {r.state for r in stored}
        assert {r.request_id: r.state for r in stored}[sql.request_id] == ApprovalState.CANCELLED
        assert await agent_server.server_runs(run.thread_id) == []  # the task not run again

"""End to end against a real LangGraph Agent Server (``AGENT_URL``): ``langgraph dev`` from
the repository's ``langgraph.json``, one for the whole session (``tests/agent_server.py``).

The worker keeps no checkpoint: runs are created and resumed on the server through
``langgraph-sdk`` (``agent_bridge/remote_agent.py``), and what the tools did is read
there (the server's state, the demo tools' folder of each ``thread_id``). Approve, edit,
reject and respond in both interrupt modes; a decision applied once when the worker is
killed mid-resume (the server's run goes on) or before marking it applied; a run of the
``thread_id`` in flight joined before its state is read; a thread started elsewhere
attached by ID; a thread paused by a run no worker streamed found by the sweep.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver

from agent_bridge.agent import assemble_agent
from agent_bridge.errors import ConfigurationError
from agent_bridge.graph import thread_config
from agent_bridge.models import DEFAULT_AGENT, ApprovalState, DecisionType, RunState
from agent_bridge.policy_file import POLICIES_DIR, load_policy
from agent_bridge.remote_agent import THREAD_METADATA_KEY, RemoteAgent
from agent_bridge.scripted_model import DEMO_TASK
from agent_bridge.settings import WorkerConfig
from bot import ids
from bot.starts import new_run
from tests.agent_server import (
    EXAMPLE_CONFIG,
    AgentServer,
    served_config,
    start_agent_server,
    stop_agent_server,
)
from tests.harness import CHANNEL, REQUESTER, REVIEWER, Harness, agent_config, decision_buttons
from tests.test_crash_recovery import approval_cards
from tests.worker_processes import killed, start_worker, stop

REASON = "Archive the rows before deleting them."
ASSISTANTS = {"batched": "agent", "per_call": "agent_per_call"}
"""The graphs of ``langgraph.json``, one per interrupt mode."""
ARCHIVE = "archive/old_orders.csv"
FIXTURES = Path(__file__).parent / "fixtures"
MAKE_WAITING = "UPDATE runs SET state = 'waiting', agent = 'default' WHERE run_id = :run_id"


@pytest.fixture(scope="session")
def agent_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentServer]:
    """``langgraph dev`` on a free port, answering before the first test, stopped after
    the last."""
    folder = tmp_path_factory.mktemp("agent-server")
    server = start_agent_server(folder, served_config(folder))
    try:
        yield server
    finally:
        stop_agent_server(server)


def remote(settings: WorkerConfig, server: AgentServer, mode: str) -> WorkerConfig:
    """Worker settings driving the served demo agent in ``mode``."""
    changes: dict[str, Any] = {"agent_url": server.url, "assistant_id": ASSISTANTS[mode]}
    if mode == "per_call":
        changes["policy"] = POLICIES_DIR / "per_call.yml"
    return settings.model_copy(update=changes)


@pytest.fixture(params=list(ASSISTANTS))
def agent_settings(
    request: pytest.FixtureRequest, settings: WorkerConfig, agent_server: AgentServer
) -> WorkerConfig:
    return remote(settings, agent_server, request.param)


async def submit(harness: Harness, view: dict[str, Any], values: dict[str, str]) -> None:
    status, body = await harness.sandbox.submit_view(
        view_id=view["id"], user_id=REVIEWER, values=values
    )
    assert status == 200 and not body, body


async def test_approve_and_reject_run_on_the_server(
    harness: Harness, agent_server: AgentServer
) -> None:
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    assert (write.tool_name, sql.tool_name) == ("write_file", "execute_sql")
    await harness.click(write, "approve")
    await harness.reject(sql, REASON)
    done = await harness.finished(run)

    assert done.state == RunState.DONE, done.error
    stored = await harness.store.requests_for_run(run.run_id)
    assert [r.state for r in stored] == [ApprovalState.APPLIED, ApprovalState.APPLIED]
    written = agent_server.files(run.thread_id) / ARCHIVE
    assert written.read_text().startswith("id,customer")
    results = {str(m.name): m for m in await agent_server.tool_messages(run.thread_id)}
    assert sorted(results) == ["execute_sql", "read_data", "write_file"]
    assert REASON in str(results["execute_sql"].content)
    answers = [t for t in harness.slack_thread_texts(done) if t.startswith("Done.")]
    assert len(answers) == 1 and REASON in answers[0]
    assert not await harness.backend.checkpointer.aget_tuple(
        {"configurable": {"thread_id": run.thread_id}}
    ), "the worker kept a checkpoint of a run the server keeps"


async def test_an_edit_runs_the_edited_call_on_the_server(
    harness: Harness, agent_server: AgentServer
) -> None:
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    view = await harness.open_modal(write, "edit")
    await submit(harness, view, {ids.arg_block_id("content"): "id\n1\n"})
    await harness.reject(sql, REASON)
    done = await harness.finished(run)

    assert done.state == RunState.DONE, done.error
    assert (agent_server.files(run.thread_id) / ARCHIVE).read_text() == "id\n1\n"
    results = {str(m.name): m for m in await agent_server.tool_messages(run.thread_id)}
    assert "Wrote 5 characters" in str(results["write_file"].content)


async def test_respond_answers_ask_user_on_the_server(
    harness: Harness, agent_server: AgentServer
) -> None:
    run = await harness.start_run(
        {"tool_calls": [{"name": "ask_user", "args": {"question": "Which year counts as old?"}}]}
    )
    (ask,) = await harness.requests(run, count=1)
    view = await harness.open_modal(ask, "respond")
    assert "Which year counts as old?" in json.dumps(view["blocks"])
    await submit(harness, view, {ids.ANSWER_BLOCK: "Anything before 2024"})
    done = await harness.finished(run)

    (result,) = await agent_server.tool_messages(run.thread_id)
    assert result.status == "success" and result.content == "Anything before 2024"
    assert "Anything before 2024" in (done.final_answer or "")


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


async def paused_elsewhere(server: AgentServer, task: str, *, metadata: dict[str, str]) -> str:
    """What the engineer's own app does: create a thread on the server and run the
    agent on ``task`` until it pauses; return the ``thread_id``."""
    client = server.client()
    try:
        thread = await client.threads.create(metadata=metadata)
        thread_id = str(thread["thread_id"])
        task_input: dict[str, Any] = {"messages": [{"role": "user", "content": task}]}
        await client.runs.wait(thread_id, ASSISTANTS["batched"], input=task_input)
        assert (await client.threads.get(thread_id))["status"] == "interrupted"
    finally:
        await client.aclose()
    return thread_id


async def cli(command: list[str], env: dict[str, str]) -> tuple[int | None, str, str]:
    """Run ``command`` as a real process (off the event loop the harness runs on);
    return its exit code, stdout and stderr."""
    process = await asyncio.create_subprocess_exec(
        *command, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await process.communicate()
    return process.returncode, out.decode(), err.decode()


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
        command += ["--requester", REQUESTER, "--task", "Clean up the orders"]
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
                team_id=None,
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


async def test_the_demo_runs_against_the_deployed_agent(agent_server: AgentServer) -> None:
    """``AGENT_URL=... ./scripts/demo --unattended``: the scripted review of the demo
    agent served by the Agent Server ends with the final answer and the expected audit
    trail (exit 0)."""
    env = {**os.environ, "AGENT_URL": agent_server.url}
    code, out, err = await cli([sys.executable, "-m", "bot.cli", "demo", "--unattended"], env)
    assert code == 0, out + err
    assert "on the Agent Server (AGENT_URL)" in out and "Final answer:\nDone." in out


@pytest.fixture(scope="session")
def example_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentServer]:
    """``langgraph dev`` of a copy of ``examples/deployed_graph/`` (what an engineer
    copies), run from that folder as its ``langgraph.json`` expects."""
    copy = tmp_path_factory.mktemp("example-server") / "deployed_graph"
    shutil.copytree(EXAMPLE_CONFIG.parent, copy)
    server = start_agent_server(copy, copy / EXAMPLE_CONFIG.name)
    try:
        yield server
    finally:
        stop_agent_server(server)


class TestDeployedExample:
    """The example an engineer copies: their graph (model, prompt, tools, their own
    ``HumanInTheLoopMiddleware``) served as it is, reviewed from Slack."""

    @pytest.fixture
    def agent_settings(self, settings: WorkerConfig, example_server: AgentServer) -> WorkerConfig:
        return settings.model_copy(
            update={
                "agent_url": example_server.url,
                # the same graph module the server serves: the worker reads its gating
                "agent": "examples.deployed_graph.graph:graph",
                "policy": EXAMPLE_CONFIG.with_name("policy.yml"),
            }
        )

    async def test_its_gated_call_is_approved_from_slack(
        self, harness: Harness, example_server: AgentServer
    ) -> None:
        email = {"to": "ada@example.com", "subject": "Your order", "body": "It shipped."}
        run = await harness.start_run(
            {
                "tool_calls": [
                    {"name": "lookup_customer", "args": {"name": "Ada"}},
                    {"name": "send_email", "args": email},
                ]
            }
        )
        (card,) = await harness.requests(run, count=1)
        assert (card.tool_name, card.args) == ("send_email", email)
        assert card.allowed_decisions == ["approve", "edit", "reject"]
        await harness.click(card, "approve")
        done = await harness.finished(run)

        assert done.state == RunState.DONE, done.error
        results = {str(m.name): m for m in await example_server.tool_messages(run.thread_id)}
        assert results["send_email"].content == "Sent 'Your order' to ada@example.com"


class TestAgentInboxInterrupt:
    """A deployed graph whose node raises an Agent Inbox ``HumanInterrupt``: its card has
    the config's buttons and the server's thread is resumed in Agent Inbox's shape."""

    @pytest.fixture
    def agent_settings(self, settings: WorkerConfig, agent_server: AgentServer) -> WorkerConfig:
        return settings.model_copy(
            update={
                "agent_url": agent_server.url,
                "assistant_id": "inbox",
                "agent": "tests.interrupt_graphs:inbox",  # the same graph: its shape
                "policy": FIXTURES / "interrupts_policy.yml",
            }
        )

    @pytest.mark.parametrize(
        ("decision", "response"),
        [
            ("approve", {"type": "accept", "args": None}),
            ("ignore", {"type": "ignore", "args": None}),
        ],
    )
    async def test_a_click_resumes_it_on_the_server_in_its_shape(
        self, harness: Harness, decision: DecisionType, response: dict[str, Any]
    ) -> None:
        run = await harness.start_run("run the inbox graph")
        (request,) = await harness.requests(run, count=1)
        message = harness.sandbox.message(request.channel_id or "", request.message_ts or "")
        assert decision_buttons(message) == [
            ids.decision_action_id(d) for d in ("approve", "edit", "respond", "ignore")
        ]
        await harness.click(request, decision)
        done = await harness.finished(run)
        assert done.state == RunState.DONE and done.final_answer, done.error
        assert json.loads(done.final_answer) == {"inbox": response}


def test_a_deployed_agent_takes_no_model_or_system_prompt(tmp_path: Path) -> None:
    """The deployed graph has its own model and prompt: setting either beside
    ``AGENT_URL`` is refused at start, naming what to unset."""
    settings = agent_config(tmp_path).model_copy(
        update={"agent_url": "http://127.0.0.1:9", "system_prompt": "Be brief."}
    )
    with pytest.raises(ConfigurationError, match="unset SYSTEM_PROMPT"):
        assemble_agent(settings=settings, policy=load_policy(None), checkpointer=InMemorySaver())

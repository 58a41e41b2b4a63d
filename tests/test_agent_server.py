"""End to end against a real LangGraph Agent Server (``AGENT_URL``): ``langgraph dev`` from
the repository's ``langgraph.json``, one for the whole session (``tests/agent_server.py``,
the ``agent_server`` fixture).

The worker keeps no checkpoint: runs are created and resumed on the server through
``langgraph-sdk`` (``agent_bridge/remote_agent.py``), and what the tools did is read
there (the server's state, the demo tools' folder of each ``thread_id``). Approve, edit,
reject and respond in both interrupt modes; an Agent Inbox interrupt; the demo and
``examples/deployed_graph/`` against a server; what a deployed agent refuses at start.
Crashes and threads started elsewhere: ``tests/test_agent_server_recovery.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from agent_bridge.agent import assemble_agent
from agent_bridge.errors import AgentServerUnavailableError, ConfigurationError
from agent_bridge.models import ApprovalState, DecisionType, RunState
from agent_bridge.policy_file import load_policy
from agent_bridge.remote_agent import RemoteAgent, open_client
from agent_bridge.scripted_model import DEMO_TASK
from agent_bridge.settings import DEMO_TOOLS, WorkerConfig
from bot import ids
from tests import agent_server as agent_servers
from tests.agent_server import (
    ASSISTANTS,
    EXAMPLE_CONFIG,
    AgentServer,
    cli,
    remote,
    start_agent_server,
    stop_agent_server,
)
from tests.harness import REVIEWER, TEST_BOT_TOKEN, Harness, agent_config, decision_buttons
from tests.interrupt_graphs import marked_graph
from tests.ports import free_port
from tests.test_any_interrupt import submit as submit_modal

REASON = "Archive the rows before deleting them."
ARCHIVE = "archive/old_orders.csv"
FIXTURES = Path(__file__).parent / "fixtures"


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
    copies), run from that folder as its ``langgraph.json`` expects. Its port is taken
    by another listener before it starts (as a parallel test session's server can take
    it): it is found on the port ``langgraph dev`` took instead and announced."""
    copy = tmp_path_factory.mktemp("example-server") / "deployed_graph"
    shutil.copytree(EXAMPLE_CONFIG.parent, copy)
    with socket.socket() as taker, pytest.MonkeyPatch.context() as patch:
        taker.bind(("127.0.0.1", 0))
        taker.listen()
        taken = taker.getsockname()[1]
        patch.setattr(agent_servers, "free_port", lambda: taken)
        server = start_agent_server(copy, copy / EXAMPLE_CONFIG.name)
    try:
        assert server.url != f"http://127.0.0.1:{taken}", server.url
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


class TestOtherInterrupts:
    """A deployed graph whose nodes call ``interrupt()`` with a JSON schema, a plain
    question, or in two parallel branches: each gets its card and is resumed on the
    server by its interrupt ID with the answer's own shape."""

    @pytest.fixture
    def agent_settings(
        self, settings: WorkerConfig, agent_server: AgentServer, request: pytest.FixtureRequest
    ) -> WorkerConfig:
        local = marked_graph(settings, request)  # the same graph: its shape
        name = local.agent.partition(":")[2]
        return local.model_copy(update={"agent_url": agent_server.url, "assistant_id": name})

    @pytest.mark.graph("form")
    async def test_a_form_is_answered_with_its_object(self, harness: Harness) -> None:
        run = await harness.start_run("run the form graph")
        (request,) = await harness.requests(run, count=1)
        values = {
            ids.arg_block_id("environment"): json.dumps("staging"),
            ids.arg_block_id("replicas"): "3",
        }
        assert await submit_modal(harness, request, "edit", values) is None
        done = await harness.finished(run)
        assert done.state == RunState.DONE and done.final_answer, done.error
        assert json.loads(done.final_answer) == {"form": {"environment": "staging", "replicas": 3}}

    @pytest.mark.graph("plain")
    async def test_a_question_is_answered_with_text(self, harness: Harness) -> None:
        run = await harness.start_run("run the plain graph")
        (request,) = await harness.requests(run, count=1)
        assert (
            await submit_modal(harness, request, "respond", {ids.ANSWER_BLOCK: "eu-west-1"}) is None
        )
        done = await harness.finished(run)
        assert done.state == RunState.DONE and done.final_answer, done.error
        assert json.loads(done.final_answer) == {"plain": "eu-west-1"}

    @pytest.mark.graph("parallel")
    async def test_two_branches_are_resumed_each_by_its_id(self, harness: Harness) -> None:
        run = await harness.start_run("run the parallel graph")
        left, right = sorted(await harness.requests(run, count=2), key=lambda r: r.description)
        assert left.interrupt_id != right.interrupt_id
        assert await submit_modal(harness, right, "respond", {ids.ANSWER_BLOCK: "R"}) is None
        assert await submit_modal(harness, left, "respond", {ids.ANSWER_BLOCK: "L"}) is None
        done = await harness.finished(run)
        assert done.state == RunState.DONE and done.final_answer, done.error
        assert json.loads(done.final_answer) == {"left": "L", "right": "R"}


def test_a_deployed_agent_takes_no_model_or_system_prompt(tmp_path: Path) -> None:
    """The deployed graph has its own model and prompt: setting either beside
    ``AGENT_URL`` is refused at start, naming what to unset."""
    settings = agent_config(tmp_path).model_copy(
        update={"agent_url": "http://127.0.0.1:9", "system_prompt": "Be brief."}
    )
    with pytest.raises(ConfigurationError, match="unset SYSTEM_PROMPT"):
        assemble_agent(settings=settings, policy=load_policy(None), checkpointer=InMemorySaver())


def test_a_deployed_agent_needs_agent_set(tmp_path: Path) -> None:
    """With ``AGENT_URL`` and no ``AGENT``, the worker would quietly take the demo tools'
    schemas and gating for the deployed graph's: refused at start, naming what to set."""
    settings = agent_config(tmp_path).model_copy(update={"agent_url": "http://127.0.0.1:9"})
    with pytest.raises(ConfigurationError, match="AGENT_URL is set but AGENT is not") as error:
        assemble_agent(settings=settings, policy=load_policy(None), checkpointer=InMemorySaver())
    assert "examples/deployed_graph" in str(error.value)
    demo = settings.model_copy(update={"agent": DEMO_TOOLS})  # the demo's, named
    assemble_agent(settings=demo, policy=load_policy(None), checkpointer=InMemorySaver())


class TestServerCheckedAtStart:
    """What a careless engineer gets wrong about the server is said at start, naming the
    setting, rather than failing every run later: an ``ASSISTANT_ID`` naming no graph, an
    ``AGENT_URL`` with a path after the server's; a server that does not answer (yet) is
    only warned of (runs wait, queued, until it does)."""

    async def check(self, url: str, assistant_id: str) -> None:
        client = open_client(url, api_key=None)
        try:
            agent = RemoteAgent(client=client, assistant_id=assistant_id, agent_name="default")
            await agent.check()
        finally:
            await client.aclose()

    async def test_a_served_graph_passes(self, agent_server: AgentServer) -> None:
        for assistant_id in ASSISTANTS.values():
            await self.check(agent_server.url, assistant_id)

    async def test_an_assistant_id_naming_no_graph_is_refused(
        self, agent_server: AgentServer
    ) -> None:
        with pytest.raises(ConfigurationError, match="ASSISTANT_ID='nosuch'") as error:
            await self.check(agent_server.url, "nosuch")
        assert "agent_per_call" in str(error.value)  # the server's own list of graphs

    async def test_a_url_with_a_path_is_refused(self, agent_server: AgentServer) -> None:
        with pytest.raises(ConfigurationError, match="base URL"):
            await self.check(agent_server.url + "/api", "agent")

    async def test_a_server_not_answering_is_unavailable(self) -> None:
        with pytest.raises(AgentServerUnavailableError):
            await self.check(f"http://127.0.0.1:{free_port()}", "agent")

    async def test_the_worker_refuses_to_start_on_a_wrong_assistant(
        self, agent_server: AgentServer, pg_url: str
    ) -> None:
        env = {
            **os.environ,
            "SLACK_BOT_TOKEN": TEST_BOT_TOKEN,
            "DATABASE_URL": pg_url,
            "AGENT_URL": agent_server.url,
            "ASSISTANT_ID": "nosuch",
            "AGENT": DEMO_TOOLS,
        }
        code, _, err = await cli([sys.executable, "-m", "bot.cli", "worker"], env)
        assert code == 2 and "ASSISTANT_ID='nosuch'" in err, err
        assert "Traceback" not in err

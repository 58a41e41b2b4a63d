"""A compiled graph's ``when`` rules, asked before a resume (``when_rules``): with no
deploy, a rule that reads the tool, the store, the state or the execution info the
middleware gives it is asked as LangChain asks it, and a rejected call's run ends
without a false stop; a deploy adding a rule that lets the call through (to a sub-agent
node, or one reading the execution info) stops the run without sending the email. Real
``create_agent`` graphs and ``HumanInTheLoopMiddleware``; the driver built as the worker
builds it."""

from __future__ import annotations

import json
from typing import Any, NotRequired, cast

import pytest
from langchain.agents import AgentState, create_agent
from langchain.agents.middleware import AgentMiddleware, HumanInTheLoopMiddleware
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.store.memory import InMemoryStore

from agent_bridge.agent import when_rules_of
from agent_bridge.errors import UndecidableCallError
from agent_bridge.graph import AgentGraph
from agent_bridge.graph_agent import CompiledGraph, discover
from agent_bridge.graph_policy import policy_for_graph
from agent_bridge.models import ApprovalState, Decision, MiddlewareMode, Run, RunState
from agent_bridge.policy import Policy
from agent_bridge.run_driver import RunDriver
from agent_bridge.scripted_model import ScriptedChatModel
from agent_bridge.store import ApprovalStore
from bot.testing import RecordingNotifier
from tests.compiled_agent import lookup_customer, send_email, sent


@pytest.fixture
def store(sqlite_store: ApprovalStore) -> ApprovalStore:
    """This module's store: SQLite."""
    return sqlite_store


def mail(subject: str) -> str:
    return json.dumps(
        {"tool_calls": [{"name": "send_email", "args": {"to": "a@x.com", "subject": subject}}]}
    )


async def new_run(store: ApprovalStore, subject: str) -> Run:
    run = await store.create_run(
        Run(run_id=subject, thread_id=f"t-{subject}", task=mail(subject), channel_id="C1",
            user_id="U1")
    )  # fmt: skip
    claimed = await store.claim_run(run.run_id, owner="w", lease_s=60, from_state=RunState.QUEUED)
    assert claimed is not None
    return claimed


def driver_of(store: ApprovalStore, graph: CompiledGraph, saver: InMemorySaver) -> RunDriver:
    """The driver a worker builds for ``AGENT`` naming ``graph`` (``assemble_agent``,
    ``build_worker``), on ``saver``'s checkpoints."""
    shape = discover(graph)
    attached = graph.copy(update={"checkpointer": saver})
    return RunDriver(
        store=store,
        graph=cast("AgentGraph", attached),  # an AgentGraph at runtime (assemble_agent)
        notifier=RecordingNotifier(store),
        policy=policy_for_graph(Policy(), shape),
        args_schemas=shape.args_schemas,
        when_rules=when_rules_of(attached),
    )


def gating(when: Any, mode: MiddlewareMode = "batched") -> HumanInTheLoopMiddleware:
    """A middleware gating ``send_email`` (approve or reject), with ``when`` if given."""
    config: dict[str, Any] = {"allowed_decisions": ["approve", "reject"]}
    if when is not None:
        config["when"] = when
    interrupt_on: dict[str, Any] = {"send_email": config}
    return HumanInTheLoopMiddleware(interrupt_on=interrupt_on, interrupt_mode=mode)


async def rejected(store: ApprovalStore, driver: RunDriver, subject: str) -> Run:
    """A run of ``driver`` paused on one email, its card rejected."""
    run = await new_run(store, subject)
    assert (await driver.drive(run))[0] == RunState.WAITING
    (request,) = await store.requests_for_run(run.run_id)
    await store.record_decision(request.request_id, Decision(type="reject"), user_id="U2")
    return await store.get_run(run.run_id)


def tagged_external(request: Any) -> bool:
    """Review tools tagged ``external`` (per call, LangChain gives the rule the tool)."""
    return "external" in (request.tool.tags or [])


def untrusted(request: Any) -> bool:
    """Review mail to addresses the store does not list as trusted."""
    return request.runtime.store.get(("trusted",), request.tool_call["args"]["to"]) is None


class TenantState(AgentState):
    tenant: NotRequired[str]


class SetTenant(AgentMiddleware):
    """Puts the tenant in the agent's state, as an engineer's own middleware would."""

    state_schema = TenantState

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any]:
        return {"tenant": "prod"}


def in_prod(request: Any) -> bool:
    return bool(request.state.get("tenant") == "prod")


def graphs() -> dict[str, CompiledGraph]:
    tagged = send_email.model_copy(update={"tags": ["external"]})
    return {
        "tool": create_agent(
            ScriptedChatModel(),
            tools=[tagged, lookup_customer],
            middleware=[gating(tagged_external, "per_call")],
        ),
        "store": create_agent(
            ScriptedChatModel(),
            tools=[send_email, lookup_customer],
            middleware=[gating(untrusted)],
            store=InMemoryStore(),
        ),
        "state": create_agent(
            ScriptedChatModel(),
            tools=[send_email, lookup_customer],
            middleware=[SetTenant(), gating(in_prod)],
        ),
    }


@pytest.mark.parametrize("reads", ["tool", "store", "state"])
async def test_a_rule_reading_what_the_middleware_gives_it_is_no_false_stop(
    store: ApprovalStore, reads: str
) -> None:
    driver = driver_of(store, graphs()[reads], InMemorySaver())
    subject = f"reads-{reads}"
    state, _ = await driver.drive(await rejected(store, driver, subject))
    assert state == RunState.DONE
    assert sent[subject] == 0
    (done,) = await store.requests_for_run(subject)
    assert done.state == ApprovalState.APPLIED


def never(request: Any) -> bool:
    """A rule that lets every call through."""
    return False


def parent_of_sub_agent(mode: MiddlewareMode, when: Any) -> CompiledGraph:
    """A graph running a ``create_agent`` sub-agent, gating with ``when``, as a node."""
    sub = create_agent(
        ScriptedChatModel(), tools=[send_email, lookup_customer], middleware=[gating(when, mode)]
    )
    builder = StateGraph(MessagesState)
    builder.add_node("billing", sub)
    builder.add_edge(START, "billing")
    return builder.compile()


@pytest.mark.parametrize("mode", ["batched", "per_call"])
async def test_a_rule_a_deploy_added_to_a_sub_agent_stops_the_run_unsent(
    store: ApprovalStore, mode: MiddlewareMode
) -> None:
    saver = InMemorySaver()
    subject = f"sub-agent-{mode}"
    run = await rejected(store, driver_of(store, parent_of_sub_agent(mode, None), saver), subject)
    deployed = driver_of(store, parent_of_sub_agent(mode, never), saver)
    with pytest.raises(UndecidableCallError, match="now lets it through"):
        await deployed.drive(run)
    assert sent[subject] == 0


TRUSTED_THREADS = InMemoryStore()
"""The store of the graphs below: threads whose mail needs no review."""


def untrusted_thread(request: Any) -> bool:
    """Review mail unless the run's thread is listed as trusted (read by the thread ID the
    middleware's ``ExecutionInfo`` gives)."""
    thread = request.runtime.execution_info.thread_id
    return request.runtime.store.get(("trusted",), thread) is None


@pytest.mark.parametrize("mode", ["batched", "per_call"])
async def test_a_rule_reading_the_execution_info_is_asked_with_it(
    store: ApprovalStore, mode: MiddlewareMode
) -> None:
    """A deploy adds a rule reading ``runtime.execution_info`` that lets this thread's
    call through: the check gives the rule the node's thread, checkpoint and task, as
    LangChain does, so it answers as LangChain will, and the run stops unsent (had the
    check's request lacked it, the rule would raise there, be left to LangChain, and the
    rejected email would go)."""

    def graph(when: Any) -> CompiledGraph:
        return create_agent(
            ScriptedChatModel(),
            tools=[send_email, lookup_customer],
            middleware=[gating(when, mode)],
            store=TRUSTED_THREADS,
        )

    saver, subject = InMemorySaver(), f"execution-info-{mode}"
    run = await rejected(store, driver_of(store, graph(None), saver), subject)
    TRUSTED_THREADS.put(("trusted",), run.thread_id, {"by": "ops"})
    with pytest.raises(UndecidableCallError, match="now lets it through"):
        await driver_of(store, graph(untrusted_thread), saver).drive(run)
    assert sent[subject] == 0

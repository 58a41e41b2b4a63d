"""A compiled graph as the agent: what is read from its nodes (``graph_agent.discover``),
how ``AGENT`` names it, the checkpointer it gets, and the decisions of its per-call
interrupts (``interrupts.schema_decisions``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph

from agent_bridge.agent import assemble_agent, load_agent, load_tools
from agent_bridge.errors import ConfigurationError
from agent_bridge.graph_agent import CompiledGraph, attach_checkpointer, discover
from agent_bridge.graph_policy import policy_for_graph
from agent_bridge.interrupts import Placement, approval_requests, schema_decisions
from agent_bridge.models import MiddlewareMode, Run
from agent_bridge.policy import Policy
from agent_bridge.scripted_model import ScriptedChatModel
from agent_bridge.settings import WorkerConfig
from tests import compiled_agent
from tests.compiled_agent import lookup_customer, make_graph, send_email
from tests.harness import agent_config

EMAIL_TASK = json.dumps(
    {"tool_calls": [{"name": "send_email", "args": {"to": "a@example.com", "subject": "Hi"}}]}
)


def gated_agent(
    allowed: list[str], mode: MiddlewareMode = "batched", when: Any = None
) -> CompiledGraph:
    """A ``create_agent`` graph gating ``send_email`` with ``allowed`` (and ``when``)."""
    config: dict[str, Any] = {"allowed_decisions": allowed}
    if when is not None:
        config["when"] = when
    interrupt_on: dict[str, Any] = {"send_email": config}
    return create_agent(
        ScriptedChatModel(),
        tools=[send_email, lookup_customer],
        middleware=[HumanInTheLoopMiddleware(interrupt_on=interrupt_on, interrupt_mode=mode)],
    )


def parent_of(*agents: CompiledGraph) -> CompiledGraph:
    """A hand-built graph running each agent as a subgraph node, one after the other."""
    builder = StateGraph(MessagesState)
    previous = START
    for number, agent in enumerate(agents):
        name = f"agent_{number}"
        builder.add_node(name, agent)
        builder.add_edge(previous, name)
        previous = name
    return builder.compile()


def external_only(request: Any) -> bool:
    """A ``when`` predicate: review mail to outside addresses."""
    return not str(request.tool_call["args"].get("to", "")).endswith("@example.com")


class MailRules:
    """``when`` rules as methods of one object."""

    def external(self, request: Any) -> bool:
        return external_only(request)


def graph_of_settings(settings: WorkerConfig) -> CompiledGraph:
    """An ``AGENT`` factory taking the worker's settings."""
    assert isinstance(settings, WorkerConfig)
    return make_graph("per_call")


saved_graph = create_agent(ScriptedChatModel(), tools=[send_email], checkpointer=InMemorySaver())
"""A graph its engineer compiled with a checkpointer of its own."""


def agent_named(tmp_path: Path, reference: str, **changes: Any) -> WorkerConfig:
    return agent_config(tmp_path).model_copy(update={"agent": reference, **changes})


class TestDiscover:
    @pytest.mark.parametrize("mode", ["batched", "per_call"])
    def test_tools_schemas_and_gating_come_from_the_graphs_nodes(
        self, mode: MiddlewareMode
    ) -> None:
        shape = discover(make_graph(mode))
        assert set(shape.tools) == {"send_email", "lookup_customer"}
        assert shape.args_schemas["send_email"]["required"] == ["to", "subject"]
        assert shape.args_schemas["lookup_customer"]["properties"]["name"]["type"] == "string"
        assert dict(shape.gated) == {"send_email": ("approve", "reject")}  # False: not gated
        assert shape.interrupt_mode == mode

    def test_a_graph_without_the_middleware_gates_nothing(self) -> None:
        shape = discover(create_agent(ScriptedChatModel(), tools=[send_email]))
        assert set(shape.tools) == {"send_email"}
        assert dict(shape.gated) == {} and shape.interrupt_mode is None

    def test_a_subgraphs_tools_and_middleware_are_found(self) -> None:
        shape = discover(parent_of(make_graph()))
        assert set(shape.tools) == {"send_email", "lookup_customer"}
        assert dict(shape.gated) == {"send_email": ("approve", "reject")}

    def test_two_middleware_allowing_a_tool_different_decisions_are_refused(self) -> None:
        parent = parent_of(gated_agent(["approve"]), gated_agent(["approve", "reject"]))
        with pytest.raises(ConfigurationError, match="gate send_email with different allowed"):
            discover(parent)

    def test_a_tools_when_predicate_is_read_unless_two_middlewares_disagree(self) -> None:
        assert dict(discover(gated_agent(["approve"])).when) == {}
        rules = MailRules()
        shared = discover(  # one rule, as a bound method: a new object at each access
            parent_of(
                gated_agent(["approve"], when=rules.external),
                gated_agent(["approve"], when=rules.external),
            )
        )
        assert dict(shared.when) == {"send_email": rules.external}
        unequal = discover(  # which one raised a call's interrupt is not known: none
            parent_of(
                gated_agent(["approve"], when=external_only), gated_agent(["approve"], when=None)
            )
        )
        assert dict(unequal.gated) == {"send_email": ("approve",)}
        assert dict(unequal.when) == {}

    def test_two_interrupt_modes_in_one_graph_are_refused(self) -> None:
        parent = parent_of(make_graph("batched"), make_graph("per_call"))
        with pytest.raises(ConfigurationError, match="use both interrupt modes"):
            discover(parent)


class TestCheckpointer:
    async def test_the_graph_gets_the_workers_checkpointer_and_runs_on_it(self) -> None:
        mine = make_graph("per_call")
        saver = InMemorySaver()
        attached = attach_checkpointer(mine, saver, reference="x:graph")
        assert attached.checkpointer is saver and mine.checkpointer is None  # a copy
        config: RunnableConfig = {"configurable": {"thread_id": "t1"}}
        await attached.ainvoke({"messages": [{"role": "user", "content": EMAIL_TASK}]}, config)
        assert saver.get_tuple(config) is not None
        (interrupt,) = (await attached.aget_state(config)).interrupts
        assert interrupt.value["name"] == "send_email"

    def test_a_graph_compiled_with_its_own_checkpointer_is_refused(self) -> None:
        with pytest.raises(ConfigurationError, match=r"AGENT=x:g was compiled with a "):
            attach_checkpointer(saved_graph, InMemorySaver(), reference="x:g")

    def test_the_refusal_names_the_checkpointer_at_start(self, tmp_path: Path) -> None:
        settings = agent_named(tmp_path, "tests.test_graph_agent:saved_graph")
        with pytest.raises(ConfigurationError, match=r"\(InMemorySaver\)\. Compile it without"):
            assemble_agent(settings=settings, policy=Policy(), checkpointer=InMemorySaver())


class TestLoading:
    @pytest.mark.parametrize(
        ("reference", "mode"),
        [
            ("tests.compiled_agent:graph", "batched"),  # the compiled graph itself
            ("tests.compiled_agent:make_graph", "batched"),  # a factory of no arguments
            ("tests.test_graph_agent:graph_of_settings", "per_call"),  # of the settings
        ],
    )
    def test_agent_names_a_graph_or_a_factory_of_one(
        self, tmp_path: Path, reference: str, mode: str
    ) -> None:
        source = load_agent(agent_named(tmp_path, reference))
        assert discover(source).interrupt_mode == mode  # type: ignore[arg-type]

    def test_a_list_of_tools_still_loads(self, tmp_path: Path) -> None:
        tools = load_agent(agent_named(tmp_path, "tests.report_agent:tools"))
        assert [t.name for t in tools] == ["send_report"]  # type: ignore[union-attr]

    def test_something_else_is_refused_naming_what_agent_may_be(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigurationError, match="a compiled LangGraph graph"):
            load_agent(agent_named(tmp_path, "tests.compiled_agent:SYSTEM_PROMPT"))

    def test_a_caller_that_builds_from_tools_refuses_a_graph(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigurationError, match="is a compiled graph; a list of tools"):
            load_tools(agent_named(tmp_path, "tests.compiled_agent:graph"))

    def test_the_worker_drives_the_graph_with_its_gating_and_schemas(self, tmp_path: Path) -> None:
        agent = assemble_agent(
            settings=agent_named(tmp_path, "tests.compiled_agent:per_call_graph"),
            policy=Policy(),
            checkpointer=InMemorySaver(),
        )
        assert agent.policy.interrupt_mode == "per_call"
        assert agent.policy.gated("send_email") is not None
        assert agent.policy.gated("lookup_customer") is None
        assert set(agent.args_schemas) == {"send_email", "lookup_customer"}


class TestSystemPrompt:
    def test_system_prompt_is_refused_with_a_graph(self, tmp_path: Path) -> None:
        settings = agent_named(tmp_path, "tests.compiled_agent:graph", system_prompt="Be kind.")
        with pytest.raises(ConfigurationError, match="SYSTEM_PROMPT is set, but AGENT=tests"):
            assemble_agent(settings=settings, policy=Policy(), checkpointer=InMemorySaver())

    def test_a_chat_model_is_refused_with_a_graph(self, tmp_path: Path) -> None:
        settings = agent_named(tmp_path, "tests.compiled_agent:graph")
        with pytest.raises(ConfigurationError, match="a chat model was given, but AGENT"):
            assemble_agent(
                settings=settings,
                policy=Policy(),
                checkpointer=InMemorySaver(),
                model=ScriptedChatModel(),
            )

    def test_the_policys_system_prompt_is_refused_with_a_graph(self, tmp_path: Path) -> None:
        settings = agent_named(tmp_path, "tests.compiled_agent:graph")
        with pytest.raises(ConfigurationError, match="The policy sets system_prompt"):
            assemble_agent(
                settings=settings,
                policy=Policy(system_prompt="Be kind."),
                checkpointer=InMemorySaver(),
            )

    @pytest.mark.parametrize("where", ["SYSTEM_PROMPT", "policy"])
    async def test_a_tools_agent_gets_the_prompt(self, tmp_path: Path, where: str) -> None:
        prompt = f"You run billing ({where})."
        settings = agent_named(
            tmp_path,
            "tests.report_agent:tools",
            system_prompt=prompt if where == "SYSTEM_PROMPT" else None,
        )
        policy = Policy(system_prompt=prompt if where == "policy" else None)
        agent = assemble_agent(
            settings=settings,
            policy=policy,
            checkpointer=InMemorySaver(),
            model=compiled_agent.PromptRecordingModel(),
        )
        task = f"Say hello ({where})"
        config: RunnableConfig = {"configurable": {"thread_id": where}}
        async for _ in agent.graph.astream(
            {"messages": [{"role": "user", "content": task}]}, config
        ):
            pass
        assert compiled_agent.prompts[task] == prompt

    def test_both_prompts_are_refused_for_a_tools_agent(self, tmp_path: Path) -> None:
        settings = agent_named(tmp_path, "tests.report_agent:tools", system_prompt="A.")
        with pytest.raises(ConfigurationError, match="SYSTEM_PROMPT and the policy's"):
            assemble_agent(
                settings=settings,
                policy=Policy(system_prompt="B."),
                checkpointer=InMemorySaver(),
            )


class TestPerCallDecisions:
    @pytest.mark.parametrize(
        "allowed", [["approve", "reject"], ["respond"], ["approve", "edit", "reject", "respond"]]
    )
    async def test_a_per_call_interrupts_decisions_are_its_response_schemas(
        self, allowed: list[str]
    ) -> None:
        graph = attach_checkpointer(
            gated_agent(allowed, "per_call"), InMemorySaver(), reference="x:g"
        )
        config: RunnableConfig = {"configurable": {"thread_id": "t"}}
        await graph.ainvoke({"messages": [{"role": "user", "content": EMAIL_TASK}]}, config)
        (interrupt,) = (await graph.aget_state(config)).interrupts
        assert schema_decisions(interrupt.response_schema) == allowed

    @pytest.mark.parametrize(
        "schema", [None, {}, {"type": "object"}, {"properties": {"type": {"const": "maybe"}}}]
    )
    def test_a_schema_naming_no_decision_gives_none(self, schema: Any) -> None:
        assert schema_decisions(schema) == []


@pytest.mark.parametrize("mode", ["batched", "per_call"])
async def test_a_call_without_a_description_shows_the_middlewares_prefix_alone(
    mode: MiddlewareMode,
) -> None:
    plain = create_agent(
        ScriptedChatModel(),
        tools=[send_email],
        middleware=[
            HumanInTheLoopMiddleware(
                interrupt_on={"send_email": True},
                description_prefix="Billing wants to send",
                interrupt_mode=mode,
            )
        ],
    )
    graph = attach_checkpointer(plain, InMemorySaver(), reference="x:g")
    config: RunnableConfig = {"configurable": {"thread_id": mode}}
    await graph.ainvoke({"messages": [{"role": "user", "content": EMAIL_TASK}]}, config)
    snapshot = await graph.aget_state(config)
    run = Run(run_id="r", thread_id=mode, task="t", channel_id="C1", user_id="U1")
    policy = policy_for_graph(Policy(), discover(plain))
    placement = Placement(run=run, policy=policy, args_schemas={})
    (request,) = approval_requests(
        snapshot.interrupts, messages=snapshot.values["messages"], placement=placement
    )
    assert request.description == "Billing wants to send"  # not the args' Python repr again
    assert request.allowed_decisions == ["approve", "edit", "reject", "respond"]

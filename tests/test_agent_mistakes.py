"""An engineer's mistakes in bringing a compiled graph, each refused at start.

Every mistake an engineer who already has a LangGraph agent is likely to make with
``AGENT``, ``POLICY`` and ``MODEL`` must stop the worker with one sentence naming what to
change: never a traceback, never a run that finishes having done nothing, never a tool
that runs unreviewed although its engineer meant it gated. The console script itself
is run where the difference matters (``sys.path``: ``agent-bridge`` is not ``python -m``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from typing_extensions import TypedDict

from agent_bridge.agent import assemble_agent, load_agent
from agent_bridge.errors import ConfigurationError
from agent_bridge.graph_agent import CompiledGraph, discover
from agent_bridge.policy import Policy
from agent_bridge.policy_file import load_policy
from agent_bridge.scripted_model import ScriptedChatModel
from agent_bridge.settings import WorkerConfig
from tests.compiled_agent import lookup_customer, send_email
from tests.harness import agent_config

REPO = Path(__file__).resolve().parent.parent
CONSOLE_SCRIPT = Path(sys.executable).with_name("agent-bridge")
PROCESS_TIMEOUT_S = 90.0
MISTAKES = "tests.test_agent_mistakes"


def hitl(**interrupt_on: Any) -> HumanInTheLoopMiddleware:
    return HumanInTheLoopMiddleware(interrupt_on=interrupt_on)


gated_under_another_name = create_agent(
    ScriptedChatModel(), tools=[send_email], middleware=[hitl(email=True)]
)
"""``interrupt_on`` names ``email``; the tool is ``send_email``."""

with_breakpoint = create_agent(ScriptedChatModel(), tools=[send_email], interrupt_before=["tools"])
"""A static breakpoint before the tools: a pause with no interrupt to answer."""


class Query(TypedDict):
    query: str


def _answer(state: Query) -> Query:
    return {"query": "answered"}


_builder = StateGraph(Query)
_builder.add_node("answer", _answer)
_builder.add_edge(START, "answer")
without_messages = _builder.compile()
"""A graph whose state has no ``messages``: the task would be dropped, no answer read."""


class QuestionState(MessagesState):
    question: str


class Question(TypedDict):
    question: str


def _reply(state: QuestionState) -> dict[str, Any]:
    return {"messages": [AIMessage(f"Answer to: {state.get('question')!r}")]}


_asking = StateGraph(QuestionState, input_schema=Question)
_asking.add_node("reply", _reply)
_asking.add_edge(START, "reply")
input_without_messages = _asking.compile()
"""``messages`` in its state, not in its input schema: LangGraph would drop the task and
the graph answer "Answer to: None"."""


def raising_factory() -> CompiledGraph:
    raise RuntimeError("OPENAI_API_KEY is not set")


def two_argument_factory(settings: WorkerConfig, region: str) -> CompiledGraph:
    raise AssertionError("never called")


def keyword_only_factory(*, settings: WorkerConfig) -> CompiledGraph:
    raise AssertionError("never called")


good_graph = create_agent(
    ScriptedChatModel(), tools=[send_email, lookup_customer], middleware=[hitl(send_email=True)]
)


def named(tmp_path: Path, reference: str, **changes: Any) -> WorkerConfig:
    return agent_config(tmp_path).model_copy(update={"agent": reference, **changes})


def assemble(settings: WorkerConfig, policy: Policy | None = None) -> None:
    assemble_agent(settings=settings, policy=policy or Policy(), checkpointer=InMemorySaver())


def test_a_tool_gated_under_a_name_the_graph_has_no_tool_of_is_refused() -> None:
    with pytest.raises(
        ConfigurationError,
        match=r"interrupt_on names email, which no tool of the graph is called "
        r"\(its tools: send_email\)",
    ):
        discover(gated_under_another_name)


def test_a_static_breakpoint_is_refused_naming_the_node(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"interrupt_before=\['tools'\]"):
        assemble(named(tmp_path, f"{MISTAKES}:with_breakpoint"))


def test_a_graph_without_messages_in_its_state_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"has no 'messages' in its state"):
        assemble(named(tmp_path, f"{MISTAKES}:without_messages"))


def test_a_graph_whose_input_takes_no_messages_is_refused(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigurationError, match=r"takes no 'messages' as input \(its input_schema has question\)"
    ):
        assemble(named(tmp_path, f"{MISTAKES}:input_without_messages"))


@pytest.mark.parametrize(
    ("factory", "said"),
    [
        ("raising_factory", r"raised RuntimeError: OPENAI_API_KEY is not set"),
        ("two_argument_factory", r"takes \(settings, region\)"),
        ("keyword_only_factory", r"takes \(\*, settings\)"),
    ],
)
def test_a_factory_that_cannot_be_called_is_named_not_a_traceback(
    tmp_path: Path, factory: str, said: str
) -> None:
    with pytest.raises(ConfigurationError, match=rf"AGENT={MISTAKES}:{factory} {said}"):
        load_agent(named(tmp_path, f"{MISTAKES}:{factory}"))


def test_a_module_failing_at_import_is_named_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "needs_a_key.py").write_text('import os\nKEY = os.environ["NO_SUCH_KEY_SET"]\n')
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(
            ConfigurationError,
            match=r"Cannot import 'needs_a_key' for 'needs_a_key:graph': KeyError: "
            r"'NO_SUCH_KEY_SET'",
        ):
            load_agent(named(tmp_path, "needs_a_key:graph"))
    finally:
        sys.path.remove(str(tmp_path))


def test_model_is_refused_with_a_graph_named_itself(tmp_path: Path) -> None:
    settings = named(tmp_path, f"{MISTAKES}:good_graph", model="openai:gpt-4.1")
    with pytest.raises(ConfigurationError, match=r"MODEL=openai:gpt-4.1 is set, but AGENT="):
        assemble(settings)


def test_the_demo_policy_left_with_a_graph_is_named_as_such(tmp_path: Path) -> None:
    settings = named(tmp_path, f"{MISTAKES}:good_graph")  # POLICY unset
    with pytest.raises(ConfigurationError, match=r"^POLICY is not set, so the demo policy"):
        assemble(settings, load_policy(settings.policy))


def console_script(*args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    """Run the installed ``agent-bridge`` from the repository root, as the README does."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AGENT", "POLICY")}
    return subprocess.run(
        [str(CONSOLE_SCRIPT), *args],
        cwd=REPO,
        env={**env, **variables},
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
        check=False,
    )


def test_the_console_script_imports_the_examples_from_the_repository_root() -> None:
    mail = {"name": "send_email", "args": {"to": "ada@example.com", "subject": "Hi", "body": "."}}
    done = console_script(
        "demo",
        "--unattended",
        "--task",
        json.dumps({"tool_calls": [mail]}),
        AGENT="examples.compiled_graph_agent:make_graph",
        POLICY="examples/compiled_graph_policy.yml",
    )
    assert "No module named 'examples'" not in done.stderr
    assert "Final answer:" in done.stdout, done.stdout + done.stderr

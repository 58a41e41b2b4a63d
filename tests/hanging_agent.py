"""A "bring your own agent" whose gated tool ``hang`` never returns (a network call with
no timeout, a lock waited on for good), beside a gated ``note`` that returns at once and
ungated ones: ``give_up`` raising its own ``TimeoutError``, ``delegate`` running a
sub-agent whose own ``step_timeout`` ends it; and, run only in a worker
process (their threads outlive the test), ``block``, a sync tool that never returns,
``leave_behind``, returning with a thread of its own blocked for good, and ``quit_now``,
raising ``SystemExit(0)``. ``HANGING_AGENT`` is its
``AGENT``, ``HANGING_POLICY`` its policy; the ``*_TASK`` are the scripted model's tasks
calling each."""

from __future__ import annotations

import asyncio
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypedDict

from langchain_core.tools import BaseTool, StructuredTool
from langgraph.graph import START, StateGraph

from agent_bridge.settings import WorkerConfig

HANGING_AGENT = "tests.hanging_agent:make_tools"
HANGING_POLICY = Path(__file__).parent / "fixtures" / "hanging_policy.yml"
HANG_TASK = json.dumps({"tool_calls": [{"name": "hang", "args": {}}]})
NOTE_TASK = json.dumps({"tool_calls": [{"name": "note", "args": {"text": "hello"}}]})
GIVE_UP_TASK = json.dumps({"tool_calls": [{"name": "give_up", "args": {}}]})
BLOCK_TASK = json.dumps({"tool_calls": [{"name": "block", "args": {}}]})
LEAVE_BEHIND_TASK = json.dumps({"tool_calls": [{"name": "leave_behind", "args": {}}]})
QUIT_TASK = json.dumps({"tool_calls": [{"name": "quit_now", "args": {}}]})
DELEGATE_TASK = json.dumps({"tool_calls": [{"name": "delegate", "args": {}}]})
BLOCKED_FILE = "blocked.txt"
"""Written in the workspace by ``block`` as it starts blocking."""


def make_tools(settings: WorkerConfig) -> list[BaseTool]:
    """The agent's tools (``block`` writes in ``settings.workspace_dir``)."""

    async def hang() -> str:
        """Wait for an answer that never comes."""
        await asyncio.Event().wait()
        return "never"

    def note(text: str) -> str:
        """Note ``text``."""
        return f"noted {text}"

    def block() -> str:
        """Read from a socket that never answers (a sync call with no timeout)."""
        settings.workspace_dir.mkdir(parents=True, exist_ok=True)
        (settings.workspace_dir / BLOCKED_FILE).write_text("blocked")
        threading.Event().wait()
        return "never"

    def leave_behind() -> str:
        """Call a client that times out by giving up on its own worker thread, which
        stays blocked (``future.result(timeout=...)``), and return."""
        ThreadPoolExecutor(max_workers=1).submit(threading.Event().wait)
        settings.workspace_dir.mkdir(parents=True, exist_ok=True)
        (settings.workspace_dir / BLOCKED_FILE).write_text("left behind")
        return "gave up waiting"

    async def delegate() -> str:
        """Ask a sub-agent whose steps are bounded to 0.1 s (its own ``step_timeout``),
        and whose one step takes a second."""
        builder = StateGraph(SubAgentState)
        builder.add_node("slow", _slow_step)
        builder.add_edge(START, "slow")
        sub_agent = builder.compile()
        sub_agent.step_timeout = 0.1
        await sub_agent.ainvoke({"done": False})
        return "delegated"

    def quit_now() -> str:
        """Stop, as a command-line program does when it is done."""
        raise SystemExit(0)

    def give_up() -> str:
        """Call an API that times out (its client's own ``TimeoutError``)."""
        raise TimeoutError("the API did not answer in 30 s")

    return [
        StructuredTool.from_function(coroutine=hang, name="hang", description=hang.__doc__),
        StructuredTool.from_function(note),
        StructuredTool.from_function(give_up),
        StructuredTool.from_function(block),
        StructuredTool.from_function(leave_behind),
        StructuredTool.from_function(quit_now),
        StructuredTool.from_function(
            coroutine=delegate, name="delegate", description=delegate.__doc__
        ),
    ]


class SubAgentState(TypedDict):
    """``delegate``'s sub-agent's state."""

    done: bool


async def _slow_step(state: SubAgentState) -> SubAgentState:
    await asyncio.sleep(1.0)
    return {"done": True}

"""A "bring your own agent" whose gated tool ``hang`` never returns (a network call with
no timeout, a lock waited on for good), beside a gated ``note`` that returns at once and
an ungated ``give_up`` raising its own ``TimeoutError`` and an ungated sync ``block`` that
never returns (run only in a worker process: its thread outlives the test). ``HANGING_AGENT`` is its
``AGENT``, ``HANGING_POLICY`` its policy; the ``*_TASK`` are the scripted model's tasks
calling each."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

from langchain_core.tools import BaseTool, StructuredTool

from agent_bridge.settings import WorkerConfig

HANGING_AGENT = "tests.hanging_agent:make_tools"
HANGING_POLICY = Path(__file__).parent / "fixtures" / "hanging_policy.yml"
HANG_TASK = json.dumps({"tool_calls": [{"name": "hang", "args": {}}]})
NOTE_TASK = json.dumps({"tool_calls": [{"name": "note", "args": {"text": "hello"}}]})
GIVE_UP_TASK = json.dumps({"tool_calls": [{"name": "give_up", "args": {}}]})
BLOCK_TASK = json.dumps({"tool_calls": [{"name": "block", "args": {}}]})
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

    def give_up() -> str:
        """Call an API that times out (its client's own ``TimeoutError``)."""
        raise TimeoutError("the API did not answer in 30 s")

    return [
        StructuredTool.from_function(coroutine=hang, name="hang", description=hang.__doc__),
        StructuredTool.from_function(note),
        StructuredTool.from_function(give_up),
        StructuredTool.from_function(block),
    ]

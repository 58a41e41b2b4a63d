"""A "bring your own agent" whose gated tool ``hang`` never returns (a network call with
no timeout, a lock waited on for good), beside a gated ``note`` that returns at once.
``HANGING_AGENT`` is its ``AGENT`` and policy; ``HANG_TASK`` and ``NOTE_TASK`` are the
scripted model's tasks calling each."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from langchain_core.tools import BaseTool, StructuredTool

from agent_bridge.settings import WorkerConfig

HANGING_AGENT = "tests.hanging_agent:make_tools"
HANGING_POLICY = Path(__file__).parent / "fixtures" / "hanging_policy.yml"
HANG_TASK = json.dumps({"tool_calls": [{"name": "hang", "args": {}}]})
NOTE_TASK = json.dumps({"tool_calls": [{"name": "note", "args": {"text": "hello"}}]})


def make_tools(settings: WorkerConfig) -> list[BaseTool]:
    """The agent's tools (``settings`` unused: they touch nothing)."""

    async def hang() -> str:
        """Wait for an answer that never comes."""
        await asyncio.Event().wait()
        return "never"

    def note(text: str) -> str:
        """Note ``text``."""
        return f"noted {text}"

    return [
        StructuredTool.from_function(coroutine=hang, name="hang", description=hang.__doc__),
        StructuredTool.from_function(note),
    ]

"""A "bring your own agent" whose tool ends the process the Python way: ``exit_now``
raises ``SystemExit(0)``, as a command-line program wrapped as a tool does (argparse,
click and ``sys.exit`` all raise it). ``EXITING_AGENT`` is its ``AGENT`` and a policy
gating nothing, so a run of ``EXIT_TASK`` runs it at once."""

from __future__ import annotations

import json

from langchain_core.tools import BaseTool, StructuredTool

from agent_bridge.settings import WorkerConfig

EXITING_AGENT = {
    "AGENT": "tests.exiting_agent:make_tools",
    "POLICY": "tests/fixtures/interrupts_policy.yml",
}
EXIT_TASK = json.dumps({"tool_calls": [{"name": "exit_now", "args": {}}]})
"""The scripted model's task that calls ``exit_now``."""


def make_tools(settings: WorkerConfig) -> list[BaseTool]:
    """The agent's one tool (``settings`` unused: it touches nothing)."""

    def exit_now() -> str:
        """Stop, as a command-line program does when it is done."""
        raise SystemExit(0)

    return [StructuredTool.from_function(exit_now)]

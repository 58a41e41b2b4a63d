"""A "bring your own agent" whose tool is not idempotent: it appends a line per run.

Used as ``AGENT=tests.ledger_agent:make_tools`` with ``tests/fixtures/ledger_policy.yml``
by the crash tests and the soak: ``ledger.txt`` in the workspace gets one line per real
execution of ``append_line``, so a call run twice shows as two lines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool

from agent_bridge.settings import WorkerConfig

LEDGER_FILE = "ledger.txt"


def ledger_path(workspace_dir: Path) -> Path:
    """Where ``append_line`` writes in ``workspace_dir``."""
    return workspace_dir / LEDGER_FILE


def ledger_lines(workspace_dir: Path) -> list[str]:
    """Every line written so far, as ``<tool_call_id> <line>``, oldest first."""
    path = ledger_path(workspace_dir)
    return path.read_text().splitlines() if path.exists() else []


def make_tools(settings: WorkerConfig) -> list[BaseTool]:
    """The ledger agent's tools, writing under ``settings.workspace_dir``."""
    path = ledger_path(settings.workspace_dir)

    def append_line(line: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Append one line to the ledger."""
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as out:
            out.write(f"{tool_call_id} {line}\n")
        return f"appended {line}"

    return [StructuredTool.from_function(append_line)]

"""A "bring your own agent" whose tool is not idempotent: it appends a line per run.

Used as ``AGENT=tests.ledger_agent:make_tools`` with ``tests/fixtures/ledger_policy.yml``
by the crash tests and the soak: ``ledger.txt`` in the workspace gets one line per real
execution of ``append_line`` (``<tool_call_id> <pid> <line>``), so a call run twice
shows as two lines, and the process that ran each.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, NamedTuple

from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool

from agent_bridge.settings import WorkerConfig

LEDGER_FILE = "ledger.txt"


def ledger_path(workspace_dir: Path) -> Path:
    """Where ``append_line`` writes in ``workspace_dir``."""
    return workspace_dir / LEDGER_FILE


class Entry(NamedTuple):
    """One real execution of ``append_line``."""

    tool_call_id: str
    pid: int
    line: str


def ledger_entries(workspace_dir: Path) -> list[Entry]:
    """Every execution so far, oldest first."""
    path = ledger_path(workspace_dir)
    lines = path.read_text().splitlines() if path.exists() else []
    entries = []
    for text in lines:
        call_id, pid, line = text.split(" ", 2)
        entries.append(Entry(call_id, int(pid), line))
    return entries


def ledger_lines(workspace_dir: Path) -> list[str]:
    """The line each execution so far appended, oldest first."""
    return [entry.line for entry in ledger_entries(workspace_dir)]


def make_tools(settings: WorkerConfig) -> list[BaseTool]:
    """The ledger agent's tools, writing under ``settings.workspace_dir``."""
    path = ledger_path(settings.workspace_dir)

    def append_line(line: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Append one line to the ledger."""
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as out:
            out.write(f"{tool_call_id} {os.getpid()} {line}\n")
        return f"appended {line}"

    return [StructuredTool.from_function(append_line)]

"""The benchmark's agent: one gated tool, ``mark``, that notes when it starts.

Used as ``AGENT=bench.agent:make_tools`` with ``bench/policy.yml``, in the benchmark's
own process and in real worker processes alike: each execution appends
``<label> <wall clock, s> <pid>`` to ``marks.txt`` in the workspace, so "the gated tool
started" is an observable event whoever ran it (wall clock, since processes differ).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

from agent_bridge.settings import WorkerConfig

MARKS_FILE = "marks.txt"
AGENT = "bench.agent:make_tools"
POLICY = Path(__file__).parent / "policy.yml"


def marks_path(workspace_dir: Path) -> Path:
    """Where ``mark`` writes in ``workspace_dir``."""
    return workspace_dir / MARKS_FILE


def marks(workspace_dir: Path) -> dict[str, float]:
    """``label -> wall-clock time (s)`` of every execution of ``mark`` so far (the
    first, if a label ran twice)."""
    path = marks_path(workspace_dir)
    found: dict[str, float] = {}
    if path.exists():
        for line in path.read_text().splitlines(keepends=True):
            if not line.endswith("\n"):
                break  # still being written: the next read has it whole
            label, at, _pid = line.split(" ")
            found.setdefault(label, float(at))
    return found


def task(label: str) -> dict[str, Any]:
    """The scripted model's task: call ``mark(label)`` (gated), then answer."""
    return {"tool_calls": [{"name": "mark", "args": {"label": label}}]}


def make_tools(settings: WorkerConfig) -> list[BaseTool]:
    """The benchmark agent's tools, writing under ``settings.workspace_dir``."""
    path = marks_path(settings.workspace_dir)

    def mark(label: str) -> str:
        """Note that this call started (its label and the time)."""
        started = time.time()
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as out:
            out.write(f"{label} {started:.6f} {os.getpid()}\n")
        return f"marked {label}"

    return [StructuredTool.from_function(mark)]

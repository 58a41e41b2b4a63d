"""An engineer's mistakes in bringing a compiled graph, each refused at start.

Every mistake an engineer who already has a LangGraph agent is likely to make with
``AGENT``, ``POLICY`` and ``MODEL`` must stop the worker with one sentence naming what to
change: never a traceback, never a run that finishes having done nothing, never a tool
that runs unreviewed although its engineer meant it gated. The console script itself
is run where the difference matters (``sys.path``: ``agent-bridge`` is not ``python -m``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONSOLE_SCRIPT = Path(sys.executable).with_name("agent-bridge")
PROCESS_TIMEOUT_S = 90.0


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
    done = console_script(
        "demo",
        "--unattended",
        AGENT="examples.compiled_graph_agent:make_graph",
        POLICY="examples/compiled_graph_policy.yml",
    )
    assert "No module named 'examples'" not in done.stderr
    assert "Final answer:" in done.stdout, done.stdout + done.stderr

"""A real local LangGraph Agent Server for the tests: ``langgraph dev`` on a free port.

It serves the repository's ``langgraph.json`` (the demo agent in both interrupt modes,
``agent_bridge/served_agent.py``) with the tests' own graphs beside it (``TEST_GRAPHS``:
an Agent Inbox interrupt, ``tests/interrupt_graphs.py``; an agent with a static breakpoint,
``tests/breakpoint_graphs.py``), or a copy of the example's, from
``langgraph-cli[inmem]``: offline, no browser, no LangSmith tracing, no reload. Its
in-memory state is kept in a folder of the session's own (``.langgraph_api`` in its
working directory), and the demo tools work under ``workspace``
(``WORKSPACE_DIR/<thread_id>``).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from langchain_core.messages import ToolMessage
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from agent_bridge.policy_file import POLICIES_DIR
from agent_bridge.remote_agent import local_messages
from agent_bridge.settings import DEMO_TOOLS, WorkerConfig
from tests.ports import free_port

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "langgraph.json"
ASSISTANTS = {"batched": "agent", "per_call": "agent_per_call"}
"""The repository's ``langgraph.json`` graphs, one per interrupt mode."""
TEST_GRAPHS = {
    **{name: f"tests.interrupt_graphs:{name}" for name in ("inbox", "form", "plain", "parallel")},
    "breakpoint": "tests.breakpoint_graphs:deployed_graph",
}
"""Graphs the tests serve beside the repository's (compiled without a checkpointer)."""
EXAMPLE_CONFIG = REPO / "examples" / "deployed_graph" / "langgraph.json"
"""The deployed-graph example an engineer copies."""
START_TIMEOUT_S = 90.0
"""How long ``langgraph dev`` may take to answer ``GET /ok`` (it imports the graphs)."""
STOP_TIMEOUT_S = 15.0
READY_POLL_S = 0.1
ANNOUNCED = re.compile(r"API: (?:\x1b\[[0-9;]*m)*(http://127\.0\.0\.1:\d+)(?=\x1b|\s)")
"""``langgraph dev``'s banner line naming the URL it serves, the port it took (``- 🚀 API:
http://127.0.0.1:PORT``, the URL maybe coloured), once the line is written whole."""


@dataclass
class AgentServer:
    """A running ``langgraph dev``: its URL, the demo tools' folder, its log."""

    process: subprocess.Popen[bytes]
    url: str
    workspace: Path
    log: Path

    def client(self) -> LangGraphClient:
        """A fresh ``langgraph-sdk`` client of the server (one per event loop)."""
        return get_client(url=self.url, api_key=None)

    def files(self, thread_id: str) -> Path:
        """Where the demo tools of ``thread_id`` write files."""
        return self.workspace / thread_id / "files"

    async def tool_messages(self, thread_id: str) -> list[ToolMessage]:
        """Every ``ToolMessage`` in the server's state of ``thread_id``, oldest first."""
        client = self.client()
        try:
            state: Any = await client.threads.get_state(thread_id)
        finally:
            await client.aclose()
        messages = local_messages(state["values"].get("messages", []))
        return [m for m in messages if isinstance(m, ToolMessage)]

    async def server_runs(self, thread_id: str) -> list[dict[str, Any]]:
        """The server's runs of ``thread_id`` (each ``runs.stream`` a worker made)."""
        client = self.client()
        try:
            return [dict(r) for r in await client.runs.list(thread_id, limit=100)]
        finally:
            await client.aclose()


def served_config(folder: Path) -> Path:
    """A ``langgraph.json`` in ``folder``: the repository's graphs and ``TEST_GRAPHS``,
    importable from the repository (its ``dependencies``)."""
    config = json.loads(CONFIG.read_text())
    config["dependencies"] = [str(REPO)]
    config["graphs"] = {**config["graphs"], **TEST_GRAPHS}
    path = folder / "langgraph.json"
    path.write_text(json.dumps(config, indent=2))
    return path


def start_agent_server(folder: Path, config: Path = CONFIG) -> AgentServer:
    """Start ``langgraph dev`` of ``config`` (a ``langgraph.json``; its graphs' file
    paths are read from ``folder``) in ``folder`` on a free port and return once it
    answers ``GET /ok`` on the port it announces (``ANNOUNCED``): ``langgraph dev``
    takes another itself if the one asked for was taken meanwhile (``tests.ports``).

    Raises:
        RuntimeError: If it exits or does not answer within ``START_TIMEOUT_S`` (its
            log is in the message).
    """
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "langgraph-dev.log"
    since = log.stat().st_size if log.exists() else 0
    env = {
        **os.environ,
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "WORKSPACE_DIR": str(folder / "workspace"),
    }
    command = [
        str(Path(sys.executable).with_name("langgraph")),
        "dev",
        "--config",
        str(config),
        "--host",
        "127.0.0.1",
        "--port",
        str(free_port()),
        "--no-browser",
        "--no-reload",
        "--allow-blocking",  # the demo tools use sqlite3 and files synchronously
        "--n-jobs-per-worker",
        "4",
    ]
    with log.open("ab") as out:
        process = subprocess.Popen(
            command, cwd=folder, env=env, stdout=out, stderr=out, start_new_session=True
        )
    server = AgentServer(process=process, url="", workspace=folder / "workspace", log=log)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"langgraph dev exited {process.returncode}:\n{log.read_text()}")
        server.url = server.url or _announced_url(log, since)
        try:
            if server.url and httpx.get(f"{server.url}/ok", timeout=1.0).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        time.sleep(READY_POLL_S)
    stop_agent_server(server)
    raise RuntimeError(f"langgraph dev did not answer in {START_TIMEOUT_S} s:\n{log.read_text()}")


def _announced_url(log: Path, since: int) -> str:
    """The API URL ``langgraph dev`` announced in ``log`` from byte ``since`` on, or ``""``
    before it has."""
    with log.open("rb") as text:
        text.seek(since)
        found = ANNOUNCED.search(text.read().decode(errors="replace"))
    return found.group(1) if found else ""


def stop_agent_server(server: AgentServer) -> None:
    """Stop the server's process group (``langgraph dev`` and what it started)."""
    if server.process.poll() is not None:
        return
    os.killpg(server.process.pid, signal.SIGTERM)
    try:
        server.process.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(server.process.pid, signal.SIGKILL)
        server.process.wait(STOP_TIMEOUT_S)


def remote(settings: WorkerConfig, server: AgentServer, mode: str) -> WorkerConfig:
    """Worker settings driving the served demo agent in ``mode``."""
    changes: dict[str, Any] = {
        "agent_url": server.url,
        "assistant_id": ASSISTANTS[mode],
        "agent": DEMO_TOOLS,  # what the served demo agent is made of
    }
    if mode == "per_call":
        changes["policy"] = POLICIES_DIR / "per_call.yml"
    return settings.model_copy(update=changes)


async def paused_elsewhere(server: AgentServer, task: str, *, metadata: dict[str, str]) -> str:
    """What the engineer's own app does: create a thread on the server and run the
    agent on ``task`` until it pauses; return the ``thread_id``."""
    client = server.client()
    try:
        thread = await client.threads.create(metadata=metadata)
        thread_id = str(thread["thread_id"])
        task_input: dict[str, Any] = {"messages": [{"role": "user", "content": task}]}
        await client.runs.wait(thread_id, ASSISTANTS["batched"], input=task_input)
        assert (await client.threads.get(thread_id))["status"] == "interrupted"
    finally:
        await client.aclose()
    return thread_id


async def cli(command: list[str], env: dict[str, str]) -> tuple[int | None, str, str]:
    """Run ``command`` as a real process (off the event loop the harness runs on);
    return its exit code, stdout and stderr."""
    process = await asyncio.create_subprocess_exec(
        *command, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await process.communicate()
    return process.returncode, out.decode(), err.decode()

"""The demo agent as LangGraph Agent Server serves it (the repository's ``langgraph.json``).

The same tools, offline ``ScriptedChatModel`` and ``HumanInTheLoopMiddleware`` as a local
worker builds from the demo policy, compiled **without a checkpointer**: the server keeps
each ``thread_id``'s checkpoints. Two graphs, one per interrupt mode: ``batched`` (the demo
policy, ``agent_bridge/policies/demo.yml``) and ``per_call``
(``agent_bridge/policies/per_call.yml``). A worker with ``AGENT_URL`` drives them
(``agent_bridge.remote_agent``); ``ASSISTANT_ID`` picks one (``agent`` or
``agent_per_call``).

The tools of each ``thread_id`` work in a folder of their own, ``WORKSPACE_DIR/<thread_id>``
of the server's environment (``ServedSettings``): the server builds the graph for each
run from its config (a graph factory), so runs never share files or orders.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from pydantic_settings import BaseSettings

from agent_bridge.agent import build_agent
from agent_bridge.demo_tools import DemoWorkspace
from agent_bridge.policy_file import DEMO_POLICY_PATH, POLICIES_DIR, load_policy
from agent_bridge.scripted_model import ScriptedChatModel
from agent_bridge.settings import READ_ENVIRONMENT


class ServedSettings(BaseSettings):
    """What the served demo agent reads from the Agent Server's environment."""

    model_config = READ_ENVIRONMENT

    workspace_dir: Path = Path(".demo/workspace")
    """Where the demo tools write files and keep their SQLite database."""


def _graph(policy: Path, config: RunnableConfig) -> Any:
    thread_id = str((config.get("configurable") or {}).get("thread_id") or "no-thread")
    root = ServedSettings().workspace_dir / thread_id
    tools = DemoWorkspace(root / "files", root / "orders.db").tools()
    return build_agent(
        tools=tools, model=ScriptedChatModel(), policy=load_policy(policy), checkpointer=None
    )


def batched(config: RunnableConfig) -> Any:
    """The demo agent in batched mode (one interrupt per model turn), no checkpointer."""
    return _graph(DEMO_POLICY_PATH, config)


def per_call(config: RunnableConfig) -> Any:
    """The demo agent in per-call mode (one interrupt per gated call), no checkpointer."""
    return _graph(POLICIES_DIR / "per_call.yml", config)

"""The demo tools the agent is given (``load_tools``)."""

from __future__ import annotations

from pathlib import Path

from agent_bridge.agent import load_tools
from tests.harness import agent_config


async def test_write_file_refuses_a_path_outside_the_workspace(tmp_path: Path) -> None:
    settings = agent_config(tmp_path / "ws")
    tools = {t.name: t for t in load_tools(settings)}
    result = await tools["write_file"].ainvoke({"path": "../../escape.txt", "content": "x"})
    assert "outside the workspace" in result
    assert not (tmp_path / "escape.txt").exists()
    blank = await tools["write_file"].ainvoke({"path": "   ", "content": "x"})
    assert blank.startswith("Refused: the path is empty")
    ok = await tools["write_file"].ainvoke({"path": "a/b.txt", "content": "hello"})
    assert ok == "Wrote 5 characters to a/b.txt"

"""A deploy while a run waits, through real worker processes: the worker that drew the
card stops, a reviewer rejects the call, and a worker restarted with another policy
resumes the run (what production's rolling restart does): the restarted worker is
``python -m bot.cli worker``, as the Procfile runs it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_bridge.models import ApprovalState, RunState
from agent_bridge.policy_file import POLICIES_DIR
from tests.harness import REVIEWER, Harness
from tests.worker_processes import start_cli_worker, start_worker, stop

WRITE_INSIDE = {"tool_calls": [{"name": "write_file", "args": {"path": "a.txt", "content": "x"}}]}
ALL_FOUR = "allowed_decisions: [approve, edit, reject, respond]"
RULE = "    when: agent_bridge.predicates:writes_outside_workspace\n"


@pytest.fixture
def harness_options() -> dict[str, Any]:
    """Sandbox and web app in this process; the workers are child processes."""
    return {"workers": 0}


async def test_a_rejected_call_a_when_rule_added_since_would_let_through_is_not_run(
    harness: Harness, tmp_path: Path
) -> None:
    """The policy deployed meanwhile reviews ``write_file`` only outside the workspace,
    and LangChain asks that rule again on resume: it would run ``a.txt``'s write whatever
    the reviewer decided. The restarted worker asks the rule first: the run fails, saying
    so in the worker's log, the card says the call will not run, nothing is written."""
    demo = (POLICIES_DIR / "demo.yml").read_text()
    deployed = tmp_path / "deployed.yml"
    deployed.write_text(
        demo.replace(f"write_file:\n    {ALL_FOUR}\n", f"write_file:\n    {ALL_FOUR}\n{RULE}")
    )
    assert deployed.read_text() != demo
    log = tmp_path / "worker.log"
    worker = await start_worker(harness, log)
    try:
        run = await harness.start_run(WRITE_INSIDE)
        (card,) = await harness.requests(run, count=1)
        await harness.released(run)
        await stop(worker)
        await harness.reject(card, "not that file", user_id=REVIEWER)
        await harness.decided(card)
        worker = await start_cli_worker(harness, log, {"POLICY": str(deployed)})
        failed = await harness.finished(run)
        closed = await harness.closed_and_drawn(card)
    finally:
        await stop(worker)
    assert failed.state == RunState.FAILED, log.read_text()
    assert not (harness.settings.workspace_dir / "files" / "a.txt").exists()
    assert "now lets it through" in log.read_text()
    assert closed.state == ApprovalState.CANCELLED and "will not run" in (closed.note or "")
    assert card.channel_id and card.message_ts
    drawn = json.dumps(harness.sandbox.message(card.channel_id, card.message_ts)["blocks"])
    assert "will not run" in drawn

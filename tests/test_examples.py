"""End to end: the agents in ``examples/`` work as the README says (way 1: a list of tools).

Each example runs through the sandbox Slack, the web app and a worker on real PostgreSQL
and Redis, exactly as an engineer would configure it (``AGENT``, ``POLICY``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_bridge.models import RunState
from agent_bridge.settings import WorkerConfig
from examples.tools_agent import outbox_of
from tests.harness import Harness

EXAMPLES = Path(__file__).parent.parent / "examples"
EXTERNAL = {"to": "grace@partner.test", "subject": "Invoice", "body": "Attached."}
INTERNAL = {"to": "ada@example.com", "subject": "Lunch", "body": "Noon?"}


@pytest.fixture
def agent_settings(settings: WorkerConfig) -> WorkerConfig:
    return settings.model_copy(
        update={"agent": "examples.tools_agent:make_tools", "policy": EXAMPLES / "tools_policy.yml"}
    )


async def test_the_tools_example_asks_only_for_mail_leaving_the_company(harness: Harness) -> None:
    calls = [{"name": "send_email", "args": args} for args in (EXTERNAL, INTERNAL)]
    run = await harness.start_run({"tool_calls": calls})
    (request,) = await harness.requests(run, count=1)
    assert request.args == EXTERNAL  # the internal mail was let through by `when`
    assert request.description == "📧 Mail to grace@partner.test: Invoice"

    assert (await harness.click(request, "approve"))[0] == 200
    done = await harness.finished(run)

    assert done.state == RunState.DONE
    sent = sorted(p.read_text() for p in outbox_of(harness.settings.workspace_dir).iterdir())
    assert len(sent) == 2
    assert any(m.startswith("To: grace@partner.test\nSubject: Invoice") for m in sent), sent

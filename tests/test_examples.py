"""End to end: the agents in ``examples/`` work as the README says: way 1 (a list of tools
and its policy) and way 2 (the same agent as the engineer's own compiled graph, its gating
in its own middleware). Way 3, the deployed graph, is run on its own Agent Server in
``tests/test_agent_server.py`` (``TestDeployedExample``).

Each runs through the sandbox Slack, the web app and a worker on real PostgreSQL and Redis,
configured exactly as an engineer would (``AGENT``, ``POLICY``). Both ways must ask only for
the mail leaving the company.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from agent_bridge.models import RunState
from agent_bridge.settings import WorkerConfig
from examples.tools_agent import outbox_of
from tests.harness import Harness

EXAMPLES = Path(__file__).parent.parent / "examples"
EXTERNAL = {"to": "grace@partner.test", "subject": "Invoice", "body": "Attached."}
INTERNAL = {"to": "ada@example.com", "subject": "Lunch", "body": "Noon?"}


async def only_the_external_mail_waits(harness: Harness) -> None:
    """Ask for both mails; approve the one card, which must be the external mail's; both
    must have been sent once the run is done."""
    calls = [{"name": "send_email", "args": args} for args in (EXTERNAL, INTERNAL)]
    run = await harness.start_run({"tool_calls": calls})
    (request,) = await harness.requests(run, count=1)
    assert request.args == EXTERNAL  # the internal mail was let through by `when`
    assert request.description == "📧 Mail to grace@partner.test: Invoice"
    assert request.allowed_decisions == ["approve", "edit", "reject"]
    assert request.review_timeout_s == 3600  # the policy's Slack-side rule

    assert (await harness.click(request, "approve"))[0] == 200
    done = await harness.finished(run)

    assert done.state == RunState.DONE
    sent = sorted(p.read_text() for p in outbox_of(harness.settings.workspace_dir).iterdir())
    assert len(sent) == 2
    assert any(m.startswith("To: grace@partner.test\nSubject: Invoice") for m in sent), sent


class TestWay1Tools:
    """``examples/tools_agent.py`` with ``examples/tools_policy.yml``."""

    @pytest.fixture
    def agent_settings(self, settings: WorkerConfig) -> WorkerConfig:
        return settings.model_copy(
            update={
                "agent": "examples.tools_agent:make_tools",
                "policy": EXAMPLES / "tools_policy.yml",
            }
        )

    async def test_it_asks_only_for_mail_leaving_the_company(self, harness: Harness) -> None:
        await only_the_external_mail_waits(harness)


class TestWay2CompiledGraph:
    """``examples/compiled_graph_agent.py`` with ``examples/compiled_graph_policy.yml``."""

    @pytest.fixture
    def agent_settings(self, settings: WorkerConfig) -> WorkerConfig:
        return settings.model_copy(
            update={
                "agent": "examples.compiled_graph_agent:make_graph",
                "policy": EXAMPLES / "compiled_graph_policy.yml",
            }
        )

    async def test_it_asks_only_for_mail_leaving_the_company(
        self, harness: Harness, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.INFO, logger="examples.compiled_graph_agent")
        await only_the_external_mail_waits(harness)
        assert caplog.messages.count("running tool send_email") == 2  # its own middleware

"""The card tells the whole truth about where a call comes from and what became of it,
end to end through the sandbox: who asked (by name, not mentioned), the task, a link to
the run's Slack thread, the model's reason; what an edit changed; whether the call
succeeded or failed once it ran, on the card and on its pointer in the run's thread."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_bridge.models import ApprovalRequest, Run
from agent_bridge.settings import WorkerConfig
from bot import ids
from slack_sandbox import live_mentions
from tests.harness import REQUESTER, REVIEWER, Harness

FIXTURES = Path(__file__).parent / "fixtures"
APPROVALS = "C0APPROVAL"
REASON = "The report you asked for goes to reports/q3.txt; nothing else is touched."


@pytest.fixture
def agent_settings(settings: WorkerConfig) -> WorkerConfig:
    return settings.model_copy(update={"policy": FIXTURES / "routed_policy.yml"})


def write_task(
    path: str = "reports/q3.txt", content: str = "line 1\nline 2\nline 3\n"
) -> dict[str, Any]:
    return {
        "say": REASON,
        "tool_calls": [{"name": "write_file", "args": {"path": path, "content": content}}],
    }


def card_text(harness: Harness, request: ApprovalRequest) -> str:
    card = harness.sandbox.message(request.channel_id or "", request.message_ts or "")
    return json.dumps(card["blocks"], ensure_ascii=False)


def pointer_text(harness: Harness, run: Run, request: ApprovalRequest) -> str:
    assert run.thread_ts and request.pointer_ts
    return json.dumps(
        harness.sandbox.message(run.channel_id, request.pointer_ts)["blocks"], ensure_ascii=False
    )


async def posted(harness: Harness, run: Run) -> tuple[Run, ApprovalRequest]:
    (request,) = await harness.requests(run, count=1)

    async def pointed() -> ApprovalRequest | None:
        current = await harness.store.get_request(request.request_id)
        return current if current and current.pointer_ts else None

    return await harness.store.get_run(run.run_id), await harness.wait_for(pointed)


async def ran(harness: Harness, request: ApprovalRequest) -> str:
    """Wait until the card says how the call went; return its blocks as text."""

    async def redrawn() -> str | None:
        text = card_text(harness, request)
        return text if "The call ran and" in text else None

    return await harness.wait_for(redrawn)


async def test_a_card_elsewhere_says_who_asked_the_task_and_why_and_links_the_run(
    harness: Harness,
) -> None:
    run, request = await posted(harness, await harness.start_run(write_task()))
    assert request.channel_id == APPROVALS and request.thread_ts is None
    text = card_text(harness, request)
    assert "Asked by alice" in text  # users.info's display name, as text
    assert "Task: {" in text and "reports/q3.txt" in text
    assert "Why, in the agent's words:" in text and REASON.split(";")[0] in text
    header_link = run.thread_link  # chat.getPermalink of the run's first message
    assert header_link and header_link.endswith(
        f"/archives/{run.channel_id}/p{(run.thread_ts or '').replace('.', '')}"
    )
    assert f"<{header_link}|Open the run's thread>" in text
    card = harness.sandbox.message(APPROVALS, request.message_ts or "")
    live = live_mentions(card["text"] + json.dumps(card["blocks"]))
    assert f"<@{REQUESTER}>" not in live  # named, never notified
    assert live == [f"<{header_link}|Open the run's thread>"]


async def test_once_the_call_ran_its_card_and_pointer_say_it_succeeded(harness: Harness) -> None:
    run, request = await posted(harness, await harness.start_run(write_task()))
    assert (await harness.click(request, "approve"))[0] == 200
    text = await ran(harness, request)
    assert "The call ran and succeeded" in text and "Wrote 21 characters to reports/q3.txt" in text
    await harness.finished(run)
    stored = await harness.store.get_request(request.request_id)
    assert stored and stored.result and stored.result.ok
    assert "The call ran and succeeded" in pointer_text(harness, run, stored)


async def test_a_failed_call_says_so_in_one_sentence_without_the_error(harness: Harness) -> None:
    run, request = await posted(harness, await harness.start_run(write_task(path="/etc/passwd")))
    assert (await harness.click(request, "approve"))[0] == 200
    text = await ran(harness, request)
    assert "The call ran and failed" in text and run.run_id in text
    workspace = str(harness.settings.workspace_dir)
    (tool,) = await harness.tool_messages(run)
    assert workspace in tool.content  # the agent is told everything ...
    assert workspace not in text and "outside the workspace" not in text  # ... Slack is not
    await harness.finished(run)
    stored = await harness.store.get_request(request.request_id)
    assert stored is not None
    pointer = pointer_text(harness, run, stored)
    assert "The call ran and failed" in pointer and workspace not in pointer


async def test_an_edit_shows_what_changed_not_the_whole_new_call(harness: Harness) -> None:
    content = "".join(f"line {i}\n" for i in range(1, 41))
    run, request = await posted(harness, await harness.start_run(write_task(content=content)))
    view = await harness.open_modal(request, "edit")
    edited = content.replace("line 20\n", "line twenty\n")
    status, body = await harness.sandbox.submit_view(
        view_id=view["id"], user_id=REVIEWER, values={ids.arg_block_id("content"): edited}
    )
    assert status == 200 and not body, body
    text = await ran(harness, request)
    changed = text.split("What the edit changed:")[1].split("The call ran")[0]
    assert "-line 20\\n+line twenty" in changed  # a line diff, one line of context around
    assert "line 19" in changed and "line 21" in changed
    assert "line 5\\n" not in changed and "`path`" not in changed  # only what changed
    await harness.finished(run)
    stored = await harness.store.get_request(request.request_id)
    assert stored is not None
    assert "-line 20\\n+line twenty" in pointer_text(harness, run, stored)


async def test_the_reject_modal_shows_the_call_it_rejects(harness: Harness) -> None:
    _, request = await posted(harness, await harness.start_run(write_task()))
    view = await harness.open_modal(request, "reject")
    shown = json.dumps(view["blocks"], ensure_ascii=False)
    assert "`path`" in shown and "reports/q3.txt" in shown and "line 2" in shown

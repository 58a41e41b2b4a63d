"""The live progress message: a run's first message follows LangGraph's stream
(thinking, tools run without review, waiting for approval with links to the cards,
done), throttled to about one ``chat.update`` per second per message, never dropping the
final state; end to end through the sandbox, and the throttle on its own."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from agent_bridge.models import Run, RunState
from agent_bridge.progress import Phase, progress_of
from agent_bridge.scripted_model import DEMO_TASK
from agent_bridge.store import ApprovalStore
from bot.progress import PROGRESS_INTERVAL_S, ProgressReporter
from bot.testing import MemoryGateway
from tests.harness import CHANNEL, Harness

READ = {"name": "read_data", "args": {"table": "orders"}}
BURST = json.dumps({"tool_calls": [READ], "then": [[READ]] * 8})
"""Nine turns of an ungated tool: eighteen steps in well under a second each."""


def header_updates(harness: Harness, run: Run) -> list[dict[str, Any]]:
    return [
        c
        for c in harness.sandbox.calls
        if c["method"] == "chat.update" and c["args"].get("ts") == run.thread_ts and c["ok"]
    ]


def text_of(call: dict[str, Any]) -> str:
    blocks = call["args"].get("blocks")
    return json.dumps(json.loads(blocks) if isinstance(blocks, str) else blocks)


async def test_a_burst_of_steps_is_throttled_and_ends_on_done(harness: Harness) -> None:
    run = await harness.finished(await harness.start_run(BURST))
    assert run.state == RunState.DONE
    updates = header_updates(harness, run)
    assert updates, "the first message was never updated"
    gaps = [b["answered_at"] - a["answered_at"] for a, b in pairwise(updates)]
    progress = updates[:-1]
    assert all(g >= PROGRESS_INTERVAL_S * 0.8 for g in gaps[: len(progress) - 1]), gaps
    assert len(progress) < 18  # eighteen steps, coalesced
    # which intermediate states are drawn depends on how fast the steps come (a run
    # finished within the first interval shows only its first state, then Done): the
    # states themselves are progress_of's test, the coalescing the throttle's
    assert all("Done" not in text_of(c) for c in progress)
    assert "Done" in text_of(updates[-1])  # the final state, last
    header = harness.sandbox.message(CHANNEL, run.thread_ts or "")
    assert "Done" in json.dumps(header["blocks"])


async def test_a_run_waiting_for_approval_links_its_cards(harness: Harness) -> None:
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    run = await harness.store.get_run(run.run_id)

    async def waiting() -> dict[str, Any] | None:
        header = harness.sandbox.message(CHANNEL, run.thread_ts or "")
        text = json.dumps(header["blocks"])
        return header if "Waiting for approval" in text and text.count("archives/") == 2 else None

    header = await harness.wait_for(waiting)
    text = json.dumps(header["blocks"])
    for request in (write, sql):  # each card linked, its tool named as the link's text
        ts = (request.message_ts or "").replace(".", "")
        assert re.search(rf"/p{ts}[^|>]*\|{request.tool_name}>", text), text
    await harness.click(write, "approve")
    await harness.reject(sql, "not today")
    done = await harness.finished(run)
    assert done.state == RunState.DONE
    final = harness.sandbox.message(CHANNEL, run.thread_ts or "")
    assert "Done" in json.dumps(final["blocks"])


@dataclass
class CountingGateway(MemoryGateway):
    """Counts ``chat.update`` calls and keeps what each drew."""

    updates: list[str] = field(default_factory=list)

    async def update_message(
        self, *, team_id: str | None, channel_id: str, ts: str, text: str, blocks: list[Any]
    ) -> None:
        self.updates.append(json.dumps(blocks))
        await super().update_message(
            team_id=team_id, channel_id=channel_id, ts=ts, text=text, blocks=blocks
        )


async def test_the_throttle_keeps_the_latest_state_and_the_final_one(
    sqlite_store: ApprovalStore,
) -> None:
    slack = CountingGateway()
    ts = await slack.post_message(team_id="T1", channel_id="C1", text="run", blocks=[])
    run = Run(
        run_id="run-1", thread_id="t", task="count", channel_id="C1", user_id="U1",
        team_id="T1", thread_ts=ts,
    )  # fmt: skip
    reporter = ProgressReporter(store=sqlite_store, slack=slack, interval_s=60.0)
    messages: list[Any] = [HumanMessage("count")]
    for i in range(50):
        messages = [
            *messages,
            AIMessage("", tool_calls=[{"name": "count", "args": {}, "id": f"c{i}"}]),
            ToolMessage(str(i), tool_call_id=f"c{i}", name="count"),
        ]
        await reporter.step(run, messages)
    assert len(slack.updates) == 1  # the first at once; the rest wait for the interval
    assert "Thinking" in slack.updates[0]
    await reporter.final(run.model_copy(update={"state": RunState.DONE}))
    assert len(slack.updates) == 2 and "Done" in slack.updates[-1]
    assert "Done" in json.dumps(slack.messages[("C1", ts)]["blocks"])


def test_progress_reads_the_last_step_and_counts_unreviewed_tools() -> None:
    call = {"name": "read_data", "args": {}, "id": "c1"}
    gated = {"name": "write_file", "args": {}, "id": "c2"}
    messages: list[Any] = [HumanMessage("task")]
    assert progress_of(messages, reviewed=set()).phase == Phase.THINKING
    messages.append(AIMessage("", tool_calls=[call, gated]))
    running = progress_of(messages, reviewed={"c2"})
    assert running.phase == Phase.RUNNING_TOOLS and running.running == ("read_data", "write_file")
    messages += [
        ToolMessage("rows", tool_call_id="c1", name="read_data"),
        ToolMessage("written", tool_call_id="c2", name="write_file"),
    ]
    after = progress_of(messages, reviewed={"c2"})
    assert after.phase == Phase.THINKING and after.unreviewed == (("read_data", 1),)

"""A real worker killed while one of its Web API calls is in flight, then restarted.

The sandbox stalls the chosen call (``Sandbox.stall_next``): either after it took
effect (the message is in Slack, the worker never heard its ``ts``) or before (it never
lands). The test SIGKILLs the worker while the call is held, starts a plain worker, and
reads the run's Slack thread as a reviewer would: each message once, in order, every
card showing its decision, the header saying Done, and the ledger showing each call
run once.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agent_bridge.models import Run, RunState
from bot.slack_gateway import message_key
from tests.harness import Harness, decision_buttons
from tests.ledger_agent import ledger_lines
from tests.worker_processes import LEDGER_AGENT, TWO_TURNS, killed, start_worker, stop

STALL_TIMEOUT_S = 30.0
EXPECTED_THREAD = ["header", "card", "tool", "card", "tool", "final_answer"]
"""The two-turn run's Slack thread, as kinds of message, in order."""
CARDS_DECIDED_BEFORE_THE_POST = {"/header": 0, "/card:": 0, "/tool:": 1, "/final_answer": 2}
"""How many of the run's two cards are approved before the first post of each kind."""


@pytest.fixture
def harness_options() -> dict[str, Any]:
    """Sandbox and web app in this process; the workers are child processes."""
    return {"workers": 0}


def thread_kinds(harness: Harness, run: Run) -> list[str]:
    """The kind of each message of the run's Slack thread (from the key in its
    metadata: ``header``, ``card``, ``tool``, ``final_answer``), parent first."""
    assert run.thread_ts
    kinds = []
    for message in harness.sandbox.thread(run.channel_id, run.thread_ts):
        key = message_key(message) or "?"
        kinds.append(key.split("/", 1)[-1].split(":", 1)[0])
    return kinds


async def approve(harness: Harness, run: Run, numbers: range) -> None:
    """Approve the run's cards number ``numbers`` (1 = the first), waiting for each."""
    for n in numbers:
        requests = await harness.requests(run, count=n)
        await harness.click(requests[n - 1], "approve")
        await harness.decided(requests[n - 1])


async def read_as_a_reviewer(harness: Harness, run: Run) -> None:
    """Assert the finished run's Slack thread reads right, and each call ran once."""
    assert run.thread_ts
    assert thread_kinds(harness, run) == EXPECTED_THREAD
    thread = harness.sandbox.thread(run.channel_id, run.thread_ts)
    assert thread[0]["text"].startswith("Done"), thread[0]["text"]
    cards = [m for m in thread if (message_key(m) or "").split("/")[-1].startswith("card:")]
    assert [decision_buttons(card) for card in cards] == [[], []]
    results = [m["text"] for m in thread if "returned" in m["text"]]
    assert ["appended first" in results[0], "appended second" in results[1]] == [True, True]
    lines = ledger_lines(harness.settings.workspace_dir)
    assert lines == ["first", "second"]
    header_posts = [
        c
        for c in harness.sandbox.calls
        if c["method"] == "chat.postMessage" and "/header" in str(c["args"].get("metadata"))
    ]
    assert len(header_posts) == 1


@pytest.mark.parametrize(
    ("key_contains", "applied"),
    [
        ("/header", True),
        ("/card:", True),
        ("/card:", False),
        ("/tool:", True),
        ("/tool:", False),
        ("/final_answer", True),
    ],
)
async def test_a_worker_killed_while_posting_a_message_posts_it_once(
    harness: Harness, tmp_path: Path, key_contains: str, applied: bool
) -> None:
    """Killed while ``chat.postMessage`` of the first message of that kind is held:
    the restarted worker finds a landed message by its metadata and adopts it (no second
    post), or posts one that never landed; the thread is whole and in order."""
    log = tmp_path / "worker.log"
    stall = harness.sandbox.stall_next(
        "chat.postMessage", key_contains=key_contains, applied=applied
    )
    approved_before = CARDS_DECIDED_BEFORE_THE_POST[key_contains]
    worker = await start_worker(harness, log, agent=LEDGER_AGENT)
    try:
        run = await harness.start_run(TWO_TURNS)
        await approve(harness, run, range(1, approved_before + 1))
        await asyncio.wait_for(stall.reached.wait(), STALL_TIMEOUT_S)
        worker.kill()
        await killed(worker)
        worker = await start_worker(harness, log, agent=LEDGER_AGENT)
        await approve(harness, run, range(approved_before + 1, 3))
        done = await harness.finished(run)
    finally:
        stall.released.set()
        await stop(worker)
    assert done.state == RunState.DONE, log.read_text()
    await read_as_a_reviewer(harness, done)


async def test_a_worker_killed_while_marking_the_header_done_marks_it_on_restart(
    harness: Harness, tmp_path: Path
) -> None:
    """Killed while ``chat.update`` of the run's first message is held, after the answer
    was posted: the restarted worker takes the run, finds the answer posted (no second
    one) and redraws the header as Done."""
    log = tmp_path / "worker.log"
    worker = await start_worker(harness, log, agent=LEDGER_AGENT)
    try:
        run = await harness.start_run(TWO_TURNS)
        (first,) = await harness.requests(run, count=1)
        await harness.click(first, "approve")
        _, second = await harness.requests(run, count=2)
        current = await harness.store.get_run(run.run_id)
        assert current.thread_ts
        stall = harness.sandbox.stall_next("chat.update", ts=current.thread_ts, applied=False)
        await harness.click(second, "approve")
        await asyncio.wait_for(stall.reached.wait(), STALL_TIMEOUT_S)
        worker.kill()
        await killed(worker)
        worker = await start_worker(harness, log, agent=LEDGER_AGENT)
        done = await harness.finished(run)
    finally:
        await stop(worker)
    assert done.state == RunState.DONE, log.read_text()
    await read_as_a_reviewer(harness, done)

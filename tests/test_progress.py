"""The live progress message: a run's first message follows LangGraph's stream
(thinking, tools run without review, waiting for approval with links to the cards,
done), throttled to about one ``chat.update`` per second per message, never dropping the
final state; end to end through the sandbox, and the reporter on its own: a step never
waits on Slack or the store (held ones prove it), waiting and done are never overwritten
by an older step, and a drawer's errors and evicted lines leave no task behind."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from agent_bridge import progress_wording
from agent_bridge.errors import StoreUnavailableError
from agent_bridge.models import ApprovalRequest, Decision, Run, RunState
from agent_bridge.progress import Phase, Progress, WaitingCard, progress_of
from agent_bridge.scripted_model import DEMO_TASK
from agent_bridge.store import ApprovalStore
from bot.errors import SlackUnavailableError
from bot.progress import LINES_KEPT, PROGRESS_INTERVAL_S, ProgressReporter
from bot.progress_blocks import CARDS_SHOWN_MAX, render_progress
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


@pytest.mark.parametrize(
    "tool_name",
    [":white_check_mark: *Approved by Dana* ~pending~", "_quiet_", "a`b", "x <!here>"],
)
def test_a_tool_name_cannot_format_the_header(tool_name: str) -> None:
    """A compiled graph's interrupt may name anything; Slack formats a link's label, so
    a name with a mark in it is shown as code, with its card's link beside it (a plain
    name is the label itself)."""
    link = "https://acme.slack.com/archives/C1/p1"
    waiting = (WaitingCard(tool_name=tool_name, link=link), WaitingCard("send_email", link))
    run = Run(run_id="run-1", thread_id="t-1", task="t", channel_id="C1", user_id="U1")
    _, blocks = render_progress(run, Progress(Phase.WAITING, waiting=waiting))
    status = blocks[0]["text"]["text"]
    plain, beside = f"<{link}|send_email>", f"<{link}|{progress_wording.OPEN_CARD}>"
    assert plain in status and f"` ({beside})" in status, status
    shown = status.split(f"{progress_wording.WAITING_STATUS}: ", 1)[1].split("\n")[0]
    rest = shown.replace(plain, "")
    rest = re.sub(r"`[^`]*`", "", rest.replace(beside, ""))  # code shows its text as is
    assert not set("*~:_<") & set(rest), status


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

    async def one_left() -> str | None:  # the batch still waits, on the SQL card alone
        text = json.dumps(harness.sandbox.message(CHANNEL, run.thread_ts or "")["blocks"])
        return text if "Waiting for approval" in text and text.count("archives/") == 1 else None

    text = await harness.wait_for(one_left)
    sql_ts = (sql.message_ts or "").replace(".", "")
    assert re.search(rf"/p{sql_ts}[^|>]*\|execute_sql>", text), text
    assert "write_file" not in text, text
    await harness.reject(sql, "not today")
    done = await harness.finished(run)
    assert done.state == RunState.DONE
    final = harness.sandbox.message(CHANNEL, run.thread_ts or "")
    assert "Done" in json.dumps(final["blocks"])


@dataclass
class CountingGateway(MemoryGateway):
    """Keeps what each ``chat.update`` drew and when it began (the loop's clock)."""

    updates: list[str] = field(default_factory=list)
    began_at: list[float] = field(default_factory=list)

    async def update_message(
        self, *, team_id: str | None, channel_id: str, ts: str, text: str, blocks: list[Any]
    ) -> None:
        self.updates.append(json.dumps(blocks))
        self.began_at.append(asyncio.get_running_loop().time())
        await super().update_message(
            team_id=team_id, channel_id=channel_id, ts=ts, text=text, blocks=blocks
        )


@dataclass
class HeldGateway(CountingGateway):
    """Holds each ``chat.update`` until ``release`` is set, as a slow Slack would;
    ``entered`` is set when the first one begins. Updates are kept as they land."""

    entered: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def update_message(
        self, *, team_id: str | None, channel_id: str, ts: str, text: str, blocks: list[Any]
    ) -> None:
        self.entered.set()
        await self.release.wait()
        await super().update_message(
            team_id=team_id, channel_id=channel_id, ts=ts, text=text, blocks=blocks
        )


class HeldStore(ApprovalStore):
    """Holds its first ``requests_for_run`` until ``release`` is set, as a slow
    database would; ``entered`` is set when it begins."""

    def __init__(self, store: ApprovalStore) -> None:
        super().__init__(store.db, clock=store.clock)
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def requests_for_run(self, run_id: str) -> list[ApprovalRequest]:
        if not self.entered.is_set():
            self.entered.set()
            await self.release.wait()
        return await super().requests_for_run(run_id)


async def a_run(slack: MemoryGateway) -> Run:
    ts = await slack.post_message(team_id="T1", channel_id="C1", text="run", blocks=[])
    return Run(
        run_id="run-1", thread_id="t", task="count", channel_id="C1", user_id="U1",
        team_id="T1", thread_ts=ts,
    )  # fmt: skip


def counted(turns: int) -> list[Any]:
    """The state after ``turns`` turns of an ungated ``count`` tool."""
    messages: list[Any] = [HumanMessage("count")]
    for i in range(turns):
        messages += [
            AIMessage("", tool_calls=[{"name": "count", "args": {}, "id": f"c{i}"}]),
            ToolMessage(str(i), tool_call_id=f"c{i}", name="count"),
        ]
    return messages


def calling(messages: list[Any], tool: str) -> list[Any]:
    """``messages`` and then the model calling ``tool`` (running tools)."""
    return [*messages, AIMessage("", tool_calls=[{"name": tool, "args": {}, "id": "last"}])]


async def settled() -> bool:
    """Whether every task but the test's own has ended (a drawer left would draw)."""
    return asyncio.all_tasks() == {asyncio.current_task()}


async def test_the_throttle_keeps_the_latest_state_and_the_final_one(
    sqlite_store: ApprovalStore,
) -> None:
    slack = CountingGateway()
    run = await a_run(slack)
    interval_s = 0.2
    reporter = ProgressReporter(store=sqlite_store, slack=slack, interval_s=interval_s)
    await reporter.step(run, counted(0))
    await Harness.wait_for(settled)  # the first is drawn at once
    assert len(slack.updates) == 1 and "Thinking" in slack.updates[0]
    for turns in range(1, 50):  # within the interval: one update, when it is over
        await reporter.step(run, counted(turns))
    await Harness.wait_for(settled)
    assert len(slack.updates) == 2
    assert "(49 times)" in slack.updates[1]  # the latest of the burst
    assert slack.began_at[1] - slack.began_at[0] >= interval_s * 0.9
    await reporter.final(run.model_copy(update={"state": RunState.DONE}))
    assert len(slack.updates) == 3 and "Done" in slack.updates[-1]
    assert "Done" in json.dumps(slack.messages[("C1", run.thread_ts or "")]["blocks"])


async def test_a_step_returns_while_its_update_is_held(sqlite_store: ApprovalStore) -> None:
    slack = HeldGateway()
    run = await a_run(slack)
    reporter = ProgressReporter(store=sqlite_store, slack=slack, interval_s=0.0)
    step = asyncio.create_task(reporter.step(run, calling(counted(1), "write_file")))
    await slack.entered.wait()  # the update the step asked for has begun, and is held
    try:
        assert step.done(), "the graph's next step waited on Slack"
    finally:
        slack.release.set()
        await step
    await reporter.final(run.model_copy(update={"state": RunState.DONE}))
    assert len(slack.updates) == 2
    assert "Running" in slack.updates[0] and "Done" in slack.updates[1]
    assert await settled()


async def test_final_lands_after_the_update_in_flight(sqlite_store: ApprovalStore) -> None:
    slack = HeldGateway()
    run = await a_run(slack)
    reporter = ProgressReporter(store=sqlite_store, slack=slack, interval_s=0.0)
    await reporter.step(run, counted(0))
    await slack.entered.wait()  # "Thinking" in flight
    await reporter.step(run, calling(counted(1), "write_file"))  # waits for the drawer
    final = asyncio.create_task(reporter.final(run.model_copy(update={"state": RunState.DONE})))
    slack.release.set()
    await final
    assert len(slack.updates) == 2  # the step left waiting is dropped
    assert "Thinking" in slack.updates[0] and "Done" in slack.updates[-1]
    assert "Done" in json.dumps(slack.messages[("C1", run.thread_ts or "")]["blocks"])
    assert await settled()


async def test_waiting_is_not_followed_by_an_older_step(sqlite_store: ApprovalStore) -> None:
    store = HeldStore(sqlite_store)
    slack = CountingGateway()
    run = await a_run(slack)
    reporter = ProgressReporter(store=store, slack=slack, interval_s=0.0)
    step = asyncio.create_task(reporter.step(run, calling(counted(2), "write_file")))
    await store.entered.wait()  # the step's read of the reviewed calls, held
    assert step.done(), "the graph's next step waited on the database"
    waiting = asyncio.create_task(reporter.waiting(run, counted(2)))  # the drive's end
    store.release.set()
    await waiting
    await Harness.wait_for(settled)  # any drawing of the step would be done
    assert len(slack.updates) == 1
    assert "Waiting for approval" in slack.updates[-1]
    assert "Running" not in slack.updates[-1]
    assert "(2 times)" in slack.updates[-1]  # the checkpoint's tools
    await reporter.final(run.model_copy(update={"state": RunState.DONE}))
    assert "Done" in slack.updates[-1]


@dataclass
class BrokenGateway(CountingGateway):
    """Its first ``chat.update`` raises what no Slack failure is (a bug)."""

    broken: int = 1

    async def update_message(
        self, *, team_id: str | None, channel_id: str, ts: str, text: str, blocks: list[Any]
    ) -> None:
        if self.broken:
            self.broken -= 1
            raise RuntimeError("a bug in drawing")
        await super().update_message(
            team_id=team_id, channel_id=channel_id, ts=ts, text=text, blocks=blocks
        )


@dataclass
class FailingGateway(CountingGateway):
    """Its first ``chat.update`` fails as a Slack outage does."""

    failing: int = 1

    async def update_message(
        self, *, team_id: str | None, channel_id: str, ts: str, text: str, blocks: list[Any]
    ) -> None:
        if self.failing:
            self.failing -= 1
            raise SlackUnavailableError("Slack is down", method="chat.update", retryable=True)
        await super().update_message(
            team_id=team_id, channel_id=channel_id, ts=ts, text=text, blocks=blocks
        )


async def test_an_error_of_a_drawer_is_logged_and_the_next_step_drawn(
    sqlite_store: ApprovalStore, caplog: pytest.LogCaptureFixture
) -> None:
    slack = BrokenGateway()
    run = await a_run(slack)
    reporter = ProgressReporter(store=sqlite_store, slack=slack, interval_s=0.0)
    with caplog.at_level(logging.ERROR, logger="bot.progress"):
        await reporter.step(run, counted(0))
        await Harness.wait_for(settled)
    [record] = caplog.records
    assert "run=run-1 progress not drawn" in record.getMessage() and record.exc_info
    await reporter.step(run, calling(counted(1), "write_file"))
    await Harness.wait_for(settled)
    assert len(slack.updates) == 1 and "Running" in slack.updates[0]


async def test_an_evicted_line_stops_drawing(sqlite_store: ApprovalStore) -> None:
    slack = HeldGateway()
    runs = [
        (await a_run(slack)).model_copy(update={"run_id": f"run-{i}"})
        for i in range(LINES_KEPT + 1)
    ]
    reporter = ProgressReporter(store=sqlite_store, slack=slack, interval_s=0.0)
    await reporter.step(runs[0], counted(0))
    await slack.entered.wait()  # the first line's update in flight, held
    for run in runs[1:]:  # the last line evicts the first
        await reporter.step(run, counted(0))
    slack.release.set()
    await Harness.wait_for(settled)
    assert len(slack.updates) == LINES_KEPT  # the first line's was cancelled in flight
    assert "Thinking" not in json.dumps(slack.messages[("C1", runs[0].thread_ts or "")])
    assert "Thinking" in json.dumps(slack.messages[("C1", runs[1].thread_ts or "")])


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


class DownStore(ApprovalStore):
    """Its ``requests_for_run`` fails, as during a database outage."""

    def __init__(self, store: ApprovalStore) -> None:
        super().__init__(store.db, clock=store.clock)

    async def requests_for_run(self, run_id: str) -> list[ApprovalRequest]:
        raise StoreUnavailableError("PostgreSQL is unavailable: test")


async def test_a_step_whose_read_fails_draws_nothing(sqlite_store: ApprovalStore) -> None:
    slack = CountingGateway()
    run = await a_run(slack)
    reporter = ProgressReporter(store=DownStore(sqlite_store), slack=slack, interval_s=0.0)
    await reporter.step(run, calling(counted(0), "count"))  # no tool result: no read
    await Harness.wait_for(settled)
    assert len(slack.updates) == 1 and "Running" in slack.updates[0]
    for turns in range(1, 4):  # each has a new tool result: a read, which fails
        await reporter.step(run, counted(turns))
        await Harness.wait_for(settled)
    assert len(slack.updates) == 1, f"{len(slack.updates) - 1} chat.update of a step never read"


async def test_a_cut_drive_leaves_no_drawer_to_overwrite_done(sqlite_store: ApprovalStore) -> None:
    # Worker A's drive is cut (LeaseLost: its database is slow) while its step's read is
    # held; worker B drives the run to the end and draws Done; A's read then returns.
    slack = CountingGateway()
    run = await a_run(slack)
    slow = HeldStore(sqlite_store)
    worker_a = ProgressReporter(store=slow, slack=slack, interval_s=0.0)
    worker_b = ProgressReporter(store=sqlite_store, slack=slack, interval_s=0.0)

    async def drive_on_a() -> None:  # as RunDriver.drive tells its hook when it is cut
        try:
            await worker_a.step(run, calling(counted(1), "write_file"))
            await asyncio.Event().wait()  # the rest of the drive
        except BaseException:
            worker_a.abandon(run)
            raise

    drive = asyncio.create_task(drive_on_a())
    await slow.entered.wait()
    drive.cancel()  # Leases.hold: LeaseLost
    await asyncio.gather(drive, return_exceptions=True)
    await worker_b.final(run.model_copy(update={"state": RunState.DONE}))
    slow.release.set()  # A's slow read returns
    await Harness.wait_for(settled)
    shown = json.dumps(slack.messages[("C1", run.thread_ts or "")]["blocks"])
    assert "Done" in shown, f"A's drawer drew after B's Done: {slack.updates[-1][:200]}"


async def test_a_waiting_run_keeps_no_messages(sqlite_store: ApprovalStore) -> None:
    # Up to LINES_KEPT runs may wait for approval: none keeps its state's messages (every
    # tool output) here while it waits.
    slack = CountingGateway()
    run = await a_run(slack)
    reporter = ProgressReporter(store=sqlite_store, slack=slack, interval_s=0.0)
    big = counted(3)
    big[-1].content = "x" * 5_000_000  # a tool's large output
    await reporter.step(run, calling(big, "write_file"))
    await reporter.waiting(run, big)
    await Harness.wait_for(settled)
    assert not reporter._lines[run.run_id].messages
    shown = json.dumps(slack.messages[("C1", run.thread_ts or "")]["blocks"])
    assert "Waiting" in shown and "3 times" in shown


async def test_a_reviewed_call_with_an_empty_id_is_not_shown_as_unreviewed(
    sqlite_store: ApprovalStore,
) -> None:
    # The per-call middleware runs a call whose ID is "": its request names it by "", as
    # its result does (agent_bridge.call_ids); the header must not list it as run
    # without review after a person approved it.
    slack = CountingGateway()
    run = await a_run(slack)
    await sqlite_store.create_run(run)
    request = ApprovalRequest(
        request_id="q1", run_id=run.run_id, thread_id=run.thread_id, interrupt_id="i1",
        mode="per_call", tool_call_id="", tool_name="write_file",
        allowed_decisions=["approve"], channel_id="C1",
    )  # fmt: skip
    await sqlite_store.add_requests([request])
    approved = [
        HumanMessage("write"),
        AIMessage("", tool_calls=[{"name": "write_file", "args": {}, "id": ""}]),
        ToolMessage("written", tool_call_id="", name="write_file"),
    ]
    reporter = ProgressReporter(store=sqlite_store, slack=slack, interval_s=0.0)
    await reporter.step(run, approved)
    await Harness.wait_for(settled)
    assert len(slack.updates) == 1 and "Thinking" in slack.updates[0]
    assert "without review" not in slack.updates[0]
    await reporter.step(run, [*approved, *counted(1)[1:]])  # an ungated call: listed
    await Harness.wait_for(settled)
    assert "without review" in slack.updates[-1]


async def waiting_run(store: ApprovalStore, slack: MemoryGateway, count: int) -> Run:
    """A stored run (``a_run``) waiting on ``count`` pending requests of one batch, their
    cards posted in ``slack``."""
    run = await store.create_run(await a_run(slack))
    await store.add_requests(
        ApprovalRequest(
            request_id=f"q{i}",
            run_id=run.run_id,
            thread_id=run.thread_id,
            interrupt_id="i1",
            index=i,
            mode="batched",
            tool_call_id=f"q{i}",
            tool_name="write_file",
            allowed_decisions=["approve", "reject"],
            channel_id="C1",
        )
        for i in range(count)
    )
    for i in range(count):
        ts = await slack.post_message(team_id="T1", channel_id="C1", text="card", blocks=[])
        await store.set_message(f"q{i}", channel_id="C1", message_ts=ts)
    return run


async def test_waiting_is_drawn_before_the_drive_ends_and_only_when_it_changed(
    sqlite_store: ApprovalStore,
) -> None:
    # The end of a drive that leaves a run waiting is drawn before the drive returns (its
    # lease held), even within the throttle's interval, so that no drawing of this worker
    # lands after what another worker draws next; a drive that changed nothing shown (a
    # sweep, again and again) draws nothing; one that decided a card of a batch drops it.
    slack = CountingGateway()
    run = await waiting_run(sqlite_store, slack, 2)
    worker_a = ProgressReporter(store=sqlite_store, slack=slack, interval_s=3600.0)
    await worker_a.step(run, calling(counted(1), "write_file"))
    await Harness.wait_for(settled)
    assert len(slack.updates) == 1 and "Running" in slack.updates[0]
    await worker_a.waiting(run, calling(counted(1), "write_file"))
    assert len(slack.updates) == 2, "waiting was left to a drawer"
    assert slack.updates[-1].count("write_file") == 2 and "(1 time)" not in slack.updates[-1]
    assert await settled(), "a drawer is left to draw after the drive"
    await worker_a.waiting(run, calling(counted(1), "write_file"))  # a sweep: the same
    assert len(slack.updates) == 2
    await sqlite_store.record_decision("q0", Decision(type="approve"), user_id="U2")
    await worker_a.waiting(run, calling(counted(1), "write_file"))  # the batch still waits
    assert len(slack.updates) == 3 and slack.updates[-1].count("write_file") == 1
    worker_b = ProgressReporter(store=sqlite_store, slack=slack, interval_s=3600.0)
    await worker_b.final(run.model_copy(update={"state": RunState.DONE}))
    await Harness.wait_for(settled)
    assert "Done" in json.dumps(slack.messages[("C1", run.thread_ts or "")]["blocks"])


async def test_a_reopened_card_is_drawn_again(sqlite_store: ApprovalStore) -> None:
    # Worker A drew two cards waiting; B drew one after a decision; the decision is then
    # reopened and A ends the next drive: what A shows is the same as it last drew, but
    # not what the message shows, and the card's revision tells.
    slack = CountingGateway()
    run = await waiting_run(sqlite_store, slack, 2)
    worker_a = ProgressReporter(store=sqlite_store, slack=slack, interval_s=0.0)
    worker_b = ProgressReporter(store=sqlite_store, slack=slack, interval_s=0.0)
    await worker_a.waiting(run, counted(0))
    await sqlite_store.record_decision("q0", Decision(type="approve"), user_id="U2")
    await worker_b.waiting(run, counted(0))
    assert slack.updates[-1].count("write_file") == 1
    assert await sqlite_store.reopen("q0", note="changed since") is not None
    await worker_a.waiting(run, counted(0))
    assert slack.updates[-1].count("write_file") == 2, "the reopened card is not listed"


async def test_a_worker_that_never_streamed_counts_what_ran_without_review(
    sqlite_store: ApprovalStore,
) -> None:
    # A batch decided on another worker than the one that streamed the run: the counts
    # come from the checkpoint's messages, not from this process's memory.
    slack = CountingGateway()
    run = await waiting_run(sqlite_store, slack, 1)
    fresh = ProgressReporter(store=sqlite_store, slack=slack, interval_s=0.0)
    await fresh.waiting(run, calling(counted(3), "write_file"))
    assert "(3 times)" in slack.updates[-1] and "without review" in slack.updates[-1]


async def test_a_waiting_drawing_that_failed_is_drawn_by_the_next_drive(
    sqlite_store: ApprovalStore,
) -> None:
    slack = FailingGateway()
    run = await waiting_run(sqlite_store, slack, 1)
    reporter = ProgressReporter(store=sqlite_store, slack=slack, interval_s=0.0)
    await reporter.waiting(run, counted(0))  # Slack failed: logged
    assert not slack.updates
    await reporter.waiting(run, counted(0))
    assert len(slack.updates) == 1 and "write_file" in slack.updates[0]


def header(slack: CountingGateway, run: Run) -> str:
    return json.dumps(slack.messages[("C1", run.thread_ts or "")]["blocks"])


@dataclass
class FlakyLinks(CountingGateway):
    """Its first ``chat.getPermalink`` fails as a passing Slack outage does."""

    failing: int = 1

    async def permalink(self, *, team_id: str | None, channel_id: str, ts: str) -> str:
        if self.failing:
            self.failing -= 1
            raise SlackUnavailableError("Slack is down", method="chat.getPermalink", retryable=True)
        return await super().permalink(team_id=team_id, channel_id=channel_id, ts=ts)


async def test_a_card_whose_link_failed_is_linked_by_the_next_drive(
    sqlite_store: ApprovalStore,
) -> None:
    slack = FlakyLinks()
    run = await waiting_run(sqlite_store, slack, 1)
    reporter = ProgressReporter(store=sqlite_store, slack=slack, interval_s=0.0)
    await reporter.waiting(run, counted(0))  # the link failed: the card unlinked
    assert "archives/" not in header(slack, run)
    await reporter.waiting(run, counted(0))  # the next drive (a sweep, a click elsewhere)
    assert "archives/" in header(slack, run), "the unlinked card is never linked"


class FailingReads(ApprovalStore):
    """``requests_for_run`` fails while ``down``, as a database blip does."""

    def __init__(self, store: ApprovalStore) -> None:
        super().__init__(store.db, clock=store.clock)
        self.down = False

    async def requests_for_run(self, run_id: str) -> list[ApprovalRequest]:
        if self.down:
            raise StoreUnavailableError("PostgreSQL is unavailable: test")
        return await super().requests_for_run(run_id)


async def test_a_step_left_by_a_waiting_whose_read_failed_never_lands_after_done(
    sqlite_store: ApprovalStore,
) -> None:
    # Worker A streams two steps within the interval (the second left to its drawer); its
    # drive ends waiting, but the store read of ``waiting`` fails. The drive returns, the
    # lease is released, worker B ends the run (Done): A's drawer must not draw the older
    # step over it.
    slack = CountingGateway()
    run = await a_run(slack)
    store = FailingReads(sqlite_store)
    await store.create_run(run)
    worker_a = ProgressReporter(store=store, slack=slack, interval_s=0.3)
    await worker_a.step(run, counted(0))  # drawn at once
    await worker_a.step(run, calling(counted(0), "write_file"))  # due in 0.3 s
    store.down = True
    await worker_a.waiting(run, calling(counted(0), "write_file"))  # logged, returns
    store.down = False
    worker_b = ProgressReporter(store=store, slack=slack, interval_s=0.3)
    await worker_b.final(run.model_copy(update={"state": RunState.DONE}))
    assert "Done" in header(slack, run)
    await Harness.wait_for(settled)
    assert "Done" in header(slack, run), f"A's older step landed after Done: {header(slack, run)}"


async def test_a_worker_draws_waiting_over_what_another_drew_since(
    sqlite_store: ApprovalStore,
) -> None:
    # q0 is approved while worker A's drive posts the cards: A draws "waiting on q1".
    # Worker B resumes q0, its stream draws "Running", and its drive is cut after the
    # checkpoint took q0. A's next drive finds q0 applied and q1 pending as before: it
    # draws all the same (q0's state changed), so the header does not stay on "Running".
    slack = CountingGateway()
    run = await waiting_run(sqlite_store, slack, 2)
    await sqlite_store.record_decision("q0", Decision(type="approve"), user_id="U2")
    worker_a = ProgressReporter(store=sqlite_store, slack=slack, interval_s=0.0)
    worker_b = ProgressReporter(store=sqlite_store, slack=slack, interval_s=0.0)
    await worker_a.waiting(run, counted(1))
    assert "Waiting" in header(slack, run)
    await worker_b.step(run, calling(counted(1), "write_file"))
    await Harness.wait_for(settled)
    assert "Running" in header(slack, run)
    worker_b.abandon(run)  # B's drive was cut
    await sqlite_store.mark_applied(["q0"])
    await worker_a.waiting(run, counted(1))  # the next drive ends waiting on q1
    assert "Waiting" in header(slack, run), f"stale: {header(slack, run)}"


async def test_a_worker_draws_waiting_after_a_drive_that_did_not_go_through(
    sqlite_store: ApprovalStore,
) -> None:
    # The same, with nothing changed in the store: a cut drive may have drawn anything.
    slack = CountingGateway()
    run = await waiting_run(sqlite_store, slack, 1)
    worker_a = ProgressReporter(store=sqlite_store, slack=slack, interval_s=0.0)
    await worker_a.waiting(run, counted(1))
    assert len(slack.updates) == 1
    await worker_a.waiting(run.model_copy(update={"drives_in_a_row": 1}), counted(1))
    assert len(slack.updates) == 1  # the drive running counts itself: none before it
    await worker_a.waiting(run.model_copy(update={"drives_in_a_row": 2}), counted(1))
    assert len(slack.updates) == 2


@dataclass
class InstallationLookupFails(CountingGateway):
    """OAuth: each call first reads the workspace's installation from the database
    (``TeamClients.client_for``), which fails here."""

    async def update_message(
        self, *, team_id: str | None, channel_id: str, ts: str, text: str, blocks: list[Any]
    ) -> None:
        raise StoreUnavailableError("PostgreSQL is unavailable: installation lookup")


async def test_waiting_never_raises(sqlite_store: ApprovalStore) -> None:
    slack = InstallationLookupFails()
    run = await waiting_run(sqlite_store, slack, 1)
    reporter = ProgressReporter(store=sqlite_store, slack=slack, interval_s=0.0)
    await reporter.waiting(run, counted(0))  # logged, not raised into the drive


@dataclass
class CountingLinks(CountingGateway):
    """Counts ``chat.getPermalink`` calls."""

    links_asked: int = 0

    async def permalink(self, *, team_id: str | None, channel_id: str, ts: str) -> str:
        self.links_asked += 1
        return await super().permalink(team_id=team_id, channel_id=channel_id, ts=ts)


async def test_only_the_cards_shown_are_linked_and_a_gone_one_is_not_asked_again(
    sqlite_store: ApprovalStore,
) -> None:
    # A batch of 40: the header shows CARDS_SHOWN_MAX links and counts the rest, so only
    # those are fetched while the lease is held. A card whose message is gone for good
    # (message_not_found) is drawn unlinked once; the next drive of the same state
    # draws nothing and asks Slack nothing.
    slack = CountingLinks()
    run = await waiting_run(sqlite_store, slack, 40)
    (first,) = [r for r in await sqlite_store.requests_for_run(run.run_id) if r.index == 0]
    del slack.messages[("C1", first.message_ts or "")]  # someone deleted the first card
    reporter = ProgressReporter(store=sqlite_store, slack=slack, interval_s=0.0)
    await reporter.waiting(run, counted(0))
    assert slack.links_asked == CARDS_SHOWN_MAX
    assert header(slack, run).count("memory.slack/archives/") == CARDS_SHOWN_MAX - 1
    assert "30 more" in header(slack, run)
    await reporter.waiting(run, counted(0))  # the next sweep, nothing changed
    assert slack.links_asked == CARDS_SHOWN_MAX and len(slack.updates) == 1

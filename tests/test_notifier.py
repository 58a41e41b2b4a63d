"""The notifier port's contract, run against its twin (``RecordingNotifier``) and the
Slack notifier over the sandbox: what the worker may rely on whichever it is handed."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import pytest

from agent_bridge.models import ApprovalState, Decision, Run
from agent_bridge.notifier import Notifier
from agent_bridge.store import ApprovalStore
from bot.card_owner import CardOwner
from bot.slack_client import make_client
from bot.slack_gateway import single_workspace
from bot.slack_notifier import SlackNotifier
from bot.testing import RecordingNotifier
from slack_sandbox import Sandbox
from tests.harness import TEST_BOT_TOKEN, TEST_SIGNING_SECRET
from tests.test_store import make_request


@pytest.fixture
def store(sqlite_store: ApprovalStore) -> ApprovalStore:
    """This module's store: SQLite."""
    return sqlite_store


@dataclass
class Subject:
    """A notifier under test, and a count of the replies it posted in a Slack thread."""

    notifier: Notifier
    replies: Callable[[str], int]
    """``thread_ts -> how many messages were posted in that thread``."""


@pytest.fixture(params=["twin", "slack"])
async def subject(request: pytest.FixtureRequest, store: ApprovalStore) -> AsyncIterator[Subject]:
    if request.param == "twin":
        twin = RecordingNotifier(store)
        kinds = {"unreviewed", "result", "answer", "failed", "reminder"}
        yield Subject(twin, lambda _: sum(kind in kinds for kind, _ in twin.events))
        return
    sandbox = Sandbox(
        signing_secret=TEST_SIGNING_SECRET, bot_token=TEST_BOT_TOKEN, channels={"C1": "general"}
    )
    await sandbox.start()
    slack = single_workspace(make_client(token=TEST_BOT_TOKEN, base_url=sandbox.api_url))
    notifier = SlackNotifier(slack=slack, cards=CardOwner(store=store, slack=slack))
    try:
        yield Subject(notifier, lambda ts: len(sandbox.thread("C1", ts)) - 1)
    finally:
        await sandbox.stop()
        assert sandbox.violations == []


async def started_run(store: ApprovalStore, notifier: Notifier) -> Run:
    run = await store.create_run(
        Run(run_id="run-1", thread_id="thread-run-1", task="t", channel_id="C1", user_id="U1")
    )
    thread_ts = await notifier.run_started(run)
    assert thread_ts  # the run's Slack thread
    await store.set_run_thread_ts(run.run_id, thread_ts)
    return await store.get_run(run.run_id)


async def test_a_requested_approval_is_recorded_where_its_card_is(
    store: ApprovalStore, subject: Subject
) -> None:
    notifier = subject.notifier
    run = await started_run(store, notifier)
    (request,) = await store.add_requests([make_request("r1")])
    await notifier.approval_requested(request, run=run)
    posted = await store.get_request("r1")
    assert posted is not None and posted.channel_id == "C1" and posted.message_ts

    await notifier.reminder(posted, run=run)
    assert posted.message_ts is not None
    assert subject.replies(posted.message_ts) == 1  # the reminder, under its top-level card

    await store.record_decision("r1", Decision(type="approve"), user_id="U2")
    decided = await store.get_request("r1")
    assert decided is not None and decided.state == ApprovalState.DECIDED
    await notifier.approval_updated(decided, run=run)  # a redraw never raises


async def test_a_run_s_messages_are_posted_in_its_slack_thread(
    store: ApprovalStore, subject: Subject
) -> None:
    notifier = subject.notifier
    run = await started_run(store, notifier)
    await notifier.ran_without_review(
        run, key="unreviewed:c1", tool_name="read_data", args={"table": "orders"}
    )
    await notifier.tool_ran(run, key="tool:c1", tool_name="read_data", content="5 rows", ok=True)
    await notifier.tool_ran(run, key="tool:c2", tool_name="write_file", content="boom", ok=False)
    await notifier.tool_ran(run, key="tool:c3", tool_name="read_data", content=None, ok=True)
    await notifier.run_finished(run, answer="Done.")
    await notifier.run_failed(run)
    assert run.thread_ts is not None and subject.replies(run.thread_ts) == 6


async def test_a_message_is_posted_once_per_key(store: ApprovalStore, subject: Subject) -> None:
    notifier = subject.notifier
    run = await started_run(store, notifier)
    for _ in range(2):
        await notifier.tool_ran(run, key="tool:c1", tool_name="read_data", content="5", ok=True)
        await notifier.run_finished(run, answer="Done.")
    assert run.thread_ts is not None and subject.replies(run.thread_ts) == 2

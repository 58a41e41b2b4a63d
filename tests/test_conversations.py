"""Conversations through the sandbox: a DM to the bot starts a run; a reply in the run's
Slack thread answers the agent's ``ask_user`` question as the Respond decision (same
guard, store path and audit as the button), once under Slack's retries; other people's
replies are refused privately, chat is ignored."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agent_bridge.audit import AuditKind, read_events
from agent_bridge.decisions import MESSAGE_MAX_CHARS
from agent_bridge.models import ApprovalRequest, ApprovalState, RunState
from agent_bridge.settings import WorkerConfig
from tests.harness import (
    DBA,
    REQUESTER,
    REVIEWER,
    RUN_IDS,
    WAIT_TIMEOUT_S,
    Harness,
    decision_buttons,
)

FIXTURES = Path(__file__).parent / "fixtures"
OUTSIDER = "U0OUTSIDER"
GUEST = "U0GUEST"
GRID = "E0GRID"
QUESTION = json.dumps({"tool_calls": [{"name": "ask_user", "args": {"question": "Which region?"}}]})


@pytest.fixture
def agent_settings(settings: WorkerConfig) -> WorkerConfig:
    return settings.model_copy(update={"policy": FIXTURES / "ask_policy.yml"})


async def dm_run(harness: Harness, user_id: str = REQUESTER) -> str:
    """DM the question task as ``user_id``; return the run it queued."""
    status, _, _ = await harness.sandbox.direct_message(user_id=user_id, text=QUESTION)
    assert status == 200

    async def queued() -> str | None:
        rows = await harness.store.db.fetch_all(RUN_IDS)
        return rows[0]["run_id"] if rows else None

    return await harness.wait_for(queued)


async def told(harness: Harness, user_id: str, text: str) -> None:
    async def found() -> bool:
        return any(text in n.get("text", "") for n in harness.sandbox.ephemerals(user_id=user_id))

    await harness.wait_for(found)


async def test_a_dm_starts_a_run_whose_thread_reply_answers_its_question(
    harness: Harness,
) -> None:
    run = await harness.store.get_run(await dm_run(harness))
    dm = harness.sandbox.dm_channel(REQUESTER)
    assert run.channel_id == dm and run.user_id == REQUESTER
    [request] = await harness.requests(run, count=1)
    run = await harness.store.get_run(run.run_id)
    assert run.thread_ts and request.channel_id == dm

    status, _, event_id = await harness.sandbox.reply(
        user_id=REQUESTER, channel_id=dm, thread_ts=run.thread_ts, text="eu-west-1, please"
    )
    assert status == 200
    decided = await harness.decided(request)
    assert decided.decision is not None and decided.decision.type == "respond"
    assert decided.decision.message == "eu-west-1, please"
    assert decided.decided_by == REQUESTER
    card = await harness.decided_card(request)
    assert "eu-west-1, please" in json.dumps(card["blocks"])
    done = await harness.finished(run)
    assert done.state == RunState.DONE
    [tool] = await harness.tool_messages(run)
    assert tool.content == "eu-west-1, please"

    # Slack retries the delivery: the same event, dropped; nothing new recorded or told.
    status, _ = await harness.sandbox.retry_event(event_id)
    assert status == 200
    events = [e for e in await read_events(harness.store.db) if e.request_id == request.request_id]
    assert [e.kind for e in events].count(AuditKind.DECIDED) == 1
    assert harness.sandbox.ephemerals(user_id=REQUESTER) == []


@pytest.mark.parametrize("harness_options", [{"enterprise_id": GRID}])
async def test_a_reply_by_a_member_of_an_enterprise_grid_workspace_answers(
    harness: Harness,
) -> None:
    """On Enterprise Grid the installation has an org (``auth.test``'s
    ``enterprise_id``); a member's reply is the org's like a click on the card is."""
    run = await harness.store.get_run(await dm_run(harness))
    [request] = await harness.requests(run, count=1)
    run = await harness.store.get_run(run.run_id)
    assert run.thread_ts and run.channel_id
    await harness.sandbox.reply(
        user_id=REQUESTER, channel_id=run.channel_id, thread_ts=run.thread_ts, text="eu-north-1"
    )

    async def heard() -> ApprovalRequest | str | None:
        """The request once decided, or what its answerer was told instead."""
        told = " ".join(n.get("text", "") for n in harness.sandbox.ephemerals(user_id=REQUESTER))
        now = await harness.store.get_request(request.request_id)
        return told or (now if now and now.state != ApprovalState.PENDING else None)

    decided = await harness.wait_for(heard)
    assert isinstance(decided, ApprovalRequest), decided
    assert decided.decision is not None and decided.decision.type == "respond"
    assert decided.decision.message == "eu-north-1" and decided.decided_by == REQUESTER
    assert (await harness.finished(run)).state == RunState.DONE


async def test_an_answer_reaches_the_agent_as_typed(harness: Harness) -> None:
    """Slack sends ``<``, ``>`` and ``&`` of a message as ``&lt;`` ``&gt;`` ``&amp;``; the
    decision, the card and the tool's result have what the person typed."""
    typed = "a < b && c > d, not &lt; (typed as such)"
    run = await harness.store.get_run(await dm_run(harness))
    [request] = await harness.requests(run, count=1)
    run = await harness.store.get_run(run.run_id)
    assert run.thread_ts and run.channel_id
    await harness.sandbox.reply(
        user_id=REQUESTER, channel_id=run.channel_id, thread_ts=run.thread_ts, text=typed
    )
    decided = await harness.decided(request)
    assert decided.decision is not None and decided.decision.message == typed
    assert (await harness.finished(run)).state == RunState.DONE
    [tool] = await harness.tool_messages(run)
    assert tool.content == typed


async def test_an_answer_longer_than_the_respond_modal_takes_is_refused(
    harness: Harness,
) -> None:
    """The Respond modal takes at most ``MESSAGE_MAX_CHARS``; an answer in the Slack
    thread is held to the same rule, counted as typed, and told privately why not."""
    run = await harness.store.get_run(await dm_run(harness))
    [request] = await harness.requests(run, count=1)
    run = await harness.store.get_run(run.run_id)
    assert run.thread_ts and run.channel_id
    where = {"channel_id": run.channel_id, "thread_ts": run.thread_ts}
    too_long = "<" * (MESSAGE_MAX_CHARS + 1)  # 4 characters each in the event's text
    await harness.sandbox.reply(user_id=REQUESTER, text=too_long, **where)
    await told(harness, REQUESTER, f"at most {MESSAGE_MAX_CHARS:,} characters")
    still = await harness.store.get_request(request.request_id)
    assert still is not None and still.state == ApprovalState.PENDING

    longest = "<" * MESSAGE_MAX_CHARS
    await harness.sandbox.reply(user_id=REQUESTER, text=longest, **where)
    decided = await harness.decided(request)
    assert decided.decision is not None and decided.decision.message == longest


async def test_only_those_allowed_to_answer_are_heard(harness: Harness) -> None:
    harness.sandbox.add_user(GUEST, "guest", team_id="T0OTHER")
    run = await harness.store.get_run(await dm_run(harness, REVIEWER))
    [request] = await harness.requests(run, count=1)
    run = await harness.store.get_run(run.run_id)
    assert run.thread_ts
    where = {"channel_id": run.channel_id, "thread_ts": run.thread_ts}

    await harness.sandbox.reply(user_id=REVIEWER, text="I started it, I answer", **where)
    await told(harness, REVIEWER, "not an approver")  # the requester is no approver here
    await harness.sandbox.reply(user_id=GUEST, text="guest answer", **where)
    await told(harness, GUEST, "another Slack workspace")
    still = await harness.store.get_request(request.request_id)
    assert still is not None and still.state == ApprovalState.PENDING

    await harness.sandbox.reply(user_id=DBA, text="us-east-2", **where)
    decided = await harness.decided(request)
    assert decided.decided_by == DBA and decided.decision is not None
    assert decided.decision.message == "us-east-2"
    refused = [
        e
        for e in await read_events(harness.store.db)
        if e.request_id == request.request_id and e.kind == "refused"
    ]
    assert {e.user_id for e in refused} == {REVIEWER, GUEST}
    assert not decision_buttons(await harness.decided_card(request))


async def test_a_dm_from_someone_who_may_not_start_runs_is_refused(harness: Harness) -> None:
    harness.sandbox.add_user(OUTSIDER, "outsider")
    status, _, _ = await harness.sandbox.direct_message(user_id=OUTSIDER, text=QUESTION)
    assert status == 200
    await told(harness, OUTSIDER, "You can't start runs of this agent")
    assert await harness.store.db.fetch_all(RUN_IDS) == []


async def test_chat_in_a_run_thread_with_no_question_is_ignored(harness: Harness) -> None:
    task = json.dumps(
        {"tool_calls": [{"name": "write_file", "args": {"path": "a", "content": "b"}}]}
    )
    status, _, _ = await harness.sandbox.direct_message(user_id=REQUESTER, text=task)
    assert status == 200

    async def queued() -> str | None:
        rows = await harness.store.db.fetch_all(RUN_IDS)
        return rows[0]["run_id"] if rows else None

    run = await harness.store.get_run(await harness.wait_for(queued))
    [request] = await harness.requests(run, count=1)
    run = await harness.store.get_run(run.run_id)
    assert run.thread_ts
    await harness.sandbox.reply(
        user_id=REVIEWER, channel_id=run.channel_id, thread_ts=run.thread_ts, text="looks fine"
    )
    await harness.click(request, "approve")
    await harness.decided(request)
    assert harness.sandbox.ephemerals(user_id=REVIEWER) == []
    current = await harness.store.get_request(request.request_id)
    assert current is not None and current.decision is not None
    assert current.decision.type == "approve"


async def test_a_reply_answers_only_a_question_shown_before_it(harness: Harness) -> None:
    """A reply written while the question's card is still unposted (a slow or failed
    post) answers nothing, then or later: its writer never saw the question."""
    stall = harness.sandbox.stall_next("chat.postMessage", key_contains="/card:", applied=False)
    run_id = await dm_run(harness)
    await asyncio.wait_for(stall.reached.wait(), WAIT_TIMEOUT_S)
    run = await harness.store.get_run(run_id)
    assert run is not None and run.thread_ts and run.channel_id
    status, _, _ = await harness.sandbox.reply(
        user_id=REQUESTER, channel_id=run.channel_id, thread_ts=run.thread_ts, text="yes"
    )
    assert status == 200
    stall.released.set()
    [request] = await harness.requests(run, count=1)  # posted
    await harness.sandbox.reply(
        user_id=REQUESTER, channel_id=run.channel_id, thread_ts=run.thread_ts, text="eu-west-1"
    )
    decided = await harness.decided(request)
    assert decided.decision is not None and decided.decision.message == "eu-west-1"
    assert harness.sandbox.ephemerals(user_id=REQUESTER) == []

"""Who may start runs: the policy's requesters only, never a bot, never someone of
another workspace, and no one past ``max_active_runs_per_user``; each refusal is told
privately and queues nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_bridge.scripted_model import DEMO_TASK
from agent_bridge.settings import WorkerConfig
from tests.harness import CHANNEL, REQUESTER, REVIEWER, RUN_IDS, Harness

FIXTURES = Path(__file__).parent / "fixtures"
OUTSIDER = "U0OUTSIDER"
GUEST = "U0GUEST"
HELPER_BOT = "U0HELPERBOT"


@pytest.fixture
def agent_settings(settings: WorkerConfig) -> WorkerConfig:
    return settings.model_copy(update={"policy": FIXTURES / "start_policy.yml"})


async def setup_people(harness: Harness) -> None:
    harness.sandbox.add_user(OUTSIDER, "outsider")
    harness.sandbox.add_user(GUEST, "guest", team_id="T0OTHER")
    harness.sandbox.add_user(HELPER_BOT, "helper", is_bot=True)
    await harness.sandbox.set_usergroup("S0REQ", "requesters", [REQUESTER])


async def command(harness: Harness, user_id: str) -> None:
    status, _ = await harness.sandbox.slash_command(
        command="/agent", text=DEMO_TASK, user_id=user_id, channel_id=CHANNEL
    )
    assert status == 200


async def told(harness: Harness, user_id: str, text: str) -> dict[str, Any]:
    async def found() -> dict[str, Any] | None:
        notes = harness.sandbox.ephemerals(user_id=user_id)
        return next((n for n in notes if text in n.get("text", "")), None)

    return await harness.wait_for(found)


async def run_count(harness: Harness) -> int:
    return len(await harness.store.db.fetch_all(RUN_IDS))


async def test_only_requesters_start_runs(harness: Harness) -> None:
    await setup_people(harness)
    await command(harness, OUTSIDER)
    await told(harness, OUTSIDER, "You can't start runs of this agent")
    await command(harness, GUEST)
    await told(harness, GUEST, "another Slack workspace")
    assert await run_count(harness) == 0
    await harness.start_run(DEMO_TASK)  # the requester, a member of S0REQ
    await command(harness, REVIEWER)  # named directly
    await harness.wait_for(lambda: _runs_at_least(harness, 2))


async def test_past_the_run_limit_nothing_is_queued(harness: Harness) -> None:
    await setup_people(harness)
    run = await harness.start_run(DEMO_TASK)  # waits for approval: still active
    await harness.requests(run, count=2)
    await command(harness, REQUESTER)
    note = await told(harness, REQUESTER, "you already have 1 run queued, running or waiting")
    assert "Nothing was queued" in note["text"]
    assert await run_count(harness) == 1


async def test_a_bots_mention_never_starts_a_run(harness: Harness) -> None:
    await setup_people(harness)
    status, _ = await harness.sandbox.mention(
        user_id=HELPER_BOT, channel_id=CHANNEL, text=DEMO_TASK
    )
    assert status == 200
    # Answered: a listener that would start a run has asked for the start rules by now.
    assert harness.web_store.runs_asked == 0
    assert await run_count(harness) == 0
    assert harness.sandbox.ephemerals(user_id=HELPER_BOT) == []
    # The same mention by a requester starts one (the listener is there).
    await harness.sandbox.mention(user_id=REQUESTER, channel_id=CHANNEL, text=DEMO_TASK)
    await harness.wait_for(lambda: _runs_at_least(harness, 1))


async def test_a_mention_in_a_thread_starts_nothing_and_says_so(harness: Harness) -> None:
    await setup_people(harness)
    run = await harness.start_run(DEMO_TASK)
    await harness.requests(run, count=2)
    started = await harness.store.get_run(run.run_id)
    await harness.sandbox.mention(
        user_id=REQUESTER, channel_id=CHANNEL, text="please approve", thread_ts=started.thread_ts
    )
    await told(harness, REQUESTER, "A mention in a thread does not start a run")
    assert await run_count(harness) == 1


async def test_requester_groups_slack_does_not_know_let_no_one_start(harness: Harness) -> None:
    harness.sandbox.add_user(OUTSIDER, "outsider")  # S0REQ was never created
    await command(harness, REQUESTER)
    await told(harness, REQUESTER, "names groups Slack does not know (S0REQ) as `requesters`")
    assert await run_count(harness) == 0


async def test_requester_groups_slack_refuses_to_list_send_the_requester_to_the_admin(
    harness: Harness,
) -> None:
    """The app's token lacks ``usergroups:read`` (a careless admin): nobody may start,
    and the requester is told an admin must act, not to try again."""
    await setup_people(harness)
    harness.sandbox.fail_next("usergroups.users.list", status=200, error="missing_scope", times=9)
    await command(harness, REQUESTER)
    note = await told(harness, REQUESTER, "Slack refuses to list the groups allowed to start runs")
    assert "S0REQ (`missing_scope`)" in note["text"] and "tell the app's admin" in note["text"]
    assert "try again shortly" not in note["text"]
    assert await run_count(harness) == 0


async def _runs_at_least(harness: Harness, count: int) -> bool:
    return await run_count(harness) >= count

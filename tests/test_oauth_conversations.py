"""Thread answers across workspaces installed with OAuth: a Slack Connect guest whose home
workspace also has the app replies in another workspace's run thread; they may not answer
there, and are told so privately in that workspace, with its token (found attacking the
conversation fixes)."""

from __future__ import annotations

import json

from agent_bridge.models import ApprovalState
from slack_sandbox import Sandbox
from tests.harness import REQUESTER, REVIEWER, Harness
from tests.test_oauth_install import (  # noqa: F401 (fixtures)
    BETA_CHANNEL,
    BETA_REQUESTER,
    agent_settings,
    beta,
    install,
    start_run,
    web_settings,
)

QUESTION = json.dumps({"tool_calls": [{"name": "ask_user", "args": {"question": "Which region?"}}]})


async def test_a_guest_from_another_installed_workspace_is_told_in_the_thread_s_workspace(
    harness: Harness,
    beta: Sandbox,  # noqa: F811 (the fixture)
) -> None:
    alpha = harness.sandbox
    assert (await install(harness, alpha, REQUESTER))[0] == 200
    assert (await install(harness, beta, BETA_REQUESTER))[0] == 200
    run = await start_run(
        beta, harness, user_id=BETA_REQUESTER, channel=BETA_CHANNEL, task=QUESTION
    )
    (question,) = await harness.requests(run, count=1)
    run = await harness.store.get_run(run.run_id)
    assert run.thread_ts
    beta.add_user(REVIEWER, "reviewer", team_id="T0SANDBOX")  # alpha's member, a guest here

    await beta.reply(
        user_id=REVIEWER, channel_id=BETA_CHANNEL, thread_ts=run.thread_ts, text="eu-west-1"
    )

    async def told() -> str | None:
        seen = [m.get("text", "") for m in beta.ephemerals(user_id=REVIEWER)]
        return seen[-1] if seen else None

    assert "another Slack workspace" in await harness.wait_for(told)
    still = await harness.store.get_request(question.request_id)
    assert still is not None and still.state == ApprovalState.PENDING


async def test_a_guest_s_mention_is_answered_in_the_channel_s_workspace(
    harness: Harness,
    beta: Sandbox,  # noqa: F811 (the fixture)
) -> None:
    """A Slack Connect guest's ``@agent`` in a channel of another installed workspace is
    refused (runs start for that workspace's members), and the refusal reaches them in
    that workspace, with its token: with their home workspace's, it never did."""
    alpha = harness.sandbox
    assert (await install(harness, alpha, REQUESTER))[0] == 200
    assert (await install(harness, beta, BETA_REQUESTER))[0] == 200
    beta.add_user(REVIEWER, "reviewer", team_id="T0SANDBOX")  # alpha's member, a guest here
    status, _ = await beta.mention(user_id=REVIEWER, channel_id=BETA_CHANNEL, text="archive it")
    assert status == 200

    async def told() -> str | None:
        seen = [m.get("text", "") for m in beta.ephemerals(user_id=REVIEWER)]
        return seen[-1] if seen else None

    assert "another Slack workspace" in await harness.wait_for(told)
    assert await harness.store.db.fetch_all("SELECT run_id FROM runs") == []

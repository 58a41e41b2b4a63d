"""One workspace's App Home shows nothing of another's: its pending cards are not listed to a
person of another workspace (a guest), and a person's decisions are listed in the workspace
they were made in only (found by attacking the many-workspace install)."""

from __future__ import annotations

import json
from typing import Any

from agent_bridge.models import ApprovalState
from slack_sandbox import Sandbox
from tests.harness import CHANNEL, REQUESTER, REVIEWER, Harness
from tests.test_oauth_install import (  # noqa: F401 (fixtures)
    BETA_CHANNEL,
    BETA_REQUESTER,
    agent_settings,
    approve,
    beta,
    install,
    start_run,
    web_settings,
)


async def test_workspace_b_s_home_lists_no_decision_made_in_workspace_a(
    harness: Harness,
    beta: Sandbox,  # noqa: F811 (the fixture)
) -> None:
    """A person in two workspaces (Enterprise Grid user, or a guest) approves a card of
    workspace A; the app's Home in workspace B, published with B's token into B, lists
    their decisions in B only (``Inbox.decided_by`` takes the workspace)."""
    alpha = harness.sandbox
    assert (await install(harness, alpha, REQUESTER))[0] == 200
    assert (await install(harness, beta, BETA_REQUESTER))[0] == 200
    run_a = await start_run(alpha, harness, user_id=REQUESTER, channel=CHANNEL)
    write_a, _ = await harness.requests(run_a, count=2)
    assert (await approve(alpha, write_a, REVIEWER))[0] == 200

    async def decided() -> bool | None:
        r = await harness.store.get_request(write_a.request_id)
        return True if r is not None and r.state != ApprovalState.PENDING else None

    await harness.wait_for(decided)
    beta.add_user(REVIEWER, "reviewer", team_id="T0SANDBOX")
    assert (await beta.open_home(user_id=REVIEWER))[0] == 200

    text = await home_published_in_beta(harness, REVIEWER)
    # Workspace B's Home must say nothing of workspace A's requests.
    assert write_a.tool_name not in text, text


async def test_a_guest_from_workspace_a_is_listed_nothing_on_workspace_b_s_home(
    harness: Harness,
    beta: Sandbox,  # noqa: F811 (the fixture)
) -> None:
    """A person of workspace A who is only a guest in B (Slack Connect / guest account)
    opens the app's Home in B: their own workspace is A (``users.info``), so none of B's
    pending cards, which they could never decide, is listed to them."""
    alpha = harness.sandbox
    assert (await install(harness, alpha, REQUESTER))[0] == 200
    assert (await install(harness, beta, BETA_REQUESTER))[0] == 200
    run_b = await start_run(beta, harness, user_id=BETA_REQUESTER, channel=BETA_CHANNEL)
    write_b, _ = await harness.requests(run_b, count=2)
    beta.add_user(REVIEWER, "reviewer", team_id="T0SANDBOX")
    assert (await beta.open_home(user_id=REVIEWER))[0] == 200

    text = await home_published_in_beta(harness, REVIEWER)
    # B's cards, arguments and all, must not be listed to A's member (their clicks are
    # refused on the signed team: tests/test_oauth_install.py).
    assert write_b.tool_name not in text, text


async def home_published_in_beta(harness: Harness, user_id: str) -> str:
    """Wait for ``user_id``'s Home to be published in workspace beta; return its JSON."""

    async def published() -> dict[str, Any] | None:
        calls = [
            c
            for c in harness.sandbox.calls
            if c["method"] == "views.publish"
            and c.get("team_id") == "T0BETA"
            and c["args"].get("user_id") == user_id
        ]
        return calls[-1] if calls else None

    view = (await harness.wait_for(published))["args"].get("view")
    return view if isinstance(view, str) else json.dumps(view)

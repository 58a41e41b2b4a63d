"""The App Home inbox through the sandbox: per user, the requests they may decide (the
guard's rule), newest first, with the card's buttons and a link to it, and their recent
decisions; republished when a request is created or decided; a click from Home is
authorized for the Home's own user only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_bridge import home_wording
from agent_bridge.audit import read_events
from agent_bridge.models import ApprovalRequest
from agent_bridge.scripted_model import DEMO_TASK
from agent_bridge.settings import WorkerConfig
from bot import ids
from slack_sandbox.delivery import payload_body
from slack_sandbox.payloads import home_block_actions_payload
from tests.harness import DBA, REQUESTER, REVIEWER, Harness

FIXTURES = Path(__file__).parent / "fixtures"
SECOND_DBA = "U0DBA2"
APPROVE = ids.decision_action_id("approve")


@pytest.fixture
def agent_settings(settings: WorkerConfig) -> WorkerConfig:
    return settings.model_copy(update={"policy": FIXTURES / "dba_policy.yml"})


def buttons(view: dict[str, Any]) -> list[str]:
    """The decision buttons' values in a Home view, top to bottom."""
    return [
        e["value"]
        for b in view["blocks"]
        if b["type"] == "actions"
        for e in b["elements"]
        if e["action_id"] == APPROVE
    ]


def value(request: ApprovalRequest) -> str:
    return ids.decision_value(request.request_id, request.version)


async def home(harness: Harness, user_id: str, expect: list[str]) -> dict[str, Any]:
    """Wait until ``user_id``'s Home shows exactly the Approve buttons ``expect``."""

    async def shown() -> dict[str, Any] | None:
        view = harness.sandbox.home_view(user_id)
        return view if view is not None and buttons(view) == expect else None

    return await harness.wait_for(shown)


async def test_each_user_sees_what_they_may_decide_and_clicks_it_from_home(
    harness: Harness,
) -> None:
    harness.sandbox.add_user(SECOND_DBA, "dba2")
    await harness.sandbox.set_usergroup("S0DBA", "dba-team", [DBA, SECOND_DBA])
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)

    for user_id in (REVIEWER, DBA, REQUESTER):
        status, _ = await harness.sandbox.open_home(user_id=user_id)
        assert status == 200
    reviewer_home = await home(harness, REVIEWER, [value(write)])  # not a DBA: no SQL
    view = await home(harness, DBA, [value(sql), value(write)])  # newest first
    await home(harness, REQUESTER, [])  # four eyes: nothing of their own run
    assert home_wording.HOME_EMPTY in json.dumps(harness.sandbox.home_view(REQUESTER))
    text = json.dumps(view["blocks"])
    assert "`write_file`" in text and "`execute_sql`" in text
    assert f"archives/{write.channel_id}/p{(write.message_ts or '').replace('.', '')}" in text
    assert reviewer_home["private_metadata"] == ids.home_metadata(REVIEWER)

    # A click from the reviewer's Home is the card's click: recorded, card and Homes redrawn.
    status, _ = await harness.sandbox.click_home(
        user_id=REVIEWER, action_id=APPROVE, value=value(write)
    )
    assert status == 200
    decided = await harness.decided(write)
    assert decided.decided_by == REVIEWER
    await harness.decided_card(write)
    after = await home(harness, REVIEWER, [])
    assert "Approved" in json.dumps(after["blocks"])
    await home(harness, DBA, [value(sql)])

    # A newer run's requests come first on the Home of someone already looking.
    second = await harness.start_run(DEMO_TASK)
    write2, sql2 = await harness.requests(second, count=2)
    await home(harness, DBA, [value(sql2), value(write2), value(sql)])


async def test_a_click_on_another_users_home_view_is_refused(harness: Harness) -> None:
    await harness.sandbox.set_usergroup("S0DBA", "dba-team", [DBA])
    run = await harness.start_run(DEMO_TASK)
    write, _ = await harness.requests(run, count=2)
    await harness.sandbox.open_home(user_id=REVIEWER)
    view = await home(harness, REVIEWER, [value(write)])
    [block] = [b for b in view["blocks"] if b["type"] == "actions"]
    button = next(e for e in block["elements"] if e["action_id"] == APPROVE)
    # The DBA may decide write_file, but not through the reviewer's Home view.
    forged = home_block_actions_payload(
        team_id="T0SANDBOX",
        user_id=DBA,
        user_name="dba",
        view=view,
        block=block,
        button=button,
        trigger_id="1.1.forged",
        action_ts="1.0",
    )
    status, _ = await harness.sandbox.post_signed(payload_body(forged))
    assert status == 200
    dm = harness.sandbox.dm_channel(DBA)

    async def told() -> bool:
        return any("does not belong" in m.get("text", "") for m in harness.sandbox.messages(dm))

    await harness.wait_for(told)
    refused = [
        e
        for e in await read_events(harness.store.db)
        if e.request_id == write.request_id and e.kind == "refused"
    ]
    assert [e.user_id for e in refused] == [DBA]
    current = await harness.store.get_request(write.request_id)
    assert current is not None and current.decided_by is None


async def test_full_arguments_from_home_only_for_requests_that_home_may_list(
    harness: Harness,
) -> None:
    """The "View full arguments" button names its request in a value the client sends:
    from a Home it opens only for someone that Home would list the request to."""
    await harness.sandbox.set_usergroup("S0DBA", "dba-team", [DBA])
    run = await harness.start_run(DEMO_TASK)
    write, sql = await harness.requests(run, count=2)
    await harness.sandbox.open_home(user_id=REVIEWER)
    view = await home(harness, REVIEWER, [value(write)])
    # The reviewer is no DBA: their Home lists write_file only; a client that sends the
    # SQL request's ID in the value must not read its task and statement.
    status, _ = await harness.sandbox.post_signed(
        payload_body(
            home_block_actions_payload(
                team_id="T0SANDBOX",
                user_id=REVIEWER,
                user_name="reviewer",
                view=view,
                block={"block_id": "forged"},
                button={"action_id": ids.VIEW_ARGS_ACTION, "value": sql.request_id},
                trigger_id=harness.sandbox.trigger_id(REVIEWER),
                action_ts="1.0",
            )
        )
    )
    assert status == 200
    dm = harness.sandbox.dm_channel(REVIEWER)

    async def told() -> bool:
        return any(
            "execute_sql" in m.get("text", "") and "approver" in m.get("text", "")
            for m in harness.sandbox.messages(dm)
        )

    await harness.wait_for(told)
    assert harness.sandbox.open_views(REVIEWER) == []
    refused = [
        e
        for e in await read_events(harness.store.db)
        if e.request_id == sql.request_id and e.kind == "refused"
    ]
    assert [(e.user_id, e.detail) for e in refused] == [(REVIEWER, "view")]

"""A click the card never offered is refused privately, in words that stay words: the
refusal names the tool, and the name is escaped like all agent-controlled text."""

from __future__ import annotations

import pytest

from agent_bridge.bus import InProcessBus
from agent_bridge.models import ApprovalState, Run
from agent_bridge.opened_views import OpenedViews
from agent_bridge.store import ApprovalStore
from bot import ids
from bot.actions import ActionListeners
from bot.card_owner import CardOwner
from bot.directory import Directory
from bot.guard import Guard
from bot.recorder import DecisionRecorder
from bot.testing import MemoryGateway, installed_in
from tests.slack_bodies import TEAM_ID, click_payload
from tests.test_store import make_request

HOSTILE_TOOL = "<!channel> <https://evil|innocent>"


@pytest.fixture
def store(sqlite_store: ApprovalStore) -> ApprovalStore:
    """This module's store: SQLite."""
    return sqlite_store


@pytest.mark.parametrize("decision", ["approve", "respond"])
async def test_a_forged_button_is_refused_with_the_tool_name_escaped(
    store: ApprovalStore, decision: str
) -> None:
    await store.create_run(
        Run(
            run_id="run-1",
            thread_id="thread-run-1",
            task="t",
            channel_id="C1",
            user_id="U1",
            team_id=TEAM_ID,
        )
    )
    request = make_request("r1").model_copy(
        update={"tool_name": HOSTILE_TOOL, "allowed_decisions": ["reject"], "team_id": TEAM_ID}
    )
    await store.add_requests([request])
    await store.set_message("r1", channel_id="C1", message_ts="1.000001")
    slack = MemoryGateway()
    recorder = DecisionRecorder(
        store=store, bus=InProcessBus(), cards=CardOwner(store=store, slack=slack)
    )
    listeners = ActionListeners(
        store=store,
        recorder=recorder,
        slack=slack,
        guard=Guard(store=store, directory=Directory(slack=slack)),
        views=OpenedViews(store.db),
    )
    body = click_payload(
        {"ts": "1.000001", "blocks": []},
        channel_id="C1",
        action_id=ids.decision_action_id(decision),  # type: ignore[arg-type]
        value=ids.decision_value("r1", (await store.get_request("r1")).version),  # type: ignore[union-attr]
        user_id="U0REVIEWER",
    )

    await listeners.on_decision(body, installed_in(TEAM_ID))

    ((_, user, text),) = slack.ephemerals
    assert user == "U0REVIEWER" and "is not allowed" in text
    assert "<!channel>" not in text and "<https://" not in text
    assert "&lt;!channel&gt;" in text
    stored = await store.get_request("r1")
    assert stored is not None and stored.state == ApprovalState.PENDING

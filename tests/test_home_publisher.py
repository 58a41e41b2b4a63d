"""``HomePublisher`` on its own (SQLite store, the gateway's twin): a burst of changes is
one ``views.publish`` per concerned user, drawn from the state after the burst; people
who may not decide a request get no Home for it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent_bridge.models import ReviewRules
from agent_bridge.store import ApprovalStore
from bot.directory import Directory
from bot.guard import Guard
from bot.home import HomePublisher
from bot.testing import MemoryGateway
from tests.test_store import make_request, make_run


@dataclass
class PublishCounting(MemoryGateway):
    """Keeps every Home published, in order."""

    published: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    async def publish_home(
        self, *, team_id: str | None, user_id: str, view: dict[str, Any]
    ) -> None:
        self.published.append((user_id, view))
        await super().publish_home(team_id=team_id, user_id=user_id, view=view)


async def test_a_burst_of_changes_is_one_publish_per_approver(
    sqlite_store: ApprovalStore,
) -> None:
    slack = PublishCounting()
    guard = Guard(store=sqlite_store, directory=Directory(slack=slack))
    home = HomePublisher(
        store=sqlite_store, slack=slack, guard=guard, debounce_s=0.01, publish_interval_s=0.0
    )
    run = make_run().model_copy(update={"team_id": "T1", "user_id": "UREQ"})
    await sqlite_store.create_run(run)
    requests = [
        make_request(f"r{i}", index=i).model_copy(
            update={
                "team_id": "T1",
                "requester_id": "UREQ",
                "batch_size": 20,
                "rules": ReviewRules(approvers=("U1", "UREQ")),
            }
        )
        for i in range(20)
    ]
    stored = await sqlite_store.add_requests(requests)
    for request in stored:
        await sqlite_store.set_message(request.request_id, channel_id="C1", message_ts="1.1")
    for request in stored:  # twenty cards drawn within one debounce window
        home.request_changed(request)
    await home.idle()  # the one background task: done once every Home is published
    assert [user for user, _ in slack.published] == ["U1"]  # the requester: four eyes
    [(_, view)] = slack.published
    assert sum(1 for b in view["blocks"] if b["type"] == "actions") == 20

    home.request_changed(stored[0])  # a later change: published again, from fresh state
    await home.idle()
    assert [user for user, _ in slack.published] == ["U1", "U1"]

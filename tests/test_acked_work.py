"""``bot.acked_work`` on a real Bolt ``AsyncApp``: the work after an ``ack()`` (a
listener's body and a lazy listener) is kept until it ends, and named when a stop
cannot wait for it; a click acked by ``bot.actions.ack_first`` is answered before its
listener starts, and its listener is kept all the same."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.request.async_request import AsyncBoltRequest

from bot.acked_work import AckedWork
from bot.actions import ack_first
from slack_sandbox.delivery import payload_body
from slack_sandbox.payloads import block_actions_payload

FORM: dict[str, str | Sequence[str]] = {"content-type": "application/x-www-form-urlencoded"}


async def authorize(**_: Any) -> AuthorizeResult:
    return AuthorizeResult(enterprise_id=None, team_id="T1", bot_user_id="UBOT", bot_token="x")


def click(action_id: str, value: str) -> AsyncBoltRequest:
    payload = block_actions_payload(
        team_id="T1",
        user_id="U1",
        user_name="u1",
        channel_id="C1",
        channel_name="general",
        message={"ts": "1.0", "text": "card"},
        is_ephemeral=False,
        block={"block_id": "b"},
        button={"action_id": action_id, "value": value},
        trigger_id="1.1.t",
        response_url="https://hooks.slack.invalid/1",
        action_ts="1.0",
    )
    return AsyncBoltRequest(body=payload_body(payload).decode(), headers=FORM)


async def test_work_after_the_ack_is_kept_until_it_ends_and_named_if_it_does_not() -> None:
    app = AsyncApp(authorize=authorize, signing_secret="unused", request_verification_enabled=False)
    go = asyncio.Event()
    done: list[str] = []

    async def body_after_ack(ack: Any) -> None:
        await ack()
        await go.wait()
        done.append("body")

    async def just_ack(ack: Any) -> None:
        await ack()

    async def lazy_work() -> None:
        await go.wait()
        done.append("lazy")

    app.action("approve")(body_after_ack)
    app.action("later")(ack=just_ack, lazy=[lazy_work])
    acked = AckedWork.watch(app)

    assert (await app.async_dispatch(click("approve", "req1.v1"))).status == 200
    assert (await app.async_dispatch(click("later", "req2.v2"))).status == 200
    assert acked.pending == 2 and done == []  # both acked, neither finished

    left = await acked.drain(0.01)  # the work waits on ``go``: it cannot end in time
    assert left == [
        "block_actions approve value=req1.v1 by U1",
        "block_actions later value=req2.v2 by U1",
    ]
    go.set()
    assert await acked.drain(5.0) == []
    assert sorted(done) == ["body", "lazy"] and acked.pending == 0


async def test_a_click_acked_first_is_answered_before_its_listener_starts_and_still_kept() -> None:
    app = AsyncApp(authorize=authorize, signing_secret="unused", request_verification_enabled=False)
    go, running = asyncio.Event(), asyncio.Event()
    started: list[str] = []

    async def work(body: dict[str, Any]) -> None:
        started.append(body["actions"][0]["value"])
        running.set()
        await go.wait()

    app.action("approve", middleware=[ack_first])(work)
    acked = AckedWork.watch(app)

    response = await app.async_dispatch(click("approve", "req1.v1"))
    # Answered with no poll for a listener's ack: the listener has not run a step yet.
    assert response.status == 200 and response.body == "" and started == []
    await asyncio.wait_for(running.wait(), 5.0)  # then the listener's task starts
    assert started == ["req1.v1"] and acked.pending == 1
    assert await acked.drain(0.01) == ["block_actions approve value=req1.v1 by U1"]
    go.set()
    assert await acked.drain(5.0) == [] and acked.pending == 0


async def test_a_drain_straight_after_a_click_acked_first_still_waits_for_its_work() -> None:
    app = AsyncApp(authorize=authorize, signing_secret="unused", request_verification_enabled=False)
    done: list[str] = []

    async def work(body: dict[str, Any]) -> None:
        await asyncio.sleep(0.05)  # the compare-and-set
        done.append(body["actions"][0]["value"])

    app.action("approve", middleware=[ack_first])(work)
    acked = AckedWork.watch(app)

    assert (await app.async_dispatch(click("approve", "req1.v1"))).status == 200
    # The 200 left before the listener's task took a step; a stop drains at once.
    assert acked.pending == 0
    assert await acked.drain(5.0) == [] and done == ["req1.v1"]

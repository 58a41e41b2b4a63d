"""Fifty reviewers clicking at once: how fast Slack is answered and cards redrawn.

- ack: seconds from a signed click leaving the sandbox to the web app's HTTP answer,
  for Reject (a click that opens a modal) and Approve, every reviewer at once; the
  baseline is a bare Bolt app with one listener that only acks, served the same way
  (``bot.app.create_web_app`` on aiohttp, a process of its own, ``bench.bare_bolt``),
  clicked on the same cards; a second baseline is the same bare app acking before its
  listener starts, as the product does (``bot.actions.ack_first``);
- redraw: seconds from an Approve click to its card showing no decision buttons; its
  floors are when the same concurrent clicks reached the bare app's listener, and when a
  bare app doing each click's I/O as the product's web process did it (read from its
  ``/metrics``: its store round trips as ``SELECT 1``, then its Slack calls as
  ``chat.update`` of the card) updated the card, on fresh cards after the product's
  rounds, and when the same bare app doing the least I/O an Approve needs
  (``LEAST_APPROVE_IO``) did.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

from agent_bridge.models import ApprovalRequest, RunState
from bench.agent import task
from bench.cpu import CpuUse, cpu_use
from bench.io_counts import IoCounts, io_counts
from bench.profiling import sampled
from bench.stats import settle_heap, until
from bench.web_process import Served, bare_bolt_process
from bot import ids
from slack_sandbox.state import DEFAULT_USERS
from tests.harness import CHANNEL, REQUESTER, Harness, decision_buttons

REDRAW_POLL_S = 0.002
MODAL_WAIT_S = 10.0
"""How long the Reject clicks' modals are waited for, seconds (a trigger lives 3 s)."""
LEAST_APPROVE_IO = (1, 1)
"""The least I/O an Approve needs before its card can show it, as ``Clicks.bare_io``:
one Slack call (the card's ``chat.update``) and one round trip (the decision recorded,
docs/architecture.md invariant 2)."""
STARTS_AT_ONCE = 4
"""Slash commands in flight at once while runs are set up (not measured)."""
PENDING_POSTED = """SELECT request_id, args FROM approval_requests
    WHERE state = 'pending' AND message_ts IS NOT NULL"""


def reviewers(count: int) -> dict[str, str]:
    """``count`` reviewers' ``user_id -> name``, with the sandbox's own people."""
    return {**DEFAULT_USERS, **{f"U0BENCH{i:04d}": f"reviewer{i}" for i in range(count)}}


@dataclass
class Clicks:
    """Ack times (s) of concurrent clicks, per kind of click; redraw times (s) of the
    Approve clicks' cards."""

    ack: dict[str, list[float]] = field(default_factory=dict)
    redraw: list[float] = field(default_factory=list)
    bare_listener: list[float] = field(default_factory=list)
    """Seconds from each concurrent click to the bare Bolt app's listener starting."""
    modals_opened: int = 0
    """How many Reject clicks opened their modal (of ``len(ack["reject"])``)."""
    approve_io: IoCounts = field(default_factory=IoCounts)
    """The web process's Slack calls and store round trips per Approve click."""
    bare_io: tuple[int, int] = (1, 0)
    """``approve_io`` as the bare app does it: (Slack calls, at least the card's update;
    round trips)."""
    bare_redraw: list[float] = field(default_factory=list)
    """Seconds from each concurrent click to a bare app doing ``bare_io`` updating its
    card."""
    least_redraw: list[float] = field(default_factory=list)
    """The same with ``LEAST_APPROVE_IO``."""
    redraw_cpu: CpuUse = field(default_factory=CpuUse)
    """The CPU spent while the product's Approve clicks were answered and redrawn (its
    worker applying the first decisions meanwhile)."""
    least_cpu: CpuUse = field(default_factory=CpuUse)
    """The CPU spent while the bare app doing ``LEAST_APPROVE_IO`` was clicked."""


async def paused_requests(harness: Harness, count: int) -> list[ApprovalRequest]:
    """Start ``count`` runs of ``mark`` and wait until each card is posted; return their
    requests (untimed set-up)."""
    labels = [f"review-{secrets.token_hex(4)}" for _ in range(count)]
    limit = asyncio.Semaphore(STARTS_AT_ONCE)

    async def start(label: str) -> None:
        async with limit:
            status, _ = await harness.sandbox.slash_command(
                command="/agent",
                text=json.dumps(task(label)),
                user_id=REQUESTER,
                channel_id=CHANNEL,
            )
            if status != 200:
                raise RuntimeError(f"/agent was answered {status}")

    await asyncio.gather(*(start(label) for label in labels))
    wanted = set(labels)

    async def posted() -> list[str] | None:
        rows = await harness.store.db.fetch_all(PENDING_POSTED)
        found = [r["request_id"] for r in rows if json.loads(r["args"]).get("label") in wanted]
        return found if len(found) == count else None

    found = [await harness.store.get_request(i) for i in await until(posted, poll_s=0.05)]
    return [r for r in found if r is not None]


async def click_all(
    harness: Harness, requests: list[ApprovalRequest], users: list[str], decision: str
) -> list[tuple[float, float]]:
    """Every user clicks ``decision`` on their own request at once; return each click's
    ``(sent, answered)`` wall-clock times."""

    async def one(request: ApprovalRequest, user: str) -> tuple[float, float]:
        assert request.channel_id and request.message_ts
        sent = time.time()
        status, _ = await harness.sandbox.click(
            channel_id=request.channel_id,
            ts=request.message_ts,
            action_id=ids.decision_action_id(decision),  # type: ignore[arg-type]
            user_id=user,
        )
        if status != 200:
            raise RuntimeError(f"a {decision} click was answered {status}")
        return sent, time.time()

    return await asyncio.gather(*(one(r, u) for r, u in zip(requests, users, strict=True)))


async def redrawn_at(
    harness: Harness, requests: list[ApprovalRequest], *, decided: bool = True
) -> dict[str, float]:
    """Watch the sandbox's Web API calls; return when each request's card was first
    updated to show no decision buttons (with ``decided``; else updated at all)
    (request ID -> wall-clock time, s).

    Only the calls made since the watch began are read, each once (a card is applied
    before its call is recorded), so watching costs the web app next to nothing.
    """
    by_ts = {r.message_ts: r.request_id for r in requests}
    calls = harness.sandbox.calls
    seen: dict[str, float] = {}
    read = len(calls)
    while len(seen) < len(requests):
        now = time.time()
        for call in calls[read:]:
            args = call["args"]
            request_id = by_ts.get(args.get("ts"))
            if call["method"] != "chat.update" or not call["ok"] or request_id in seen:
                continue
            blocks = args.get("blocks") or []
            blocks = json.loads(blocks) if isinstance(blocks, str) else blocks
            if request_id and not (decided and decision_buttons({"blocks": blocks})):
                seen[request_id] = now
        read = len(calls)
        await asyncio.sleep(REDRAW_POLL_S)
    return seen


async def measure(
    harness: Harness, count: int, rounds: int, web: Served, profile: Path | None = None
) -> Clicks:
    """``rounds`` rounds of ``count`` reviewers clicking at once: Reject (the product and
    the bare app on the same cards) and Approve (fresh cards each round), then ``rounds``
    of the bare app doing the Approve clicks' I/O, each followed by one doing the least
    (``LEAST_APPROVE_IO``). The web process (``web``) is sampled with py-spy into
    ``profile``, if given, while the Approve clicks of the first round are answered and
    their cards redrawn."""
    users = [u for u in reviewers(count) if u.startswith("U0BENCH")]
    clicks = Clicks(ack={"bare": [], "bare_first": [], "reject": [], "approve": []})
    io_total = IoCounts()
    for _ in range(rounds):
        requests = await paused_requests(harness, count)
        settle_heap()
        async with bare_bolt_process(harness) as bare_app:
            await click_all(harness, requests[:1], users[:1], "approve")  # Bolt's first call
            bare_app.forget()
            bare = await click_all(harness, requests, users, "approve")
            reached = bare_app.reached()  # noted before each ack
        for request, (sent, answered) in zip(requests, bare, strict=True):
            clicks.ack["bare"].append(answered - sent)
            clicks.bare_listener.append(reached[str(request.message_ts)] - sent)
        async with bare_bolt_process(harness, ack_first=True):
            await click_all(harness, requests[:1], users[:1], "approve")  # Bolt's first call
            for sent, answered in await click_all(harness, requests, users, "approve"):
                clicks.ack["bare_first"].append(answered - sent)
        views_before = {u: open_view_ids(harness, u) for u in users}
        for sent, answered in await click_all(harness, requests, users, "reject"):
            clicks.ack["reject"].append(answered - sent)
        clicks.modals_opened += await modals_opened(harness, views_before)
        io_before = await io_counts(web.port)
        async with (
            sampled([web.process.pid], profile if not clicks.redraw else None, "web"),
            cpu_use(web.process.pid, count) as used,
        ):
            watcher = asyncio.create_task(redrawn_at(harness, requests))
            approved = await click_all(harness, requests, users, "approve")
            redrawn = await watcher
        clicks.redraw_cpu = clicks.redraw_cpu.plus(used)
        for request, (sent, answered) in zip(requests, approved, strict=True):
            clicks.ack["approve"].append(answered - sent)
            clicks.redraw.append(redrawn[request.request_id] - sent)
        await ended(harness, [r.run_id for r in requests])
        io_total = io_total.plus(io_before.per_item(await io_counts(web.port), 1))
    clicks.approve_io = IoCounts().per_item(io_total, count * rounds)
    clicks.bare_io = (
        max(1, round(clicks.approve_io.slack_total)),
        round(clicks.approve_io.round_trips),
    )
    for _ in range(rounds):
        clicks.bare_redraw += (await bare_redraws(harness, users, clicks.bare_io))[0]
        least, used = await bare_redraws(harness, users, LEAST_APPROVE_IO)
        clicks.least_redraw += least
        clicks.least_cpu = clicks.least_cpu.plus(used)
    return clicks


async def bare_redraws(
    harness: Harness, users: list[str], io: tuple[int, int]
) -> tuple[list[float], CpuUse]:
    """One round of the bare app doing ``io`` (Slack calls, round trips) after each of
    ``len(users)`` concurrent clicks on fresh cards: seconds from each click to its card's
    first update, and the CPU spent meanwhile. The cards are then approved in the
    product, untimed, and their runs waited on, so none is left paused."""
    requests = await paused_requests(harness, len(users))
    settle_heap()
    async with bare_bolt_process(harness, io=io) as bare_app:
        warmed = asyncio.create_task(redrawn_at(harness, requests[:1], decided=False))
        await click_all(harness, requests[:1], users[:1], "approve")  # Bolt's first call
        await warmed  # its update is not taken for a measured click's
        async with cpu_use(bare_app.process.pid, len(users)) as used:
            watcher = asyncio.create_task(redrawn_at(harness, requests, decided=False))
            clicked = await click_all(harness, requests, users, "approve")
            updated = await watcher
    await click_all(harness, requests, users, "approve")
    await ended(harness, [r.run_id for r in requests])
    times = [updated[r.request_id] - sent for r, (sent, _) in zip(requests, clicked, strict=True)]
    return times, used


async def ended(harness: Harness, run_ids: list[str]) -> None:
    """Wait until every run of ``run_ids`` is done or failed (the next measure starts with
    no run in flight).

    Raises:
        TimeoutError: If some never end (with their states and their requests').
    """

    async def unfinished() -> list[str]:
        runs = [await harness.store.get_run(run_id) for run_id in run_ids]
        return [r.run_id for r in runs if r.state not in (RunState.DONE, RunState.FAILED)]

    async def none_left() -> bool:
        return not await unfinished()

    try:
        await until(none_left, poll_s=0.05)
    except TimeoutError:
        left = await unfinished()
        states = [
            (
                run_id,
                (await harness.store.get_run(run_id)).state.value,
                [(q.state.value, q.decision) for q in await harness.store.requests_for_run(run_id)],
            )
            for run_id in left[:5]
        ]
        raise TimeoutError(f"{len(left)} runs never ended, e.g. {states}") from None


def open_view_ids(harness: Harness, user_id: str) -> set[str]:
    """The IDs of the modals ``user_id`` has open."""
    return {view["id"] for view in harness.sandbox.open_views(user_id)}


async def modals_opened(harness: Harness, views_before: dict[str, set[str]]) -> int:
    """Wait until each user has a modal open that ``views_before`` does not list (each
    Reject click did open its modal: the ack measured was a modal-opening one), or until
    ``MODAL_WAIT_S`` has passed (long after the clicks' triggers expired); return how
    many users have one."""

    def opened() -> int:
        return sum(1 for u, ids in views_before.items() if open_view_ids(harness, u) - ids)

    async def all_opened() -> bool:
        return opened() == len(views_before)

    with contextlib.suppress(TimeoutError):
        await until(all_opened, poll_s=0.01, timeout_s=MODAL_WAIT_S)
    return opened()

"""The chaos soak (``scripts/soak``; minutes, not in CI): many runs against real
workers, PostgreSQL and a Redis of its own, with a Slack sandbox as slow as real Slack,
while workers are SIGKILLed and Redis is flushed and stopped.

- ``--runs`` runs of the ledger agent (``tests/ledger_agent.py``: ``append_line`` adds a
  line per real execution), each 1-3 gated calls in one turn, a third of them with a
  second turn; ``--concurrency`` at a time.
- The sandbox answers each Web API call after ``--latency-ms`` (50-250 ms).
- Reviewers: approve, edit (a new line), reject, a double click by two users (one
  approves, one rejects, at once), and a stale click on a card already decided.
- Two worker processes (default ``LEASE_S``); every ``--kill-every-s`` one is SIGKILLed
  and a new one started; Redis is flushed every ``--flush-every-s`` and stopped once
  for ``--redis-down-s``.

Then ``tests/soak_report.py`` counts what is wrong; the exit code is 0 only if every
count is 0 and no run waited 5 s or more after a kill.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

from agent_bridge.backend import open_backend
from agent_bridge.models import ApprovalRequest, ApprovalState, Run, RunState
from agent_bridge.settings import WebConfig, WorkerConfig
from agent_bridge.store import ApprovalStore
from bot import ids
from slack_sandbox import SandboxError
from tests import services
from tests.harness import (
    CHANNEL,
    REQUESTER,
    TEST_BOT_TOKEN,
    TEST_SIGNING_SECRET,
    Harness,
)
from tests.ledger_agent import ledger_entries
from tests.soak_chaos import Chaos, OwnRedis
from tests.soak_report import Expected, count
from tests.worker_processes import LEDGER_AGENT

RUN_TIMEOUT_S = 180.0
POLL_S = 0.2


class Reviewer:
    """Decides every card of one run at random, as people would."""

    def __init__(
        self, harness: Harness, rng: random.Random, acks: list[float], users: tuple[str, str]
    ) -> None:
        self.harness = harness
        self.first, self.second = users
        self.rng = rng
        self.acks = acks
        self.refused: list[str] = []

    async def timed(self, call: Any) -> Any:
        started = time.monotonic()
        try:
            answer = await call
        finally:
            self.acks.append(time.monotonic() - started)
        status, body = answer
        if status != 200 or body:
            self.refused.append(f"answered {status} {body}")
        return answer

    async def decide(self, request: ApprovalRequest, plan: Expected) -> None:
        action = self.rng.choices(
            ["approve", "edit", "reject", "double", "stale"], [40, 15, 15, 15, 15]
        )[0]
        try:
            if action in ("approve", "stale"):
                await self.timed(self.harness.click(request, "approve", user_id=self.first))
                if action == "stale":  # a second reviewer's card is not redrawn yet
                    await self.timed(self.harness.click(request, "approve", user_id=self.second))
            elif action == "double":
                await asyncio.gather(
                    self.timed(self.harness.click(request, "approve", user_id=self.first)),
                    self.timed(self.harness.click(request, "approve", user_id=self.second)),
                )
            elif action == "reject":
                view = await self.harness.open_modal(request, "reject", user_id=self.second)
                await self.timed(
                    self.harness.sandbox.submit_view(
                        view_id=view["id"],
                        user_id=self.second,
                        values={ids.REASON_BLOCK: "not this one"},
                    )
                )
            else:
                view = await self.harness.open_modal(request, "edit", user_id=self.first)
                new_line = f"{plan.lines[request.request_id]}-edited"
                plan.edited[request.request_id] = new_line
                await self.timed(
                    self.harness.sandbox.submit_view(
                        view_id=view["id"],
                        user_id=self.first,
                        values={ids.arg_block_id("line"): new_line},
                    )
                )
        except SandboxError as exc:  # a stale card: redrawn without buttons before the click
            self.refused.append(f"{request.request_id} {action}: {exc}")


def reviewers(n: int) -> tuple[str, str]:
    """The two reviewers of run ``n``: their own, so that no run's modals mix with
    another's (a person has one modal stack)."""
    return f"U0SOAK{n:04d}A", f"U0SOAK{n:04d}B"


async def start_run(harness: Harness, task: dict[str, Any]) -> Run:
    """Send ``/agent <task>`` and return its run, found by its task (unique per run:
    ``Harness.start_run`` tells runs apart by what is new, which concurrent starts share)."""
    text = json.dumps(task)
    status, _ = await harness.sandbox.slash_command(
        command="/agent", text=text, user_id=REQUESTER, channel_id=CHANNEL
    )
    assert status == 200

    async def queued() -> str | None:
        row = await harness.store.db.fetch_one(
            "SELECT run_id FROM runs WHERE task = :task", {"task": text}
        )
        return str(row["run_id"]) if row else None

    return await harness.store.get_run(await harness.wait_for(queued))


async def one_run(
    harness: Harness, n: int, rng: random.Random, acks: list[float], stuck: set[str]
) -> Expected:
    calls = [
        {"name": "append_line", "args": {"line": f"r{n}c{i}"}} for i in range(rng.randint(1, 3))
    ]
    task: dict[str, Any] = {"tool_calls": calls}
    if rng.random() < 1 / 3:
        task["then"] = [[{"name": "append_line", "args": {"line": f"r{n}t2"}}]]
    run = await start_run(harness, task)
    plan = Expected(run_id=run.run_id)
    reviewer = Reviewer(harness, rng, acks, reviewers(n))
    decided: set[str] = set()
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        current = await harness.store.get_run(run.run_id)
        if current.state in (RunState.DONE, RunState.FAILED):
            return plan
        for request in await harness.store.requests_for_run(run.run_id):
            plan.lines.setdefault(request.request_id, str(request.args.get("line")))
            if request.request_id in decided or request.state != ApprovalState.PENDING:
                continue
            if request.message_ts is None:
                continue
            decided.add(request.request_id)
            await reviewer.decide(request, plan)
        await asyncio.sleep(POLL_S)  # a reviewer's pace
    stuck.add(run.run_id)
    print(f"  stuck {run.run_id}; refused clicks: {reviewer.refused}", flush=True)
    return plan


async def soak(args: Any) -> int:
    own_redis = OwnRedis()
    own_redis.start()
    name = services.unique_name("agent_bridge_soak")
    url = services.recreate_database(name)
    backend = await open_backend(url)
    await backend.release()
    work = Path(tempfile.mkdtemp(prefix="soak-"))
    settings = WorkerConfig(
        slack_bot_token=TEST_BOT_TOKEN,
        database_url=url,
        redis_url=own_redis.url,
        workspace_dir=work / "workspace",
        policy=Path(LEDGER_AGENT["POLICY"]),  # the harness publishes its start rules
    )
    web_settings = WebConfig(
        slack_signing_secret=TEST_SIGNING_SECRET,
        slack_bot_token=TEST_BOT_TOKEN,
        database_url=url,
        redis_url=own_redis.url,
    )
    harness = Harness(
        settings=settings,
        web_settings=web_settings,
        backend=backend,
        store=ApprovalStore(backend.db),
        channel="agent_bridge:soak",
        workers=0,
        users={
            REQUESTER: "requester",
            **{user: user.lower() for n in range(args.runs) for user in reviewers(n)},
        },
    )
    await harness.start()
    low_ms, high_ms = (float(x) for x in args.latency_ms.split(","))
    harness.sandbox.set_latency(low_ms / 1000, high_ms / 1000, seed=args.seed)
    chaos = Chaos(harness, own_redis, work / "workers.log", args)
    await chaos.start_workers()
    stop_chaos = asyncio.Event()
    chaos_task = asyncio.create_task(chaos.run(stop_chaos))
    rng = random.Random(args.seed)
    acks: list[float] = []
    stuck: set[str] = set()
    gate = asyncio.Semaphore(args.concurrency)
    started = time.monotonic()

    async def gated(n: int) -> Expected:
        async with gate:
            plan = await one_run(harness, n, random.Random(rng.random()), acks, stuck)
            if (n + 1) % 20 == 0:
                print(f"  {n + 1} runs done, {time.monotonic() - started:.0f} s", flush=True)
            return plan

    try:
        plans = await asyncio.gather(*(gated(n) for n in range(args.runs)))
        stop_chaos.set()
        await chaos_task
        await asyncio.sleep(0)  # let the last redraw tasks of the web process start
        await settle(harness)
        counts = await count(
            harness,
            list(plans),
            ledger_entries(settings.workspace_dir),
            stuck=stuck,
            killed_pids=chaos.killed_pids,
        )
    finally:
        stop_chaos.set()
        await chaos.stop()
        await harness.stop()
        await backend.close()
        own_redis.stop()
        services.drop_database(name)
    counts.slowest_ack_s = max(acks, default=0.0)
    counts.longest_wait_after_kill_s = max(chaos.waits, default=0.0)
    print(f"soak seed={args.seed} runs={args.runs} took {time.monotonic() - started:.0f} s")
    print(f"  workers killed {len(chaos.killed_pids)}, runs taken over {len(chaos.waits)}")
    for line in counts.lines():
        print("  " + line)
    for note in counts.notes[:20]:
        print("  - " + note)
    print("CLEAN" if counts.clean() else "NOT CLEAN")
    return 0 if counts.clean() else 1


async def settle(harness: Harness) -> None:
    """Wait until no card lags its state (the sweep redraws those) and no run is held."""

    async def quiet() -> bool:
        lagging = await harness.store.db.fetch_one(
            "SELECT COUNT(*) AS n FROM approval_requests WHERE drawn_revision < revision"
        )
        running = await harness.store.db.fetch_one(
            "SELECT COUNT(*) AS n FROM runs WHERE state = 'running'"
        )
        return bool(lagging and running and lagging["n"] == 0 and running["n"] == 0)

    with contextlib.suppress(AssertionError):
        await harness.wait_for(quiet, timeout_s=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=240)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--latency-ms", default="50,250")
    parser.add_argument("--kill-every-s", type=float, default=10.0)
    parser.add_argument("--flush-every-s", type=float, default=30.0)
    parser.add_argument("--redis-down-after-s", type=float, default=45.0)
    parser.add_argument("--redis-down-s", type=float, default=20.0)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    raise SystemExit(asyncio.run(soak(parser.parse_args())))


if __name__ == "__main__":
    main()

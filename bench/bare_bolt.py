"""The baseline of the acks: a bare Bolt app whose one listener acks any click.

``python -m bench.bare_bolt`` serves it on ``HOST``:``PORT`` with the product's server
stack (``bot.app.create_web_app`` on aiohttp) until SIGTERM, verifying requests with
``SLACK_SIGNING_SECRET``; its client calls ``SLACK_API_URL`` with ``SLACK_BOT_TOKEN``
(``bench.web_process.bare_bolt_process`` starts it). With ``BARE_MARKS`` set, the
listener appends ``<clicked message ts> <wall clock, s>`` to that file as it starts: when
a click reached a bare Bolt listener, the floor of the product's click path. With
``BARE_ACK=first`` each click is acked before its listener starts, by the product's own
listener middleware (``bot.actions.ack_first``); by default the listener acks, as Bolt's
examples do.

With ``BARE_IO="<slack calls> <round trips>"`` (and ``DATABASE_URL``) each click is acked
first, then its listener does an Approve's I/O with nothing of the product around it:
that many ``SELECT 1`` round trips, each on a connection of its own from the product's
pool (``agent_bridge.postgres_db.open_pool``), as the store's statements are, then a
``chat.update`` of the clicked card with the blocks it already has (its buttons stay, so
the product can be clicked on it later), then the rest of the Slack calls, as more such
updates: the floor of "Approve click → card redrawn".
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

from aiohttp import web
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from agent_bridge import event_loop, heap
from agent_bridge.postgres_db import open_pool
from bot.actions import ack_first
from bot.app import create_web_app
from bot.processes import stop_on_signals
from bot.slack_client import make_client, open_session


def listener_marks(path: Path) -> dict[str, float]:
    """``clicked message ts -> when the bare listener started (wall clock, s)`` of every
    click noted in ``path`` so far (the first, if a card was clicked twice)."""
    found: dict[str, float] = {}
    if path.exists():
        for line in path.read_text().splitlines(keepends=True):
            if not line.endswith("\n"):
                break  # still being written: the next read has it whole
            ts, at = line.split(" ")
            found.setdefault(ts, float(at))
    return found


async def main() -> None:
    session = open_session()
    secret = os.environ["SLACK_SIGNING_SECRET"]
    app = AsyncApp(
        client=make_client(
            token=os.environ["SLACK_BOT_TOKEN"],
            base_url=os.environ["SLACK_API_URL"],
            session=session,
        ),
        signing_secret=secret,
        process_before_response=False,
    )

    marks = os.environ.get("BARE_MARKS")
    io = os.environ.get("BARE_IO")
    slack_calls, round_trips = (int(n) for n in io.split()) if io else (0, 0)
    pool = await open_pool(os.environ["DATABASE_URL"]) if io else None
    first = os.environ.get("BARE_ACK") == "first" or pool is not None

    @app.action(re.compile(".*"), middleware=[ack_first] if first else None)
    async def ack_only(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        if marks:
            with open(marks, "a") as out:
                out.write(f"{body['container']['message_ts']} {time.time():.6f}\n")
        if not first:
            await ack()
        if pool is not None:
            for _ in range(round_trips):
                async with pool.connection() as conn, conn.cursor() as cur:
                    await cur.execute("SELECT 1")
                    await cur.fetchall()
            message = body["message"]
            for _ in range(slack_calls):
                await client.chat_update(
                    channel=body["container"]["channel_id"],
                    ts=message["ts"],
                    text=message.get("text", ""),
                    blocks=message.get("blocks"),
                )

    runner = web.AppRunner(create_web_app(app, signing_secret=secret), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, os.environ["HOST"], int(os.environ["PORT"])).start()
    heap.freeze_startup_objects()  # as the web process (bot.processes): the same stack
    try:
        await stop_on_signals().wait()
    finally:
        await runner.cleanup()
        await session.close()
        if pool is not None:
            await pool.close()


if __name__ == "__main__":
    event_loop.run_server(main())  # as the web process (bot.cli)

"""The ``/agent <task>`` slash command: ack at once, then queue a run.

The run is recorded in the database (the truth) and the workers are signalled; the
worker posts the run's first message in the channel, which becomes its thread.
"""

from __future__ import annotations

import logging
import secrets
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncApp

from agent_bridge.bus import Bus, Signal
from agent_bridge.errors import BridgeError
from agent_bridge.models import Run
from agent_bridge.store import ApprovalStore
from bot.actions import Ack
from bot.errors import PayloadError
from bot.mrkdwn import truncate
from bot.payloads import SlashCommand, parse

logger = logging.getLogger(__name__)

COMMAND = "/agent"
USAGE_TEXT = "Usage: `/agent <task>`, for example `/agent Archive old orders, then delete them`"
RUN_ID_BYTES = 6
ECHO_MAX_CHARS = 300
"""How much of the task the command's private reply repeats, characters."""

Respond = Callable[..., Awaitable[Any]]


def new_run(command: SlashCommand, task: str) -> Run:
    """Return a new queued run for ``task`` started by the command's user and channel."""
    return Run(
        run_id=f"run-{secrets.token_hex(RUN_ID_BYTES)}",
        thread_id=str(uuid.uuid4()),
        task=task,
        channel_id=command.channel_id,
        user_id=command.user_id,
        team_id=command.team_id,
    )


class CommandListeners:
    """The ``/agent`` listener.

    Args:
        store: Where runs are recorded.
        bus: Where "run requested" goes.
    """

    def __init__(self, *, store: ApprovalStore, bus: Bus) -> None:
        self.store = store
        self.bus = bus

    def register(self, app: AsyncApp) -> None:
        """Attach the listener to ``app``."""
        app.command(COMMAND)(self.on_agent)

    async def on_agent(self, ack: Ack, body: dict[str, Any], respond: Respond) -> None:
        """Start a run for the command's text."""
        try:
            command = parse(SlashCommand, body)
        except PayloadError as exc:
            logger.warning("%s", exc)
            await ack("That command could not be read; please try again.")
            return
        task = command.text.strip()
        if not task:
            await ack(USAGE_TEXT)
            return
        shown, _ = truncate(task, ECHO_MAX_CHARS)
        await ack(f"Starting a run for: {shown}")
        run = new_run(command, task)
        try:
            await self.store.create_run(run)
        except BridgeError as exc:
            logger.error("run=%s not started: %s", run.run_id, exc)
            reason, _ = truncate(str(exc), ECHO_MAX_CHARS)
            await respond(f":warning: The run was not started ({reason}). Please try again.")
            return
        logger.info("run=%s thread=%s queued by %s", run.run_id, run.thread_id, run.user_id)
        await self.bus.publish(Signal(kind="run_requested", run_id=run.run_id))

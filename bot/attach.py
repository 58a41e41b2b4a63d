"""``agent-bridge attach``: a thread started elsewhere becomes a run the worker drives.

An engineer's own app may start runs on its LangGraph Agent Server (``AGENT_URL``); when
one pauses on an interrupt, attaching its ``thread_id`` records a queued run with that
``thread_id``, the Slack channel its messages go to, the workspace and the requester.
A worker of the agent then claims it like any run: it joins a run still in flight on the
server, reads the thread's state and posts the pending interrupt's cards (or, if the
thread has ended, its final answer). Later pauses of the thread, from runs the app
starts, are found by the worker's sweep (``Worker._newly_paused``).
"""

from __future__ import annotations

import logging

from agent_bridge.backend import open_backend
from agent_bridge.bus import Signal
from agent_bridge.errors import AttachRefusedError
from agent_bridge.migrations import check_version
from agent_bridge.models import DEFAULT_AGENT, Run
from agent_bridge.redis_bus import RedisBus, signal_channel
from agent_bridge.remote_agent import thread_exists
from agent_bridge.settings import AttachSettings
from agent_bridge.store import ApprovalStore
from agent_bridge.wording import attached_task
from bot.starts import new_run

logger = logging.getLogger(__name__)


async def attach(
    settings: AttachSettings,
    *,
    thread_id: str,
    channel_id: str,
    user_id: str,
    team_id: str,
    task: str | None = None,
    agent: str = DEFAULT_AGENT,
) -> Run:
    """Record a queued run of ``agent`` on the existing ``thread_id`` and signal workers.

    Args:
        settings: The Agent Server, the deployment's database (and Redis, to wake a
            worker at once).
        thread_id: The thread on the Agent Server (LangGraph's ``thread_id``).
        channel_id: The Slack channel of the run's messages (its Slack thread).
        user_id: The requester: the Slack user the run is for (four eyes keeps them
            from approving its calls).
        team_id: The Slack workspace of ``channel_id``: every card is authorized against
            it (a request of no workspace is refused, invariant 10).
        task: What the run's first message says; default: the thread it follows.
        agent: The agent (``AGENT_NAME``) whose workers drive it.

    Returns:
        The recorded run.

    Raises:
        AttachRefusedError: The ``thread_id`` is a run already, or the Agent Server has
            no such thread (a worker would otherwise start a new one under that ID).
        AgentServerUnavailableError: The Agent Server is unreachable or failed.
        SchemaOutdatedError: The database needs ``agent-bridge release``.
        StoreUnavailableError: The database is unreachable.
    """
    if not await thread_exists(settings.agent_url, thread_id, api_key=settings.langgraph_api_key):
        raise AttachRefusedError(f"the Agent Server has no thread {thread_id}")
    backend = await open_backend(settings.database_url)
    try:
        await check_version(backend.db)
        store = ApprovalStore(backend.db)
        existing = await store.run_of_thread(thread_id)
        if existing is not None:
            raise AttachRefusedError(
                f"thread_id {thread_id} is run {existing.run_id} already ({existing.state})"
            )
        run = new_run(
            task=task or attached_task(thread_id),
            channel_id=channel_id,
            user_id=user_id,
            team_id=team_id,
            agent=agent,
        ).model_copy(update={"thread_id": thread_id})
        stored = await store.create_run(run)
        logger.info("run=%s thread_id=%s attached, queued for %s", run.run_id, thread_id, agent)
    finally:
        await backend.close()
    if settings.redis_url:
        bus = RedisBus(
            settings.redis_url,
            channel=settings.signal_channel or signal_channel(settings.database_url),
        )
        try:
            await bus.publish(Signal(kind="run_requested", run_id=stored.run_id))
        finally:
            await bus.close()
    return stored

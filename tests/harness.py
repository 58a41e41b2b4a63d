"""The running product for end-to-end tests: sandbox Slack, web app and worker.

Everything talks over real sockets: the sandbox posts signed form-encoded payloads to
the web app; the web app and the worker call the sandbox's Web API with slack_sdk;
the worker hears the web app through Redis and keeps state in PostgreSQL.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig

from agent_bridge.backend import Backend, open_backend
from agent_bridge.bus import Bus
from agent_bridge.models import (
    ApprovalRequest,
    ApprovalState,
    DecisionType,
    Run,
    RunState,
    StartRules,
)
from agent_bridge.policy_file import load_policy
from agent_bridge.redis_bus import RedisBus
from agent_bridge.settings import WebConfig, WorkerConfig
from agent_bridge.store import ApprovalStore
from agent_bridge.worker import Worker
from bot import ids
from bot.app import EVENTS_PATH
from bot.dedupe import RedisDeduper
from bot.directory import Directory
from bot.manifest import BOT_SCOPES
from bot.processes import WEB_DB_TIMEOUT_S, WebServer, build_worker, start_web
from bot.slack_client import make_client, open_session
from bot.slack_gateway import Slack
from slack_sandbox import Sandbox

T = TypeVar("T")

CHANNEL = "C0GENERAL"
OPEN_POLICY = Path(__file__).parent / "fixtures" / "open_policy.yml"
"""The demo agent's tools, decided by anyone in the workspace (the tests' default)."""
REQUESTER = "U0ALICE"
REVIEWER = "U0REVIEWER"
DBA = "U0DBA"
RUN_IDS = "SELECT run_id FROM runs"
REQUESTER_RUN_IDS = "SELECT run_id FROM runs WHERE user_id = :user_id"
"""One person's runs, by index (``runs_user_state``): the benchmark's 100,000 paused runs
are another person's, so starting a run does not read them all."""
WAIT_TIMEOUT_S = 45.0
"""How long a test waits for an event before failing. A wait ends at its event, so only a
failing test waits this long; it is generous because the suite runs a test process per
core and CI may share the machine (sixty cards approved at once took over 20 s so)."""
POLL_S = 0.05
TEST_SIGNING_SECRET = "test-signing-secret"
"""The tests' signing secret (not the demo's: production's ``web`` refuses that one)."""
TEST_BOT_TOKEN = "xoxb-test-token"
"""The tests' bot token (not the demo's: production's ``worker`` refuses that one)."""
TEST_APP_TOKEN = "xapp-test-token"
"""The tests' app-level token: a ``web_settings`` with it runs the app in Socket Mode."""
SOCKET_PING_S = 0.2
"""The Socket Mode client's ping interval in tests, seconds: a cut connection is noticed
within four of them (production: ``bot.socket_mode.PING_INTERVAL_S``)."""


def agent_config(workspace_dir: Path) -> WorkerConfig:
    """Worker settings for tests that only build the agent (its database and Slack are
    never used); the demo tools work in ``workspace_dir``."""
    return WorkerConfig(
        slack_bot_token=TEST_BOT_TOKEN,
        database_url="sqlite:///unused.db",
        workspace_dir=workspace_dir,
    )


class RunCountingStore(ApprovalStore):
    """The web process's store, counting the runs it is asked to start.

    The start listeners ask for their agent's start rules (``start_rules``) first thing
    after their ack, with nothing to wait for in between, and Bolt starts a listener
    before the app answers; so once the app has answered a delivery, ``runs_asked``
    counts every run the app will try to start for it. That answer is the event a test
    waits for to prove a delivery started no run.
    """

    runs_asked = 0

    async def start_rules(self, agent: str) -> StartRules | None:
        """See ``ApprovalStore.start_rules``, the first thing a start listener asks for;
        counted as soon as it is called."""
        self.runs_asked += 1
        return await super().start_rules(agent)


class Harness:
    """Starts and drives the product the way Slack and a reviewer would.

    Args:
        settings: The workers' settings (database, Redis, agent, workspace...).
        web_settings: The web app's settings (signing secret, ``CHANNEL_AGENTS``...).
        backend: Open database and checkpointer.
        store: The approval store on ``backend``.
        channel: The Redis pub/sub channel of this test.
        workers: How many in-process workers to run (0: the test runs its own).
        web_redis_url: Redis URL of the web process (default ``web_settings.redis_url``).
        worker_redis_url: Redis URL of the workers (default ``settings.redis_url``).
        users: Sandbox users (default: the sandbox's reviewer, dba and alice).
        worker_settings: Per-worker changes to ``settings`` (another agent, policy,
            ``agent_name``); when given, one worker each and ``workers`` is ignored.
        directory: Builds the web app's user-group resolver (a test moves its clock).
        model: The workers' chat model instead of ``settings.model``'s (a test's own).
        enterprise_id: The Enterprise Grid org of the sandbox's workspace, if any.
        sandbox_clock: The sandbox's Unix time (the real one when None).
    """

    def __init__(
        self,
        *,
        settings: WorkerConfig,
        web_settings: WebConfig,
        backend: Backend,
        store: ApprovalStore,
        channel: str,
        workers: int = 1,
        web_redis_url: str | None = None,
        worker_redis_url: str | None = None,
        users: dict[str, str] | None = None,
        worker_settings: list[dict[str, Any]] | None = None,
        directory: Callable[[Slack], Directory] | None = None,
        model: BaseChatModel | None = None,
        enterprise_id: str | None = None,
        sandbox_clock: Callable[[], float] | None = None,
    ) -> None:
        self.settings = settings
        self.web_settings = web_settings
        self.backend = backend
        self.store = store
        self.channel = channel
        self.sandbox = Sandbox(
            signing_secret=web_settings.slack_signing_secret,
            bot_token=web_settings.slack_bot_token,
            bot_scopes=list(BOT_SCOPES),  # the manifest's, as an admin installs it
            users=users,
            enterprise_id=enterprise_id,
            clock=sandbox_clock or time.time,
            app_token=web_settings.slack_app_token,  # set: the app is in Socket Mode
        )
        self.web_bus = RedisBus(web_redis_url or web_settings.redis_url or "", channel=channel)
        self.deduper = RedisDeduper(web_redis_url or web_settings.redis_url or "")
        self.web_backend: Backend | None = None
        self.worker_redis_url = worker_redis_url or settings.redis_url or ""
        self.server: WebServer | None = None
        self.session: aiohttp.ClientSession | None = None
        self.workers: list[Worker] = []
        self.worker_settings = worker_settings or [{} for _ in range(workers)]
        self.directory = directory
        self.model = model
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._buses: list[Bus] = [self.web_bus]

    @property
    def worker(self) -> Worker:
        """The first in-process worker."""
        return self.workers[0]

    async def start(self) -> None:
        """Start the sandbox, the web app and the workers."""
        await self.sandbox.start()
        on_sandbox = {"slack_api_url": self.sandbox.api_url}
        self.settings = self.settings.model_copy(update=on_sandbox)
        self.web_settings = self.web_settings.model_copy(update=on_sandbox)
        self.session = open_session()  # one HTTP session for the workspace, as in production
        self.client = client = make_client(
            token=self.settings.slack_bot_token,
            base_url=self.settings.slack_api_url,
            session=self.session,
        )
        # The web process has its own pool, with the web's short timeout, as in production.
        self.web_backend = await open_backend(
            self.web_settings.database_url, timeout_s=WEB_DB_TIMEOUT_S
        )
        self.web_store = RunCountingStore(self.web_backend.db)
        self.server = await start_web(
            settings=self.web_settings,
            store=self.web_store,
            bus=self.web_bus,
            client=client,
            deduper=self.deduper,
            host="127.0.0.1",
            port=0,
            directory=self.directory,
            ping_interval_s=SOCKET_PING_S,
        )
        self.sandbox.request_url = self.server.url + EVENTS_PATH
        if not self.worker_settings:  # the test runs its own workers: publish as they will
            rules = load_policy(self.settings.policy).start_rules()
            await self.store.publish_start_rules(self.settings.agent_name, rules)
        for changes in self.worker_settings:
            bus = RedisBus(self.worker_redis_url, channel=self.channel)
            self._buses.append(bus)
            worker = build_worker(
                settings=self.settings.model_copy(update=changes),
                store=self.store,
                bus=bus,
                backend=self.backend,
                client=client,
                model=self.model,
            )
            self.workers.append(worker)
            await worker.publish_start_rules()  # the web refuses runs until it has them
            self._tasks.append(asyncio.create_task(worker.run(self._stop)))

    async def stop(self) -> None:
        """Stop the workers, the web app and the sandbox."""
        self._stop.set()
        await asyncio.gather(*self._tasks)
        if self.server is not None:
            await self.server.stop()
        if self.web_backend is not None:
            await self.web_backend.close()
        await self.deduper.close()
        for bus in self._buses:
            await bus.close()
        if self.session is not None:
            await self.session.close()
        await self.sandbox.stop()

    # -- driving -------------------------------------------------------------

    async def start_run(self, task: str | dict[str, Any], *, channel_id: str = CHANNEL) -> Run:
        """Send ``/agent <task>`` (a dict is sent as JSON) in ``channel_id``; return the
        run it queued."""
        text = task if isinstance(task, str) else json.dumps(task)
        mine = {"user_id": REQUESTER}
        before = {r["run_id"] for r in await self.store.db.fetch_all(REQUESTER_RUN_IDS, mine)}
        status, _ = await self.sandbox.slash_command(
            command="/agent", text=text, user_id=REQUESTER, channel_id=channel_id
        )
        assert status == 200

        async def queued() -> str | None:  # recorded just after the ack
            rows = await self.store.db.fetch_all(REQUESTER_RUN_IDS, mine)
            new = {r["run_id"] for r in rows} - before
            return new.pop() if new else None

        return await self.store.get_run(await self.wait_for(queued))

    async def requests(self, run: Run, *, count: int) -> list[ApprovalRequest]:
        """Wait until ``count`` requests of ``run`` are posted; return them in order."""

        async def posted() -> list[ApprovalRequest] | None:
            found = [r for r in await self.store.requests_for_run(run.run_id) if r.message_ts]
            return found if len(found) >= count else None

        return await self.wait_for(posted)

    async def click(
        self, request: ApprovalRequest, decision: DecisionType, *, user_id: str = REVIEWER
    ) -> tuple[int, str]:
        """Click the request's ``decision`` button as ``user_id`` (on its card as it is
        now: one card per request, whose buttons carry the call's current version)."""
        assert request.channel_id and request.message_ts
        return await self.sandbox.click(
            channel_id=request.channel_id,
            ts=request.message_ts,
            action_id=ids.decision_action_id(decision),
            user_id=user_id,
        )

    def is_card_link(self, token: str) -> bool:
        """Whether the live token ``token`` (``slack_sandbox.live_mentions``) is the
        product's own link to a card: Slack's permalink of a message here, labelled with a
        tool's name (a run's progress line, ``bot.progress_blocks``)."""
        base = re.escape(self.sandbox.base_url)
        return re.fullmatch(rf"<{base}archives/[^<>|]+\|[A-Za-z0-9_-]+>", token) is not None

    def top_view(self, user_id: str) -> dict[str, Any]:
        """The modal ``user_id`` has open (top of their stack)."""
        views = self.sandbox.open_views(user_id)
        assert views, f"{user_id} has no modal open"
        return views[-1]

    async def open_modal(
        self, request: ApprovalRequest, decision: DecisionType, *, user_id: str = REVIEWER
    ) -> dict[str, Any]:
        """Click the request's ``decision`` button and wait for the modal the app opens
        for it (after its ack, so not yet there when the click is answered); return it."""
        before = {view["id"] for view in self.sandbox.open_views(user_id)}
        await self.click(request, decision, user_id=user_id)

        async def opened() -> dict[str, Any] | None:
            views = self.sandbox.open_views(user_id)
            return views[-1] if views and views[-1]["id"] not in before else None

        return await self.wait_for(opened)

    async def reject(self, request: ApprovalRequest, reason: str, *, user_id: str = DBA) -> None:
        """Click Reject and submit the reason."""
        view = await self.open_modal(request, "reject", user_id=user_id)
        status, body = await self.sandbox.submit_view(
            view_id=view["id"], user_id=user_id, values={ids.REASON_BLOCK: reason}
        )
        assert status == 200 and not body, body

    async def finished(self, run: Run) -> Run:
        """Wait until ``run`` is done or failed; return it."""

        async def ended() -> Run | None:
            current = await self.store.get_run(run.run_id)
            return current if current.state in (RunState.DONE, RunState.FAILED) else None

        return await self.wait_for(ended)

    async def closed_and_drawn(self, request: ApprovalRequest) -> ApprovalRequest:
        """Wait until ``request`` is closed (``cancelled``: its run failed) and its card
        shows it (``drawn_revision``); return it as stored."""

        async def closed() -> ApprovalRequest | None:
            card = await self.store.get_request(request.request_id)
            drawn = card and card.drawn_revision == card.revision
            return card if card and card.state == ApprovalState.CANCELLED and drawn else None

        return await self.wait_for(closed)

    async def released(self, run: Run) -> Run:
        """Wait until no worker holds ``run`` (it is ``running`` while one does); return it.

        Call it after an event that happened while a worker held the run, so the state
        returned is the one the worker left it in.
        """

        async def let_go() -> Run | None:
            current = await self.store.get_run(run.run_id)
            return current if current.state != RunState.RUNNING else None

        return await self.wait_for(let_go)

    async def decided(self, request: ApprovalRequest) -> ApprovalRequest:
        """Wait until ``request`` is no longer pending (a click is recorded after its
        ack); return it."""

        async def recorded() -> ApprovalRequest | None:
            current = await self.store.get_request(request.request_id)
            return current if current and current.state != ApprovalState.PENDING else None

        return await self.wait_for(recorded)

    async def reposted(self, request: ApprovalRequest) -> ApprovalRequest:
        """Wait until ``request``'s deleted card has been posted again (its message moved
        from ``request.message_ts``); return it."""

        async def moved() -> ApprovalRequest | None:
            current = await self.store.get_request(request.request_id)
            return current if current and current.message_ts != request.message_ts else None

        return await self.wait_for(moved)

    async def decided_card(self, request: ApprovalRequest) -> dict[str, Any]:
        """Wait until the request's card is redrawn without decision buttons (the app
        does it after acking the decision); return the card."""
        assert request.channel_id and request.message_ts

        async def redrawn() -> dict[str, Any] | None:
            card = self.sandbox.message(request.channel_id or "", request.message_ts or "")
            return None if decision_buttons(card) else card

        return await self.wait_for(redrawn)

    async def settled(self) -> None:
        """Return once every worker has finished a sweep and a time-keeping pass begun
        after this call, and every run they took up: whatever the database asks of a
        worker now has been done.

        This is how a test proves a worker did *not* do something: had it been due, it
        would have happened before this returns.
        """
        # A worker may be mid-sweep (begun before this call): wait for the one after it.
        targets = [(w, w.sweeps + 2, w.time_kept + 2) for w in self.workers]

        async def swept() -> bool:
            return all(w.sweeps >= s and w.time_kept >= t for w, s, t in targets)

        await self.wait_for(swept)
        for worker in self.workers:
            await worker.idle()

    async def tool_messages(self, run: Run) -> list[Any]:
        """Every ``ToolMessage`` in the run's checkpoint, oldest first (read from the
        checkpointer itself, so it works whoever ran the ``thread_id``)."""
        config: RunnableConfig = {"configurable": {"thread_id": run.thread_id}}
        checkpoint = await self.backend.checkpointer.aget_tuple(config)
        assert checkpoint is not None
        messages = checkpoint.checkpoint["channel_values"].get("messages", [])
        return [m for m in messages if m.type == "tool"]

    def slack_thread_texts(self, run: Run) -> list[str]:
        """Fallback texts of the run's Slack thread, parent first."""
        assert run.thread_ts
        return [m.get("text", "") for m in self.sandbox.thread(run.channel_id, run.thread_ts)]

    async def ephemeral(self, text: str) -> dict[str, Any] | None:
        """The first private note containing ``text``, if any (for ``wait_for``)."""
        return next((n for n in self.sandbox.ephemerals() if text in n.get("text", "")), None)

    @staticmethod
    async def wait_for(
        probe: Callable[[], Awaitable[T | None]], timeout_s: float = WAIT_TIMEOUT_S
    ) -> T:
        """Poll ``probe`` until it returns something truthy; fail after ``timeout_s`` seconds."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while True:
            value = await probe()
            if value:
                return value
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"timed out after {timeout_s} s waiting for {probe}")
            await asyncio.sleep(POLL_S)


def decision_buttons(message: dict[str, Any]) -> list[str]:
    """The decision ``action_id``s of a card's buttons, in order."""
    return [
        e["action_id"]
        for b in message.get("blocks") or []
        if b["type"] == "actions"
        for e in b["elements"]
        if e["action_id"].startswith(ids.ACTION_PREFIX)
    ]

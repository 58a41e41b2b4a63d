"""The demo: web + worker + the local Slack sandbox in one process, on embedded defaults.

SQLite, the in-process bus and the scripted model; the demo task is submitted with a
real signed ``/agent`` slash command by alice, the requester. The sandbox has the people
of the demo policy (``agent_bridge/policies/demo.yml``): a reviewer, two DBAs in the
``@dba-team`` user group (``S0DBA``) and an outsider. Interactive: open the printed
sandbox page, pick who you are and click. ``--unattended``: a scripted reviewer approves
``write_file``; on the ``execute_sql`` card in ``#approvals`` the outsider and the
requester are refused, then the two DBAs approve (one of them twice, counted once); the
process exits 0 once the final answer is posted and its checks hold (with another
``AGENT`` or ``POLICY`` the reviewer, then each DBA while a card still waits, approves
every card, and only the answer is checked). With ``AGENT_URL``
(``AGENT_URL=http://127.0.0.1:2024 ./scripts/demo``) the agent is the one deployed
there (``ASSISTANT_ID``, default ``agent``: ``langgraph dev`` of this repository's
``langgraph.json`` serves the demo agent); the worker keeps no checkpoint of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import sqlite3
import tempfile
from pathlib import Path

from agent_bridge import wording
from agent_bridge.audit import read_events
from agent_bridge.backend import open_backend
from agent_bridge.bus import InProcessBus
from agent_bridge.errors import ConfigurationError
from agent_bridge.models import ApprovalRequest, ApprovalState, DecisionType, RunState
from agent_bridge.policy_file import DEMO_POLICY_PATH
from agent_bridge.scripted_model import DEMO_TASK
from agent_bridge.settings import (
    DEMO_APP_TOKEN,
    DEMO_BOT_TOKEN,
    DEMO_SIGNING_SECRET,
    DEMO_TOOLS,
    DemoSettings,
    WebConfig,
    WorkerConfig,
)
from agent_bridge.store import ApprovalStore
from bot import ids
from bot.app import EVENTS_PATH
from bot.dedupe import MemoryDeduper
from bot.manifest import BOT_SCOPES
from bot.processes import build_worker, check_agent_server, start_web, stop_on_signals
from bot.slack_client import make_client
from slack_sandbox import Sandbox

logger = logging.getLogger(__name__)

DEMO_DIR = Path(".demo")
DEMO_PAGE_PORT = 8700
DEMO_CHANNEL = "C0GENERAL"
APPROVALS_CHANNEL = "C0APPROVAL"
DEMO_REQUESTER = "U0ALICE"
REVIEWER = "U0REVIEWER"
DBA = "U0DBA"
SECOND_DBA = "U0DBA2"
OUTSIDER = "U0OUTSIDER"
DBA_GROUP = "S0DBA"
PEOPLE = {
    DEMO_REQUESTER: "alice (requester)",
    REVIEWER: "reviewer",
    DBA: "dana (DBA)",
    SECOND_DBA: "dmitri (DBA)",
    OUTSIDER: "olga (outsider)",
}
UNATTENDED_TIMEOUT_S = 60.0
REVIEW_POLL_S = 0.2


async def click(
    sandbox: Sandbox, request: ApprovalRequest, decision: DecisionType, user_id: str
) -> None:
    """``user_id`` clicks ``decision`` on the request's card as it is now."""
    assert request.channel_id and request.message_ts
    await sandbox.click(
        channel_id=request.channel_id,
        ts=request.message_ts,
        action_id=ids.decision_action_id(decision),
        user_id=user_id,
    )


async def private_answer(sandbox: Sandbox, user_id: str, seen: int) -> str:
    """Wait for the next private answer (ephemeral) to ``user_id``; return its text."""
    while len(found := sandbox.ephemerals(user_id=user_id)) <= seen:
        await asyncio.sleep(REVIEW_POLL_S)
    return str(found[-1]["text"])


async def approvals_of(store: ApprovalStore, request_id: str, count: int) -> list[str]:
    """Wait until ``count`` people approved the request; return who."""
    while True:
        current = await store.get_request(request_id)
        if current is not None and len(current.approved_by) >= count:
            return current.approved_by
        await asyncio.sleep(REVIEW_POLL_S)


def plays_the_demo(settings: WorkerConfig) -> bool:
    """Whether the demo's own agent runs under the demo's own policy: only then are there
    DBAs to script on ``execute_sql`` and the demo's outcome to check (another
    ``POLICY``, such as ``per_call.yml``, names no approvers, so the outsider's click
    would count)."""
    policy = settings.policy
    demo_policy = policy is None or policy.resolve() == DEMO_POLICY_PATH.resolve()
    return settings.agent == DEMO_TOOLS and demo_policy


async def approve_until_decided(
    sandbox: Sandbox, store: ApprovalStore, request: ApprovalRequest
) -> list[str]:
    """Another policy's card: the reviewer approves, then each DBA while it still waits
    (its approvers or its quorum may need them); return what each click led to."""
    said = []
    for user_id in (REVIEWER, DBA, SECOND_DBA):
        seen = len(sandbox.ephemerals(user_id=user_id))
        await click(sandbox, request, "approve", user_id)
        while True:
            current = await store.get_request(request.request_id)
            if current is None or current.state != ApprovalState.PENDING:
                said.append(f"{PEOPLE[user_id]} approves {request.tool_name}")
                return said
            if user_id in current.approved_by:
                said.append(f"{PEOPLE[user_id]} approves {request.tool_name} (more needed)")
                break
            if len(answers := sandbox.ephemerals(user_id=user_id)) > seen:
                said.append(f"{PEOPLE[user_id]} clicks Approve, is told: {answers[-1]['text']}")
                break
            await asyncio.sleep(REVIEW_POLL_S)
    return said


async def review(
    sandbox: Sandbox, store: ApprovalStore, request: ApprovalRequest, *, dbas: bool
) -> list[str]:
    """The scripted people's clicks on one request; return what they saw, in order.

    Args:
        dbas: Play the demo policy's ``execute_sql`` scene (refusals, then two DBAs);
            else ``approve_until_decided``.
    """
    if not dbas:
        return await approve_until_decided(sandbox, store, request)
    if request.tool_name != "execute_sql":
        await click(sandbox, request, "approve", REVIEWER)
        return [f"{PEOPLE[REVIEWER]} approves {request.tool_name}"]
    said = []
    for user_id in (OUTSIDER, DEMO_REQUESTER):
        seen = len(sandbox.ephemerals(user_id=user_id))
        await click(sandbox, request, "approve", user_id)
        answer = await private_answer(sandbox, user_id, seen)
        said.append(f"{PEOPLE[user_id]} clicks Approve, is told: {answer}")
    await click(sandbox, request, "approve", DBA)
    await approvals_of(store, request.request_id, 1)
    seen = len(sandbox.ephemerals(user_id=DBA))
    await click(sandbox, request, "approve", DBA)  # a second click counts once
    said.append(
        f"{PEOPLE[DBA]} approves, then clicks again: {await private_answer(sandbox, DBA, seen)}"
    )
    await click(sandbox, request, "approve", SECOND_DBA)
    approved = await approvals_of(store, request.request_id, 2)
    said.append(
        f"{PEOPLE[SECOND_DBA]} approves: approved by {', '.join(PEOPLE[u] for u in approved)}"
    )
    return said


async def review_until_done(store: ApprovalStore, sandbox: Sandbox, *, dbas: bool) -> str:
    """Answer every posted request of the demo's run until it ends (``review``); return
    its answer."""
    seen: set[str] = set()
    run = None
    while run is None:
        run = await store.latest_run()  # recorded just after /agent's ack
        await asyncio.sleep(REVIEW_POLL_S)
    run_id = run.run_id
    while True:
        for request in await store.pending_requests():
            if request.run_id == run_id and request.request_id not in seen:
                seen.add(request.request_id)
                for line in await review(sandbox, store, request, dbas=dbas):
                    print(f"  {line}")
        run = await store.get_run(run_id)
        if run.state in (RunState.DONE, RunState.FAILED):
            return run.final_answer or f"(run failed: {run.error})"
        await asyncio.sleep(REVIEW_POLL_S)


async def unattended_review(settings: WorkerConfig, store: ApprovalStore, sandbox: Sandbox) -> int:
    """Review by script, print the Slack thread and the answer, check the outcome; exit code."""
    demo = plays_the_demo(settings)
    try:
        answer = await asyncio.wait_for(
            review_until_done(store, sandbox, dbas=demo), UNATTENDED_TIMEOUT_S
        )
    except TimeoutError:
        print(f"\nThe run did not finish within {UNATTENDED_TIMEOUT_S:.0f} s.")
        print_slack_thread(sandbox)
        return 1
    print("\n#general as posted in the sandbox:")
    print_slack_thread(sandbox)
    print("\n#approvals as posted in the sandbox:")
    print_slack_thread(sandbox, APPROVALS_CHANNEL)
    print(f"\nFinal answer:\n{answer}")
    if not demo:
        print(
            "\n(Your own AGENT or POLICY: the demo's checks of the archive file, the orders "
            "and the DBAs' approvals are skipped.)"
        )
        return 1 if answer.startswith("(run failed") else 0
    proofs = await check_decisions(store)
    if settings.agent_url:
        print("\n(A deployed agent: its tools ran on the Agent Server, in its WORKSPACE_DIR.)")
    else:
        proofs = check_outcome(settings.workspace_dir) + proofs
    print("\nChecked:\n" + "\n".join(f"  {'ok ' if ok else 'BAD'} {what}" for what, ok in proofs))
    return 0 if answer.startswith("Done.") and all(ok for _, ok in proofs) else 1


def check_outcome(workspace: Path) -> list[tuple[str, bool]]:
    """What the unattended demo must have done: file written, DELETE run once."""
    archive = workspace / "files" / "archive" / "old_orders.csv"
    with sqlite3.connect(workspace / "orders.db") as conn:
        orders = conn.execute("SELECT COUNT(*) FROM orders").fetchone()[0]
    return [
        (f"approved write_file wrote {archive.name}", archive.is_file()),
        (f"the DELETE approved by two DBAs ran once: orders has {orders} of 5 rows", orders == 3),
    ]


EXPECTED_TRAIL = {
    "write_file": [
        ("requested", None),
        ("posted", None),
        ("decided", REVIEWER),
        ("outcome", None),
        ("applied", None),
    ],
    "execute_sql": [
        ("requested", None),
        ("posted", None),
        ("refused", OUTSIDER),
        ("refused", DEMO_REQUESTER),
        ("approved", DBA),
        ("decided", SECOND_DBA),
        ("outcome", None),
        ("applied", None),
    ],
}
"""The audit trail the unattended demo must leave, per tool, in order (dana's second
click counts once and is no event)."""


async def check_decisions(store: ApprovalStore) -> list[tuple[str, bool]]:
    """Who decided, from the audit trail (what ``agent-bridge audit export`` writes):
    exactly the expected events for each call, and nothing else."""
    events = await read_events(store.db)
    print("\nAudit trail (agent-bridge audit export):")
    for e in events:
        who = PEOPLE.get(e.user_id or "", e.user_id or "")
        print(f"  {e.kind.value:<9} {e.tool_name or '':<11} {who} {e.decision or ''}".rstrip())
    trail = {
        tool: [(e.kind.value, e.user_id) for e in events if e.tool_name == tool]
        for tool in EXPECTED_TRAIL
    }
    return [
        (
            "the audit trail lists exactly what happened: the outsider's and the "
            "requester's clicks refused, then two different DBAs",
            trail == EXPECTED_TRAIL and len(events) == sum(map(len, EXPECTED_TRAIL.values())),
        ),
    ]


def print_slack_thread(sandbox: Sandbox, channel_id: str = DEMO_CHANNEL) -> None:
    """Print a channel as a reader of Slack would see it (fallback texts)."""
    for message in sandbox.messages(channel_id):
        indent = (
            "    " if message.get("thread_ts") and message["thread_ts"] != message["ts"] else ""
        )
        first_line = (message.get("text") or "").splitlines()[0:1]
        print(f"{indent}- {first_line[0] if first_line else ''}")


async def start_sandbox(port: int, *, socket_mode: bool = False) -> tuple[Sandbox, str]:
    """Start the sandbox on ``port`` (``socket_mode``: the app in Socket Mode, with the
    demo's public app-level token); return it and its page URL.

    Raises:
        ConfigurationError: If the port is taken (say which, and what to pass instead).
    """
    sandbox = Sandbox(
        signing_secret=DEMO_SIGNING_SECRET,
        bot_token=DEMO_BOT_TOKEN,
        bot_scopes=list(BOT_SCOPES),  # the manifest's, as an admin installs it
        app_token=DEMO_APP_TOKEN if socket_mode else None,
    )
    for user_id, name in PEOPLE.items():
        sandbox.add_user(user_id, name)
    await sandbox.set_usergroup(DBA_GROUP, "dba-team", [DBA, SECOND_DBA])
    try:
        return sandbox, await sandbox.start(port=port)
    except OSError as exc:
        raise ConfigurationError(
            f"cannot serve the sandbox page on port {port} ({exc.strerror}); "
            "pass --port with another port, or --port 0 for any free one"
        ) from exc


def first_task(agent: str, task: str | None, *, unattended: bool) -> str | None:
    """The ``/agent`` task the demo sends first: ``task``, else the demo's for the demo's
    own tools (``DEMO_TOOLS``), else none (the developer types one on the page).

    Raises:
        ConfigurationError: An unattended demo of another ``AGENT`` with no ``task``: the
            scripted model proposes the demo's tools, which that agent does not have.
    """
    if task is not None or agent == DEMO_TOOLS:
        return task or DEMO_TASK
    if unattended:
        raise ConfigurationError(wording.DEMO_OWN_AGENT_NEEDS_TASK)
    return None


async def run_demo(
    settings: DemoSettings,
    *,
    unattended: bool,
    port: int | None,
    socket_mode: bool = False,
    task: str | None = None,
) -> int:
    """Run the demo; return the process exit code.

    Args:
        settings: What the developer chose (agent, model, policy); the rest is embedded.
        unattended: Review with the scripted reviewer and exit when the run ends; its data
            lives in a temporary folder, so it never disturbs an interactive demo.
        port: Port of the sandbox page (``None``: 8700, or any free port when unattended).
        socket_mode: The web part takes the sandbox's deliveries over Socket Mode, as
            with ``SLACK_APP_TOKEN`` against a real workspace.
        task: The ``/agent`` task sent first (``first_task``).

    Raises:
        ConfigurationError: If the page's port is taken, the agent cannot be built, or
            an unattended demo of the developer's own ``AGENT`` has no ``task``.
    """
    first = first_task(settings.agent, task, unattended=unattended)
    sandbox, page_url = await start_sandbox(
        port if port is not None else (0 if unattended else DEMO_PAGE_PORT),
        socket_mode=socket_mode,
    )
    with contextlib.ExitStack() as cleanup:
        if unattended:
            data_dir = Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="demo-")))
        else:
            data_dir = DEMO_DIR
            shutil.rmtree(data_dir, ignore_errors=True)
        try:
            return await _run(
                settings.web_config(
                    api_url=sandbox.api_url, data_dir=data_dir, socket_mode=socket_mode
                ),
                settings.worker_config(api_url=sandbox.api_url, data_dir=data_dir),
                sandbox,
                page_url,
                unattended=unattended,
                task=first,
            )
        finally:
            await sandbox.stop()


async def _run(
    web_settings: WebConfig,
    worker_settings: WorkerConfig,
    sandbox: Sandbox,
    page_url: str,
    *,
    unattended: bool,
    task: str | None,
) -> int:
    backend = await open_backend(worker_settings.database_url)
    bus = InProcessBus()
    stop = asyncio.Event()
    try:
        await backend.release()
        store = ApprovalStore(backend.db)
        client = make_client(
            token=worker_settings.slack_bot_token, base_url=worker_settings.slack_api_url
        )
        server = await start_web(
            settings=web_settings,
            store=store,
            bus=bus,
            client=client,
            deduper=MemoryDeduper(),
            host="127.0.0.1",
            port=0,
        )
        sandbox.request_url = server.url + EVENTS_PATH
        worker = build_worker(
            settings=worker_settings, store=store, bus=bus, backend=backend, client=client
        )
        await check_agent_server(worker)
        worker_task = asyncio.create_task(worker.run(stop))
        print(f"Local Slack sandbox: {page_url}")
        if worker_settings.agent_url:
            print(
                f"Agent: assistant {worker_settings.assistant_id!r} on the Agent Server (AGENT_URL)"
            )
        if server.socket_mode is not None:
            print("Slack's deliveries: Socket Mode (apps.connections.open, a websocket)")
        if task is None:
            print(wording.DEMO_OWN_AGENT_HINT)
        else:
            status, _ = await sandbox.slash_command(
                command="/agent", text=task, user_id=DEMO_REQUESTER, channel_id=DEMO_CHANNEL
            )
            print(f"Submitted: /agent {task} (HTTP {status})")
        code = 0
        if unattended:
            code = await unattended_review(worker_settings, store, sandbox)
        else:
            print("Open the page, pick who you are in the left sidebar, and click. Ctrl-C stops.")
            await stop_on_signals().wait()
        stop.set()
        await worker_task
        await server.stop()
        return code
    finally:
        stop.set()
        await backend.close()

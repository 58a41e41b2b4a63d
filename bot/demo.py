"""The demo: web + worker + the local Slack sandbox in one process, on embedded defaults.

SQLite, the in-process bus and the scripted model; the demo task is submitted with a
real signed ``/agent`` slash command. Interactive: open the printed sandbox page and
click. ``--unattended``: a scripted reviewer approves ``write_file`` and rejects
``execute_sql`` with a reason (through the sandbox, as a person's clicks would arrive),
and the process exits 0 once the final answer is posted in the run's Slack thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import sqlite3
import tempfile
from pathlib import Path

from agent_bridge.backend import open_backend
from agent_bridge.bus import InProcessBus
from agent_bridge.errors import ConfigurationError
from agent_bridge.models import ApprovalRequest, RunState
from agent_bridge.scripted_model import DEMO_TASK
from agent_bridge.settings import (
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
from bot.processes import build_worker, start_web, stop_on_signals
from bot.slack_client import make_client
from slack_sandbox import Sandbox

logger = logging.getLogger(__name__)

DEMO_DIR = Path(".demo")
DEMO_PAGE_PORT = 8700
DEMO_CHANNEL = "C0GENERAL"
DEMO_REQUESTER = "U0ALICE"
REVIEWER = "U0REVIEWER"
DBA = "U0DBA"
REJECT_REASON = "Archive the rows before deleting them."
UNATTENDED_TIMEOUT_S = 60.0
REVIEW_POLL_S = 0.2


async def review(sandbox: Sandbox, request: ApprovalRequest) -> None:
    """The scripted reviewer's click for one request: approve files, reject SQL."""
    assert request.channel_id and request.message_ts
    if request.tool_name == "execute_sql":
        before = {view["id"] for view in sandbox.open_views(DBA)}
        await sandbox.click(
            channel_id=request.channel_id,
            ts=request.message_ts,
            action_id=ids.decision_action_id("reject"),
            user_id=DBA,
            value=request.request_id,
        )
        while not sandbox.open_views(DBA) or sandbox.open_views(DBA)[-1]["id"] in before:
            await asyncio.sleep(REVIEW_POLL_S / 10)  # the app opens it just after its ack
        view = sandbox.open_views(DBA)[-1]
        await sandbox.submit_view(
            view_id=view["id"], user_id=DBA, values={ids.REASON_BLOCK: REJECT_REASON}
        )
    else:
        await sandbox.click(
            channel_id=request.channel_id,
            ts=request.message_ts,
            action_id=ids.decision_action_id("approve"),
            user_id=REVIEWER,
            value=request.request_id,
        )


async def review_until_done(store: ApprovalStore, sandbox: Sandbox) -> str:
    """Answer every posted request of the demo's run until it ends; return its answer."""
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
                print(
                    f"  reviewer: {request.tool_name} -> "
                    f"{'reject' if request.tool_name == 'execute_sql' else 'approve'}"
                )
                await review(sandbox, request)
        run = await store.get_run(run_id)
        if run.state in (RunState.DONE, RunState.FAILED):
            return run.final_answer or f"(run failed: {run.error})"
        await asyncio.sleep(REVIEW_POLL_S)


async def unattended_review(settings: WorkerConfig, store: ApprovalStore, sandbox: Sandbox) -> int:
    """Review by script, print the Slack thread and the answer, check the outcome; exit code."""
    try:
        answer = await asyncio.wait_for(review_until_done(store, sandbox), UNATTENDED_TIMEOUT_S)
    except TimeoutError:
        print(f"\nThe run did not finish within {UNATTENDED_TIMEOUT_S:.0f} s.")
        print_slack_thread(sandbox)
        return 1
    print("\n#general as posted in the sandbox:")
    print_slack_thread(sandbox)
    print(f"\nFinal answer:\n{answer}")
    if settings.agent != DEMO_TOOLS:
        print("\n(Your own AGENT: the demo's checks of the archive file and orders are skipped.)")
        return 1 if answer.startswith("(run failed") else 0
    proofs = check_outcome(settings.workspace_dir)
    print("\nChecked:\n" + "\n".join(f"  {'ok ' if ok else 'BAD'} {what}" for what, ok in proofs))
    return 0 if answer.startswith("Done.") and all(ok for _, ok in proofs) else 1


def check_outcome(workspace: Path) -> list[tuple[str, bool]]:
    """What the unattended demo must have done: file written, DELETE not run."""
    archive = workspace / "files" / "archive" / "old_orders.csv"
    with sqlite3.connect(workspace / "orders.db") as conn:
        orders = conn.execute("SELECT COUNT(*) FROM orders").fetchone()[0]
    return [
        (f"approved write_file wrote {archive.name}", archive.is_file()),
        (f"rejected DELETE did not run: orders has {orders} of 5 rows", orders == 5),
    ]


def print_slack_thread(sandbox: Sandbox) -> None:
    """Print the demo channel as a reader of Slack would see it (fallback texts)."""
    for message in sandbox.messages(DEMO_CHANNEL):
        indent = (
            "    " if message.get("thread_ts") and message["thread_ts"] != message["ts"] else ""
        )
        first_line = (message.get("text") or "").splitlines()[0:1]
        print(f"{indent}- {first_line[0] if first_line else ''}")


async def start_sandbox(port: int) -> tuple[Sandbox, str]:
    """Start the sandbox on ``port``; return it and its page URL.

    Raises:
        ConfigurationError: If the port is taken (say which, and what to pass instead).
    """
    sandbox = Sandbox(signing_secret=DEMO_SIGNING_SECRET, bot_token=DEMO_BOT_TOKEN)
    try:
        return sandbox, await sandbox.start(port=port)
    except OSError as exc:
        raise ConfigurationError(
            f"cannot serve the sandbox page on port {port} ({exc.strerror}); "
            "pass --port with another port, or --port 0 for any free one"
        ) from exc


async def run_demo(settings: DemoSettings, *, unattended: bool, port: int | None) -> int:
    """Run the demo; return the process exit code.

    Args:
        settings: What the developer chose (agent, model, policy); the rest is embedded.
        unattended: Review with the scripted reviewer and exit when the run ends; its data
            lives in a temporary folder, so it never disturbs an interactive demo.
        port: Port of the sandbox page (``None``: 8700, or any free port when unattended).

    Raises:
        ConfigurationError: If the page's port is taken or the agent cannot be built.
    """
    sandbox, page_url = await start_sandbox(
        port if port is not None else (0 if unattended else DEMO_PAGE_PORT)
    )
    with contextlib.ExitStack() as cleanup:
        if unattended:
            data_dir = Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="demo-")))
        else:
            data_dir = DEMO_DIR
            shutil.rmtree(data_dir, ignore_errors=True)
        try:
            return await _run(
                settings.web_config(api_url=sandbox.api_url, data_dir=data_dir),
                settings.worker_config(api_url=sandbox.api_url, data_dir=data_dir),
                sandbox,
                page_url,
                unattended=unattended,
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
        worker_task = asyncio.create_task(worker.run(stop))
        status, _ = await sandbox.slash_command(
            command="/agent", text=DEMO_TASK, user_id=DEMO_REQUESTER, channel_id=DEMO_CHANNEL
        )
        print(f"Local Slack sandbox: {page_url}")
        print(f"Submitted: /agent {DEMO_TASK} (HTTP {status})")
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

"""``agent-bridge``: the console script behind the Procfile and the demo.

Commands: ``web``, ``worker``, ``release`` (migrations), ``demo`` (everything in one
process on embedded defaults; ``--unattended`` reviews by script and exits), ``audit
export`` (the audit trail as CSV or JSON Lines), ``attach`` (a thread started elsewhere on
the Agent Server becomes a run the worker drives), ``manifest`` (the Slack app manifest for
``--url https://HOST`` or ``--socket-mode``; reads nothing). Each reads
only its own settings (``agent_bridge.settings``); a missing or wrong variable is named on
stderr, with exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from typing import TypeVar

from agent_bridge import event_loop
from agent_bridge.errors import BridgeError
from agent_bridge.logs import add_secrets, configure_logging, scrub, settings_secrets
from agent_bridge.models import DEFAULT_AGENT
from agent_bridge.settings import (
    AttachSettings,
    DemoSettings,
    LogSettings,
    ReleaseSettings,
    WebSettings,
    WorkerSettings,
    read_settings,
)
from bot.attach import attach
from bot.audit_export import add_arguments as add_audit_arguments
from bot.audit_export import export
from bot.demo import DEMO_PAGE_PORT, run_demo
from bot.manifest import render as render_manifest
from bot.processes import run_release, run_web, run_worker
from bot.worker_threads import WorkerThreads, exit_within

logger = logging.getLogger(__name__)

STOPPED_BY_ITS_CODE_EXIT = 70
"""The worker's exit code when code it ran raised ``SystemExit`` out of its event loop
(``EX_SOFTWARE`` of BSD's sysexits.h): not a clean stop."""


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
"""``--log-level``'s choices (Python's level names; given in any case)."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Parse the command line."""
    parser = argparse.ArgumentParser(prog="agent-bridge", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("web", help="serve Slack's requests at POST /slack/events")
    sub.add_parser("worker", help="run agents and resume them with decisions")
    sub.add_parser("release", help="apply database migrations (checkpointer and store)")
    audit = sub.add_parser("audit", help="the audit trail of requests and decisions")
    audit_sub = audit.add_subparsers(dest="audit_command", required=True)
    add_audit_arguments(
        audit_sub.add_parser("export", help="write the audit trail as CSV or JSON Lines")
    )
    attach = sub.add_parser(
        "attach", help="post the cards of a thread started elsewhere on the Agent Server"
    )
    attach.add_argument("thread_id", help="the thread's ID on the Agent Server (AGENT_URL)")
    attach.add_argument("--channel", required=True, help="Slack channel ID of its messages")
    attach.add_argument("--requester", required=True, help="Slack user ID the run is for")
    attach.add_argument("--team", required=True, help="Slack workspace ID (T...) of the channel")
    attach.add_argument("--task", default=None, help="what the run's first message says")
    attach.add_argument(
        "--agent",
        default=DEFAULT_AGENT,
        help=f"the AGENT_NAME whose workers drive it ({DEFAULT_AGENT})",
    )
    manifest = sub.add_parser("manifest", help="print the Slack app manifest (YAML)")
    where = manifest.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", help="the web process's public base URL, https://HOST")
    where.add_argument("--socket-mode", action="store_true", help="Socket Mode: no request URLs")
    demo = sub.add_parser("demo", help="web + worker + local Slack sandbox in one process")
    demo.add_argument(
        "--unattended",
        action="store_true",
        help="a scripted reviewer decides; exit 0 when the run is done",
    )
    demo.add_argument(
        "--port",
        type=int,
        default=None,
        help=f"port of the sandbox page (default {DEMO_PAGE_PORT}; any free one "
        "with --unattended; 0 for any free one)",
    )
    demo.add_argument(
        "--socket-mode",
        action="store_true",
        help="the web part takes the sandbox's deliveries over Socket Mode",
    )
    demo.add_argument(
        "--task",
        default=None,
        help="the /agent task alice sends first (default: the demo's, with the demo's AGENT; "
        "none with your own, which needs one with --unattended)",
    )
    parser.add_argument(
        "--log-level",
        default=None,
        type=str.upper,
        choices=LOG_LEVELS,
        help="DEBUG, INFO, WARNING, ERROR or CRITICAL (default INFO; WARNING for the demo); "
        "LOG_FORMAT=json for one JSON object per line",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run a command; return its exit code (2 for a configuration error).

    The current directory is searched first for the modules ``AGENT`` and the policy's
    hooks name, as ``python -m`` does (and uvicorn, gunicorn, celery for their app
    references): a console script's ``sys.path`` holds its own directory instead, so
    ``AGENT=examples.tools_agent:make_tools`` would not import from the repository root.
    """
    args = parse_args(argv)
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    level = args.log_level or ("WARNING" if args.command == "demo" else "INFO")
    try:
        if args.command == "manifest":
            return print_manifest(args)
        configure_logging(level=level, log_format=read_settings(LogSettings).log_format)
        # sqlglot's parse warnings quote the whole statement: agent text, which can hold
        # secrets; the risk line on the card already says a statement was unparseable.
        logging.getLogger("sqlglot").setLevel(logging.ERROR)
        if args.command == "web":
            event_loop.run_server(run_web(_secrets_noted(read_settings(WebSettings))))
        elif args.command == "worker":
            return _worker(_secrets_noted(read_settings(WorkerSettings)))
        elif args.command == "release":
            settings = _secrets_noted(read_settings(ReleaseSettings))
            version = event_loop.run(run_release(settings))
            print(f"migrations applied; approval store at schema version {version}")
        elif args.command == "attach":
            run = event_loop.run(
                attach(
                    _secrets_noted(read_settings(AttachSettings)),
                    thread_id=args.thread_id,
                    channel_id=args.channel,
                    user_id=args.requester,
                    team_id=args.team,
                    task=args.task,
                    agent=args.agent,
                )
            )
            print(f"thread_id {run.thread_id} attached as run {run.run_id} ({run.agent})")
        elif args.command == "audit":
            count = event_loop.run(export(_secrets_noted(read_settings(ReleaseSettings)), args))
            print(f"{count} audit events exported", file=sys.stderr)
        else:
            demo = read_settings(DemoSettings)
            return event_loop.run_server(
                run_demo(
                    demo,
                    unattended=args.unattended,
                    port=args.port,
                    socket_mode=args.socket_mode,
                    task=args.task,
                )
            )
    except BridgeError as exc:
        print(scrub(f"agent-bridge {args.command}: {exc}"), file=sys.stderr)
        return 2
    return 0


def _worker(settings: WorkerSettings) -> int:
    """Run the worker until SIGINT or SIGTERM (exit code 0).

    A ``SystemExit`` raised by the code it runs (a tool of the agent's: a command-line
    program wrapped as a tool calls ``sys.exit``) is re-raised by asyncio out of the
    event loop, which stops every drive at once; the worker then logs it with its
    traceback and exits ``STOPPED_BY_ITS_CODE_EXIT``, so that its supervisor starts it
    again (with ``SystemExit(0)``'s own code it would look like a clean stop). Its runs
    are taken up again once their leases expire. (``KeyboardInterrupt`` is left as
    Python handles it: before the worker's own SIGINT handler is installed, it is how a
    Ctrl-C during the start arrives.) Either way the process ends within
    ``bot.worker_threads.THREADS_STOP_S`` of its loop's end, though a sync tool's thread
    never returns (``exit_within``).
    """
    try:
        event_loop.run(_worker_on_its_threads(settings))
    except SystemExit as exc:
        logger.critical(
            "the worker stopped: SystemExit(%r) was raised out of its event loop by the "
            "code it ran (a tool of the agent's calling sys.exit?), cutting every drive "
            "in flight; exiting %d so that it is started again",
            exc.code,
            STOPPED_BY_ITS_CODE_EXIT,
            exc_info=exc,
        )
        exit_within(STOPPED_BY_ITS_CODE_EXIT)
        return STOPPED_BY_ITS_CODE_EXIT
    exit_within(0)
    return 0


async def _worker_on_its_threads(settings: WorkerSettings) -> None:
    """``run_worker`` on an event loop whose default executor is the worker's own
    (``bot.worker_threads.WorkerThreads``)."""
    asyncio.get_running_loop().set_default_executor(WorkerThreads())
    await run_worker(settings)


def print_manifest(args: argparse.Namespace) -> int:
    """Print the manifest for ``--url`` or ``--socket-mode``; 2 for a URL Slack refuses."""
    try:
        print(render_manifest(url=args.url, socket_mode=args.socket_mode), end="")
    except ValueError as exc:
        print(f"agent-bridge manifest: {exc}", file=sys.stderr)
        return 2
    return 0


S = TypeVar("S")


def _secrets_noted(settings: S) -> S:
    """``settings``, whose secrets no log line or error message will show
    (``agent_bridge.logs.add_secrets``)."""
    add_secrets(settings_secrets(settings))
    return settings


if __name__ == "__main__":
    sys.exit(main())

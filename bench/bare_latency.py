"""The bare latency baselines, in a process of their own.

``python -m bench.bare_latency DATABASE_URL WORKSPACE COUNT [--no-drives]`` runs
``COUNT`` bare resumes and ``COUNT`` bare drives (``bench.latency``), one at a time, on
the product's event loop (``agent_bridge.event_loop``), and prints one JSON line:
``{"resume": [s, ...], "drive": [s, ...]}``. The benchmark's own process hosts the
sandbox Slack, whose loop shapes how fifty concurrent clicks arrive; the baselines run
here instead, on the loop a worker runs on, as the worker runs in a process of its own.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from agent_bridge import event_loop
from agent_bridge.backend import open_backend
from bench.latency import bare_drives, bare_resumes
from bench.stage import agent_settings


async def main(database_url: str, workspace: Path, count: int, *, drives: bool) -> None:
    settings = agent_settings(database_url, workspace)
    # the worker's pool as configured (DATABASE_PREPARED_STATEMENTS, WorkerConfig's default)
    backend = await open_backend(
        database_url, prepared_statements=settings.database_prepared_statements
    )
    try:
        resumed = await bare_resumes(settings, backend, count)
        driven = await bare_drives(settings, backend, count) if drives else []
        print(json.dumps({"resume": resumed, "drive": driven}), flush=True)
    finally:
        await backend.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("database_url")
    parser.add_argument("workspace", type=Path)
    parser.add_argument("count", type=int)
    parser.add_argument("--no-drives", action="store_true")
    args = parser.parse_args()
    event_loop.run(main(args.database_url, args.workspace, args.count, drives=not args.no_drives))

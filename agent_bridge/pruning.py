"""Deleting the checkpoints of runs that finished long ago, so the checkpoint tables
do not only grow.

A run that is ``done`` or ``failed`` is never resumed again, yet LangGraph keeps every
checkpoint, blob and write of its ``thread_id``. ``CheckpointPruner`` deletes them
``retention_days`` after the run finished, through the checkpointer's own API
(``BaseCheckpointSaver.adelete_thread``, which every LangGraph saver implements), and
marks the run (``runs.checkpoint_pruned_at``). The run's row, its approval requests and
its audit trail stay. It runs in every worker in a task of its own, in batches of
``PRUNE_BATCH`` every ``PRUNE_INTERVAL_S``, reading the partial index
``runs_checkpoints_to_prune``: never on a click's path, and its cost does not grow with
the runs already pruned. Two workers pruning the same run at once only delete twice.
Each worker prunes its own agent's runs only (``AGENT_NAME``): the retention is each
agent's setting, and another agent's workers may keep theirs longer, or forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from agent_bridge.db import Database
from agent_bridge.errors import StoreUnavailableError

logger = logging.getLogger(__name__)

DAY_S = 86_400.0
PRUNE_BATCH = 100
"""Runs whose checkpoints one batch deletes."""
PRUNE_INTERVAL_S = 3_600.0
"""Pause between two pruning passes, seconds (a pass goes on while batches are full)."""

TO_PRUNE = """SELECT run_id, thread_id FROM runs
    WHERE state IN ('done', 'failed') AND checkpoint_pruned_at IS NULL
    AND updated_at < :finished_before AND agent = :agent
    ORDER BY updated_at LIMIT :limit"""
MARK_PRUNED = "UPDATE runs SET checkpoint_pruned_at = :now WHERE run_id = :run_id"


class CheckpointPruner:
    """Deletes finished runs' checkpoints once they are older than the retention.

    Args:
        db: The approval store's database (the ``runs`` table).
        checkpointer: The LangGraph saver holding the runs' checkpoints.
        retention_days: Days a finished run's checkpoints are kept
            (``CHECKPOINT_RETENTION_DAYS``); 0 keeps them forever (``run`` returns).
        agent: The agent whose runs are pruned (``AGENT_NAME``).
        clock: Unix seconds now (tests move it).
        batch: Runs per batch.
        interval_s: Pause between passes, seconds.
    """

    def __init__(
        self,
        *,
        db: Database,
        checkpointer: BaseCheckpointSaver[Any],
        retention_days: float,
        agent: str,
        clock: Callable[[], float] = time.time,
        batch: int = PRUNE_BATCH,
        interval_s: float = PRUNE_INTERVAL_S,
    ) -> None:
        self.db = db
        self.checkpointer = checkpointer
        self.retention_days = retention_days
        self.agent = agent
        self.clock = clock
        self.batch = batch
        self.interval_s = interval_s

    async def prune(self) -> int:
        """Delete the checkpoints of one batch of runs finished more than
        ``retention_days`` ago, oldest first; return how many runs were pruned.

        A run is marked pruned only after its checkpoints are gone, so a failure
        half-way leaves it for the next pass (deleting again is harmless).

        Raises:
            StoreUnavailableError: The database failed.
            Exception: Whatever the checkpointer raised (the pass stops there).
        """
        finished_before = self.clock() - self.retention_days * DAY_S
        rows = await self.db.fetch_all(
            TO_PRUNE,
            {"finished_before": finished_before, "agent": self.agent, "limit": self.batch},
        )
        for row in rows:
            await self.checkpointer.adelete_thread(row["thread_id"])
            await self.db.execute(MARK_PRUNED, {"now": self.clock(), "run_id": row["run_id"]})
            logger.info("run=%s thread_id=%s checkpoints pruned", row["run_id"], row["thread_id"])
        return len(rows)

    async def run(self, stop: asyncio.Event) -> None:
        """Prune until ``stop`` is set: batch after batch while they are full, then a
        pause of ``interval_s``. A failure is logged and the next pass tries again."""
        if self.retention_days <= 0:
            return
        while not stop.is_set():
            try:
                full = True
                while full and not stop.is_set():
                    full = await self.prune() == self.batch
            except StoreUnavailableError as exc:
                logger.warning("checkpoint pruning paused, database unavailable: %s", exc)
            except Exception:  # a saver's own error: try again on the next pass
                logger.exception("checkpoint pruning failed; retrying in %.0f s", self.interval_s)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.interval_s)

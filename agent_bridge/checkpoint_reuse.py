"""A drive's checkpoint read, handed once to the resume that follows it.

A drive reads the ``thread_id``'s state (``aget_state``) to plan its resume, and
LangGraph's ``astream`` then reads the same latest checkpoint again before it runs
anything: on the click's path, the same query twice. Inside ``drive_scope`` (one
drive, under the run's lease, so no other process writes this ``thread_id``'s
checkpoints meanwhile), ``ReusedReads`` remembers each latest checkpoint it read and
hands a copy of it to the next read of the same ``thread_id`` and namespace, once. Any
write (``aput``, ``aput_writes``, ``adelete_thread``, ``aprune``) forgets all it
remembered, before the write is sent. Outside a drive (the web process, the
tests' own reads, a read naming a ``checkpoint_id``) every read goes to the database.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    copy_checkpoint,
)

_Key = tuple[str, str]
"""``(thread_id, checkpoint_ns)``."""

_remembered: ContextVar[dict[_Key, CheckpointTuple] | None] = ContextVar(
    "agent_bridge_checkpoint_reads", default=None
)


@contextlib.contextmanager
def drive_scope() -> Iterator[None]:
    """Within the block (one drive of one run, under its lease), a latest checkpoint
    read is handed once to the next read of it (``ReusedReads``). Tasks the block starts
    share what it remembers (they copy its context, and with it this one ``dict``)."""
    token = _remembered.set({})
    try:
        yield
    finally:
        _remembered.reset(token)


def _latest_key(config: RunnableConfig) -> _Key | None:
    """The key of a read of a thread's latest checkpoint; ``None`` for a read naming
    a ``checkpoint_id`` (an older one, never remembered)."""
    configurable = config.get("configurable", {})
    thread_id = configurable.get("thread_id")
    if thread_id is None or configurable.get("checkpoint_id"):
        return None
    return (str(thread_id), str(configurable.get("checkpoint_ns", "")))


def _forget() -> None:
    """Forget all this drive remembers (one drive drives one ``thread_id``)."""
    remembered = _remembered.get()
    if remembered:
        remembered.clear()


class ReusedReads:
    """Mixed into a LangGraph async saver (``class S(ReusedReads, AsyncPostgresSaver)``):
    inside ``drive_scope``, a latest checkpoint read is handed once more, copied
    (``copy_checkpoint``: LangGraph's loop changes the one it is given), to the next
    read of the same thread and namespace, unless anything was written meanwhile.

    Only for a saver whose writes to a thread under a lease come from the lease holder
    (docs/architecture.md, invariant 3): what it hands out is what the database holds.
    """

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """See ``BaseCheckpointSaver.aget_tuple``."""
        key = _latest_key(config)
        remembered = _remembered.get()
        if key is None or remembered is None:
            return await super().aget_tuple(config)  # type: ignore[misc, no-any-return]
        earlier = remembered.pop(key, None)
        if earlier is not None:
            return earlier  # a copy no one else holds
        found: CheckpointTuple | None = await super().aget_tuple(config)  # type: ignore[misc]
        if found is not None:
            remembered[key] = found._replace(
                checkpoint=copy_checkpoint(found.checkpoint),
                pending_writes=list(found.pending_writes or []),
            )
        return found

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """See ``BaseCheckpointSaver.aput``."""
        _forget()
        return await super().aput(config, checkpoint, metadata, new_versions)  # type: ignore[misc, no-any-return]

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """See ``BaseCheckpointSaver.aput_writes``."""
        _forget()
        await super().aput_writes(config, writes, task_id, task_path)  # type: ignore[misc]

    async def adelete_thread(self, thread_id: str) -> None:
        """See ``BaseCheckpointSaver.adelete_thread``."""
        _forget()
        await super().adelete_thread(thread_id)  # type: ignore[misc]

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """See ``BaseCheckpointSaver.aprune``."""
        _forget()
        await super().aprune(thread_ids, strategy=strategy)  # type: ignore[misc]

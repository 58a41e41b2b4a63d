"""The startup objects a process freezes (agent_bridge/heap.py): left out of every later
garbage collection, while what the process makes afterwards is still collected."""

from __future__ import annotations

import gc

from agent_bridge.heap import freeze_startup_objects


def test_objects_alive_at_the_freeze_are_left_out_of_later_collections() -> None:
    started: list[list[int]] = [[] for _ in range(1000)]  # what starting made and keeps
    try:
        frozen = freeze_startup_objects()
        assert frozen == gc.get_freeze_count() >= len(started)
        tracked = gc.get_objects()  # what a full collection walks
        assert not any(o is started or o is started[0] for o in tracked)
        made_after: list[object] = []
        made_after.append(made_after)  # a reference cycle, made once serving
        assert any(o is made_after for o in gc.get_objects())
        del made_after
        assert gc.collect() >= 1  # still found and freed
    finally:
        gc.unfreeze()

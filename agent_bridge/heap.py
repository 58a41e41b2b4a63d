"""The objects a process made while starting, kept out of every later garbage collection.

A full (generation 2) collection walks every object the collector tracks. A web process
or a worker holds a few hundred thousand of them once started (modules, the compiled
graph, pydantic models and their schemas, Bolt's listeners), and walking them measured
about 100 ms here: a click or a resume that met that pause waited for it. After
``freeze_startup_objects`` those objects sit in the permanent generation
(https://docs.python.org/3/library/gc.html#gc.freeze), so a full collection walks only
what the process made since. They are still freed when their last reference goes;
only a reference cycle among them, which starting made and later dropped, is never
collected.
"""

from __future__ import annotations

import gc


def freeze_startup_objects() -> int:
    """Collect what starting left over, then freeze everything still alive.

    Call when the process is ready to serve (after its app or worker is built); a
    later call freezes what was made since as well.

    Returns:
        How many objects are now frozen (``gc.get_freeze_count()``).
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()

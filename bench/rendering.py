"""Drawing one card for large arguments: time and size (``bot.cards.draw_card``)."""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass

from agent_bridge.models import ApprovalRequest, Run
from bot.cards import draw_card

SIZES = {"1 KB": 1_000, "100 KB": 100_000, "1 MB": 1_000_000}
"""Argument sizes drawn, in characters of one string argument."""
REPEAT = 5


@dataclass
class Drawing:
    """One card drawn: median seconds, characters of its blocks' JSON, block count."""

    seconds: float
    characters: int
    blocks: int


def draw(request: ApprovalRequest, run: Run, size: int) -> Drawing:
    """Draw ``request``'s card with one argument of ``size`` characters, ``REPEAT``
    times; return the median time and the card's size."""
    big = request.model_copy(update={"args": {"label": "x" * size}})
    timings = []
    for _ in range(REPEAT):
        started = time.perf_counter()
        text, blocks = draw_card(big, [big], run)
        timings.append(time.perf_counter() - started)
    return Drawing(statistics.median(timings), len(text) + len(json.dumps(blocks)), len(blocks))


def measure(request: ApprovalRequest, run: Run) -> dict[str, Drawing]:
    """A drawing for each of ``SIZES``."""
    return {name: draw(request, run, size) for name, size in SIZES.items()}

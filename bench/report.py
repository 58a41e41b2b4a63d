"""The benchmark's table: each figure beside its same-run baseline, as text and Markdown."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NONE = "\u2013"
"""Shown where a figure has no baseline or ratio (an en dash)."""
TIMES = "\u00d7"


@dataclass
class Row:
    """One figure: what, the product's value, the baseline and its value, the ratio,
    and issue 11's target for it."""

    figure: str
    product: str
    baseline: str
    ratio: str
    target: str


@dataclass
class Report:
    """Every row of a run, the card drawings, and where and when it ran."""

    rows: list[Row] = field(default_factory=list)
    drawings: list[tuple[str, str, str, str]] = field(default_factory=list)
    started: str = field(default_factory=lambda: time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    load_before: tuple[float, float, float] = field(default_factory=os.getloadavg)
    load_after: tuple[float, float, float] | None = None
    parameters: str = ""
    notes: list[str] = field(default_factory=list)

    def add(
        self,
        figure: str,
        product: str,
        baseline: str = NONE,
        ratio: str = NONE,
        *,
        target: str = NONE,
    ) -> None:
        """Add a row (already formatted values)."""
        self.rows.append(Row(figure, product, baseline, ratio, target))

    def machine(self) -> list[str]:
        """Lines saying where and when the run was: commit, cores, load averages."""
        load = "/".join(f"{x:.2f}" for x in self.load_before)
        after = "/".join(f"{x:.2f}" for x in self.load_after or os.getloadavg())
        return [
            f"commit {commit()}, {self.started}",
            f"{os.cpu_count()} cores ({platform.machine()}, {platform.system()}), "
            f"Python {platform.python_version()}",
            f"load average (1/5/15 min) {load} before, {after} after",
            f"parameters: {self.parameters}",
            *self.notes,
        ]

    def text(self) -> str:
        """The report as aligned plain text."""
        header = ("figure", "product", "same-run baseline", "ratio", "target")
        rows = [header, *((r.figure, r.product, r.baseline, r.ratio, r.target) for r in self.rows)]
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        lines = [*self.machine(), ""]
        for row in rows:
            lines.append(
                "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
            )
        lines += ["", "card drawn (bot.cards.draw_card): arguments, time, characters, blocks"]
        lines += ["  ".join(d) for d in self.drawings]
        return "\n".join(lines)

    def markdown(self) -> str:
        """The report as Markdown tables."""
        lines = [f"- {line}" for line in self.machine()]
        lines += ["", "| figure | product | same-run baseline | ratio | target |"]
        lines += ["|---|---|---|---|---|"]
        lines += [
            f"| {r.figure} | {r.product} | {r.baseline} | {r.ratio} | {r.target} |"
            for r in self.rows
        ]
        lines += ["", "| card arguments | draw time | characters | blocks |", "|---|---|---|---|"]
        lines += [f"| {' | '.join(d)} |" for d in self.drawings]
        return "\n".join(lines) + "\n"


def commit() -> str:
    """The checked-out commit (``+`` if the work tree has changes)."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, check=False
        ).stdout.strip()

    return git("rev-parse", "--short", "HEAD") + ("+" if git("status", "--porcelain") else "")


def ms(seconds: float) -> str:
    """``seconds`` in milliseconds, as shown."""
    return f"{seconds * 1000:.1f} ms"


def ratio(product: float, baseline: float) -> str:
    """``product / baseline`` as shown."""
    return f"{product / baseline:.2f}{TIMES}" if baseline else NONE

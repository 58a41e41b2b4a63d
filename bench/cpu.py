"""CPU time spent: by the whole machine, by this process, by another process (Linux), and
while a round of concurrent clicks is answered (``CpuUse``)."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, fields
from pathlib import Path

CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def machine_busy_s() -> float:
    """CPU time every process on this machine has spent so far, on all cores, seconds:
    the first line of ``/proc/stat`` but its idle, iowait and steal times (Linux
    ``proc(5)``; steal is time the hypervisor ran something else; guest time is already
    in user time)."""
    values = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, _steal = values
    return (user + nice + system + irq + softirq) / CLOCK_TICKS_PER_S


class CpuMeter:
    """CPU time from this meter's creation: the whole machine's (``machine_busy_s``) and
    this process's (``time.process_time``), seconds."""

    def __init__(self) -> None:
        self._machine, self._here = machine_busy_s(), time.process_time()

    def spent(self) -> tuple[float, float]:
        """(the machine's, this process's) CPU seconds since the meter was created."""
        return machine_busy_s() - self._machine, time.process_time() - self._here


def process_cpu_s(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far, seconds (Linux ``/proc``)."""
    values = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(values[11]) + int(values[12])) / CLOCK_TICKS_PER_S


@dataclass
class CpuUse:
    """CPU time spent while rounds of concurrent Approve clicks were answered and their
    cards updated, from the first click sent to the last card updated, seconds."""

    elapsed_s: float = 0.0
    machine_s: float = 0.0
    """Every process on the machine (``bench.cpu.machine_busy_s``)."""
    bench_process_s: float = 0.0
    """The benchmark's process's: the sandbox Slack, which runs there (signing and
    sending the clicks, answering ``chat.update``), the watching of its calls, and its
    garbage collections."""
    app_s: float = 0.0
    """The app's process: the product's web process, or the bare Bolt app."""
    clicks: int = 0
    rounds: int = 0

    def plus(self, other: CpuUse) -> CpuUse:
        """Both measures' times, clicks and rounds together."""
        return CpuUse(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        )

    @property
    def cores_busy(self) -> float:
        """How many cores were busy on average meanwhile."""
        return self.machine_s / self.elapsed_s if self.elapsed_s else 0.0

    def per_click(self, seconds: float) -> float:
        """``seconds`` of CPU per click."""
        return seconds / self.clicks if self.clicks else 0.0

    def soonest_half_s(self, cores: int) -> float:
        """The soonest half of a round's clicks could have their cards updated with this
        CPU per click, every core busy from the first click on (seconds). A bound no
        scheduling beats only if the clicks cost alike, all of a click's CPU is spent
        before its card is updated, and nothing else ran in the window; none of the three
        is measured, so it is an estimate."""
        return self.half_a_round * self.per_click(self.machine_s) / cores

    def soonest_half_by_app_s(self) -> float:
        """The soonest the app's process alone could have done half of a round's clicks
        at its CPU per click (seconds): one Python process runs on one core at a time.
        An estimate, as ``soonest_half_s``."""
        return self.half_a_round * self.per_click(self.app_s)

    @property
    def half_a_round(self) -> float:
        """Half the clicks of one round."""
        return self.clicks / self.rounds / 2 if self.rounds else 0.0


@contextlib.asynccontextmanager
async def cpu_use(app_pid: int, clicks: int) -> AsyncIterator[CpuUse]:
    """Measure the CPU spent while the block runs (its ``CpuUse``, filled in as the block
    ends) by ``clicks`` clicks answered by the process ``app_pid``."""
    use = CpuUse(clicks=clicks, rounds=1)
    meter, app_before, started = CpuMeter(), process_cpu_s(app_pid), time.monotonic()
    yield use
    use.elapsed_s = time.monotonic() - started
    use.machine_s, use.bench_process_s = meter.spent()
    use.app_s = process_cpu_s(app_pid) - app_before

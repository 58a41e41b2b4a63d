"""CPU time spent: by the whole machine, by this process, by another process (Linux)."""

from __future__ import annotations

import os
import time
from pathlib import Path

CLOCK_TICKS_S = os.sysconf("SC_CLK_TCK")


def machine_busy_s() -> float:
    """CPU time every process on this machine has spent so far, on all cores, seconds:
    the first line of ``/proc/stat`` but its idle and iowait times (Linux ``proc(5)``;
    guest time is already in user time)."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS_S


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
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS_S

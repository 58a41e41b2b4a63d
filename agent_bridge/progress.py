"""A run's progress, read from LangGraph's stream: what its first message says while it
works.

The driver hands each step's state (``stream_mode="values"``: the messages after the
step) to a ``ProgressHook``; ``progress_of`` reads what the agent is doing from it. The
phases, in the words of the run's first message: thinking (the model has the turn),
running tools (the model called tools, none waiting for a person), waiting for approval
(told at the end of each drive that leaves the run waiting: the Slack side links the
cards), done, failed. Tools that ran without review are counted by name. Pure: no I/O;
the Slack side draws and throttles (``bot.progress``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from langchain_core.messages import AIMessage

from agent_bridge import call_ids
from agent_bridge.models import ApprovalRequest, Run


class Phase(StrEnum):
    """What a run is doing now."""

    THINKING = "thinking"
    RUNNING_TOOLS = "running_tools"
    WAITING = "waiting"
    DONE = "done"
    FAILED = "failed"


@dataclass(frozen=True)
class WaitingCard:
    """A card the run waits on: its tool and where it is (its permalink, once known)."""

    tool_name: str
    link: str | None


@dataclass(frozen=True)
class Progress:
    """What a run's first message shows.

    Attributes:
        phase: What it is doing.
        running: Tools the model just called (``RUNNING_TOOLS``), in call order.
        unreviewed: Tool name -> times it ran without a person deciding.
        waiting: The cards it waits on (``WAITING``).
    """

    phase: Phase
    running: tuple[str, ...] = ()
    unreviewed: tuple[tuple[str, int], ...] = ()
    waiting: tuple[WaitingCard, ...] = ()


def progress_of(messages: Sequence[Any], *, reviewed: Collection[str]) -> Progress:
    """Read the run's progress from the state's ``messages`` after a step.

    Args:
        messages: The state's messages, oldest first.
        reviewed: Run's call IDs (``agent_bridge.call_ids``) that had an approval
            request (a person decided them).

    Returns:
        ``RUNNING_TOOLS`` with the tools the last ``AIMessage`` called when it is the
        last message; otherwise ``THINKING``.
    """
    counts: dict[str, int] = {}
    for result in call_ids.results(messages):
        if result.call_id not in reviewed:
            name = result.message.name or "tool"
            counts[name] = counts.get(name, 0) + 1
    unreviewed = tuple(counts.items())
    last = messages[-1] if messages else None
    if isinstance(last, AIMessage) and last.tool_calls:
        running = tuple(str(c.get("name") or "tool") for c in last.tool_calls)
        return Progress(Phase.RUNNING_TOOLS, running=running, unreviewed=unreviewed)
    return Progress(Phase.THINKING, unreviewed=unreviewed)


def reviewed_calls(requests: Iterable[ApprovalRequest]) -> set[str]:
    """The run's call IDs (``agent_bridge.call_ids``) of ``requests``' tool calls: the
    ``reviewed`` of ``progress_of``. An empty ID is one too (it names its call and its
    result alike); a request of no tool call (``tool_call_id`` ``None``) names none."""
    return {r.tool_call_id for r in requests if r.tool_call_id is not None}


class ProgressHook(Protocol):
    """Told of each step of a run's graph (``RunDriver._stream``) and of the end of a
    drive that leaves the run waiting; it shows the run's progress. It never raises:
    progress is only ever shown, never recorded. ``step`` returns without waiting on I/O:
    the graph's next step waits until it has returned."""

    async def step(self, run: Run, messages: Sequence[Any]) -> None:
        """The state's ``messages`` after one step of ``run``."""
        ...

    def abandon(self, run: Run) -> None:
        """The drive of ``run`` was cut (it raised or was cancelled): drop whatever of it
        is still to be shown. Returns at once."""
        ...

    async def waiting(self, run: Run, messages: Sequence[Any]) -> None:
        """The drive of ``run`` ends with it waiting for approval (``RunDriver``: once per
        such drive, its cards posted, before its lease is released); ``messages``: the
        checkpoint's, after the drive. Shows the cards still pending; may read the store
        and call Slack, and returns once it is shown."""
        ...


class NoProgress:
    """A ``ProgressHook`` that shows nothing (a driver without Slack, unit tests)."""

    async def step(self, run: Run, messages: Sequence[Any]) -> None:
        """Do nothing."""

    def abandon(self, run: Run) -> None:
        """Do nothing."""

    async def waiting(self, run: Run, messages: Sequence[Any]) -> None:
        """Do nothing."""

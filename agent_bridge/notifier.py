"""The notifier port: what the worker tells people, implemented by the Slack side.

``agent_bridge`` never imports ``bot``; the worker is handed an object with these
methods at the composition root (``bot.processes``). Methods raise ``NotifyError`` when the
message could not be posted. Each message is posted once: a method called again after a
crash finds the message its dead predecessor posted (``bot.outbox``).
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from agent_bridge.errors import BridgeError
from agent_bridge.models import ApprovalRequest, Run

Answered = Literal["reject", "respond"]
"""How a reviewer decided a call that did not run: its "result" is their words."""


FAILED_NOTICE = "failed"
"""The outbox key of a run's failure note (``Notifier.run_failed``): time keeping looks
for failed runs whose note was meant but not posted (``ApprovalStore.untold_failures``)."""


class NotifyError(BridgeError):
    """A message could not be posted.

    ``retryable`` (an outage, a rate limit past its retries): the worker tries again on
    its next sweep. Otherwise Slack refused the message itself (unknown channel,
    revoked token, invalid blocks): retrying cannot help, and the run is failed; fix the
    configuration named in the message and start the run again.
    """

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


class Notifier(Protocol):
    """Posts a run's progress and its approval requests."""

    async def run_started(self, run: Run) -> str:
        """Post the run's first message in its channel, once; return its ``ts`` (the
        run's ``thread_ts``)."""
        ...

    async def approval_requested(self, request: ApprovalRequest, *, run: Run) -> None:
        """Post the request's card and record in the store where it is."""
        ...

    async def approval_updated(self, request: ApprovalRequest, *, run: Run) -> None:
        """Redraw the request's card from the store's current state (e.g. reopened with a
        note); a failure is logged, not raised, since the change is already recorded."""
        ...

    async def reminder(self, request: ApprovalRequest, *, run: Run) -> None:
        """Remind, where the request's card is, that it is waiting and when it expires."""
        ...

    async def escalated(self, request: ApprovalRequest, *, run: Run) -> None:
        """Tell the request's backup approvers, where its card is, that they may decide
        it now, and redraw the card (it says it was escalated)."""
        ...

    async def ran_without_review(
        self, run: Run, *, key: str, tool_name: str, args: dict[str, Any]
    ) -> None:
        """Note in the run's Slack thread that a gated tool's call ran without review
        (its ``when`` predicate let it through); once per ``key``. ``args`` are already
        redacted (``agent_bridge.redaction``)."""
        ...

    async def tool_ran(
        self,
        run: Run,
        *,
        key: str,
        tool_name: str,
        content: str | None,
        ok: bool,
        answered: Answered | None = None,
    ) -> None:
        """Post a tool's result (or the reviewer's rejection) in the run's Slack thread;
        once per ``key``, even across crashes. ``content`` ``None``: the output is not
        shown (the policy's ``post_results``, or a failure whose details are only in the
        worker's log), only a line that the tool ran or failed. ``answered``: a reviewer
        rejected the call or answered instead of running it, and ``content`` is their
        words (the middleware's message to the model is not repeated)."""
        ...

    async def run_finished(self, run: Run, *, answer: str) -> None:
        """Post the agent's final answer in the run's Slack thread (once) and mark the
        run's first message done (every time: a crash may have come in between)."""
        ...

    async def run_failed(self, run: Run) -> None:
        """Post that the run failed in its Slack thread: one sentence naming the run, its
        error only in the worker's log."""
        ...

"""A run's messages in its Slack thread, each posted once: tool results and the answer.

A resumed graph replays the results of calls that finished before the pause, and a
worker may die after posting; each message is a *notice* claimed in the store by key
before it is posted (released again if Slack fails), so each is posted once.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage

from agent_bridge import wording
from agent_bridge.interrupts import pending_tool_calls
from agent_bridge.models import ApprovalRequest, Run
from agent_bridge.notifier import Notifier, NotifyError
from agent_bridge.policy import Policy
from agent_bridge.store import ApprovalStore

logger = logging.getLogger(__name__)

EDIT_NOTICE_END = "\n\nTool response:\n"
"""Where ``HumanInTheLoopMiddleware``'s edit notice ends and the tool's own result begins."""


@dataclass
class ToolCalls:
    """What ``_stream`` knows about the tool calls whose results it posts.

    Attributes:
        reviewed: Tool call IDs that had an approval request.
        edited: Tool call IDs a reviewer replaced (their results carry the middleware's
            edit notice, meant for the model, which the Slack thread does not repeat).
        args: Tool call ID -> arguments the model proposed.
    """

    reviewed: set[str | None]
    edited: set[str | None] = field(default_factory=set)
    args: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def of(cls, requests: Sequence[ApprovalRequest], snapshot: Any) -> ToolCalls:
        """What the run's requests and its checkpoint say about the turn's tool calls."""
        return cls(
            reviewed={r.tool_call_id for r in requests},
            edited={r.tool_call_id for r in requests if r.decision and r.decision.type == "edit"},
            args={
                c["id"]: c["args"] for c in pending_tool_calls(snapshot.values.get("messages", []))
            },
        )


def message_text(message: BaseMessage) -> str:
    """Return a message's text content (string content, or its text blocks joined)."""
    if isinstance(message.content, str):
        return message.content
    parts = [
        b if isinstance(b, str) else str(b.get("text", ""))
        for b in message.content
        if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text")
    ]
    return "\n".join(parts)


class RunMessages:
    """Posts a run's tool results and final answer through the notifier, once each.

    Args:
        store: Where notices are claimed.
        notifier: Posts to Slack.
        policy: To tell a gated tool's unreviewed call (its ``when`` rule let it through).
    """

    def __init__(self, *, store: ApprovalStore, notifier: Notifier, policy: Policy) -> None:
        self.store = store
        self.notifier = notifier
        self.policy = policy

    async def tool_result(self, run: Run, message: ToolMessage, calls: ToolCalls) -> None:
        """Post one tool result (with the unreviewed note, or as edited) unless it was
        posted before; a Slack failure is logged and the notice released. A reviewed
        call's outcome goes to the audit trail, once."""
        call_id = message.tool_call_id or str(message.id)
        name = message.name or wording.UNNAMED_TOOL
        if call_id in calls.reviewed and await self.store.claim_notice(
            run.run_id, f"outcome:{call_id}"
        ):
            await self.store.record_outcome(
                run.run_id, call_id, ok=message.status != "error", content=message_text(message)
            )
        try:
            async with self._notice(run, f"tool:{call_id}") as first:
                if first:
                    await self._post_result(run, message, name, call_id, calls)
        except NotifyError as exc:
            logger.warning("run=%s tool=%s result not posted: %s", run.run_id, name, exc)

    async def final_answer(self, run: Run, answer: str) -> None:
        """Post the final answer unless it was posted before.

        Raises:
            NotifyError: Slack failed; the notice is released, so a retry posts it.
        """
        async with self._notice(run, "final_answer") as first:
            if first:
                await self.notifier.run_finished(run, answer=answer)

    @contextlib.asynccontextmanager
    async def _notice(self, run: Run, key: str) -> AsyncIterator[bool]:
        """Claim a notice of the run; yield whether this is its first post. If posting
        fails (``NotifyError``), the claim is released so a later attempt posts it."""
        first = await self.store.claim_notice(run.run_id, key)
        try:
            yield first
        except NotifyError:
            await self.store.release_notice(run.run_id, key)
            raise

    async def _post_result(
        self, run: Run, message: ToolMessage, name: str, call_id: str, calls: ToolCalls
    ) -> None:
        if self.policy.gated(name) and call_id not in calls.reviewed:
            await self.notifier.ran_without_review(
                run, tool_name=name, args=calls.args.get(call_id, {})
            )
        content = message_text(message)
        if call_id in calls.edited:
            name = wording.as_edited_tool_name(name)
            content = content.partition(EDIT_NOTICE_END)[2] or content
        await self.notifier.tool_ran(
            run, tool_name=name, content=content, ok=message.status != "error"
        )

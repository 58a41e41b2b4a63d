"""A run's messages in its Slack thread, each posted once and in order: tool results and
the answer.

Results are posted from the graph's state after each step (``stream_mode="values"``)
and, at the start of every drive, from the checkpoint: a result saved before a crash
is posted even though no stream will carry it again. Within a turn they are posted in
the order of the model's tool calls, whatever order the tools finished in. Each
message has a key (``tool:<call ID>``, ``unreviewed:<call ID>``; the run's call ID,
``agent_bridge.call_ids``, is the model's own unless it gave it to another turn's call
too); the notifier posts it once per key (``bot.outbox``: an intention recorded first,
the message found by its metadata if a dead worker posted it), so a replay never posts
twice.

What a message shows is the policy's: a tool's output only if its ``post_results``
allows (``all``; ``reviewed``, the default: calls a person decided; ``none``), else a
one-line note that it ran; a failed tool's error text never (it can hold server paths
and data), only a sentence naming the run, the details going to the worker's log with
the run and tool call IDs; arguments with their ``redact`` keys masked, and any text
repeating a redacted value scrubbed of it (``agent_bridge.redaction``). The model gets
every result as LangGraph made it: only what Slack shows changes.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage

from agent_bridge import call_ids, wording
from agent_bridge.call_ids import Result
from agent_bridge.interrupts import pending_tool_calls
from agent_bridge.message_text import message_text
from agent_bridge.models import ApprovalRequest, Decision, Run
from agent_bridge.notifier import Notifier
from agent_bridge.policy import Policy
from agent_bridge.progress import reviewed_calls
from agent_bridge.redaction import redact, scrub, secret_values
from agent_bridge.store import ApprovalStore

logger = logging.getLogger(__name__)

EDIT_NOTICE_END = "\n\nTool response:\n"
"""Where ``HumanInTheLoopMiddleware``'s edit notice ends and the tool's own result begins."""
EDIT_NOTICE_ALONE = re.compile(r".* Executed instead: .+ with arguments .*\.", re.DOTALL)
"""The edit notice of a call whose tool returned nothing: ``"{edit_notice} Executed
instead: {name} with arguments {json}."``, with no ``EDIT_NOTICE_END`` (LangChain's
``HumanInTheLoopMiddleware._notice``)."""


@dataclass
class ToolCalls:
    """What the driver knows about the tool calls whose results it posts.

    Attributes:
        reviewed: Tool call IDs that had an approval request.
        edited: Tool call IDs a reviewer replaced (their results carry the middleware's
            edit notice, meant for the model, which the Slack thread does not repeat).
        answered: Tool call ID -> the reviewer's reject or respond decision: the call's
            "result" is their words, not the tool's output or error.
        args: Tool call ID -> arguments the model proposed.
        posted: Keys of results posted (or found posted) during this drive, and of
            those earlier drives posted (read once, if the checkpoint has results).
        secrets: Values of the run's redacted arguments seen so far, scrubbed from
            every text posted or logged.
        requests: Request ID -> the run's request as this drive last read or changed it
            (in the order read: a call's latest request last), so the store can write
            what follows from an unchanged one without reading it again.
    """

    reviewed: set[str]
    edited: set[str | None] = field(default_factory=set)
    answered: dict[str | None, Decision] = field(default_factory=dict)
    args: dict[str, dict[str, Any]] = field(default_factory=dict)
    posted: set[str] = field(default_factory=set)
    secrets: set[str] = field(default_factory=set)
    requests: dict[str, ApprovalRequest] = field(default_factory=dict)

    @classmethod
    def of(cls, requests: Sequence[ApprovalRequest], snapshot: Any) -> ToolCalls:
        """What the run's requests and its checkpoint say about the turn's tool calls."""
        secrets: set[str] = set()
        for request in requests:
            secrets |= secret_values(request.args, request.redact)
            for decision in (request.decision, request.pending_edit):
                if decision is not None and decision.edited_args:
                    secrets |= secret_values(decision.edited_args, request.redact)
        return cls(
            reviewed=reviewed_calls(requests),
            edited={r.tool_call_id for r in requests if r.decision and r.decision.type == "edit"},
            answered={
                r.tool_call_id: r.decision
                for r in requests
                if r.decision and r.decision.type in ("reject", "respond")
            },
            args={
                c["id"]: c["args"] for c in pending_tool_calls(snapshot.values.get("messages", []))
            },
            secrets=secrets,
            requests={r.request_id: r for r in requests},
        )

    def request_of(self, call_id: str) -> ApprovalRequest | None:
        """The latest request of tool call ``call_id`` known to this drive, if any."""
        return next(
            (r for r in reversed(self.requests.values()) if r.tool_call_id == call_id), None
        )


def in_call_order(
    messages: Sequence[BaseMessage], *, reviewed_apart: Callable[[str], bool] = lambda _: False
) -> list[Result]:
    """The tool results in ``messages`` that can be posted now, turn by turn in the order
    the model called the tools (a batch's tools may finish in any order), each with the
    run's call ID of its call (``agent_bridge.call_ids``: a model may give one ID to calls
    of several turns).

    Within a turn, results are given up to the first call that has none yet: a state
    read in the middle of a step (a dead worker's pending writes) may hold a later
    call's result before an earlier one's, and posting it first would break the order.
    A call for which ``reviewed_apart(tool_name)`` holds (a per-call gated tool: its
    result comes whenever its reviewer decides) does not hold the others back. A result
    whose call is not found comes last.
    """
    found = call_ids.results(messages)
    by_call = {r.call_id: r for r in found}
    ordered: list[Result] = []
    called: set[str | None] = set()
    for turn in call_ids.turns(messages):
        called |= {c["id"] for c in turn.calls}
        for call in turn.calls:
            if call["id"] in by_call:
                ordered.append(by_call[call["id"]])
            elif not reviewed_apart(call["name"]):
                break
    return ordered + [r for r in found if r.call_id not in called]


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

    async def results(self, run: Run, messages: Sequence[BaseMessage], calls: ToolCalls) -> None:
        """Post each tool result in ``messages`` (the graph's state) not posted yet, in
        call order, with the unreviewed note or as edited; a reviewed call's outcome goes
        to the audit trail, once.

        Raises:
            NotifyError: Slack failed; the intention stays, and the next drive posts the
                result (and the ones after it) from the checkpoint, in order.
        """
        self.learn(messages, calls)
        per_call = self.policy.interrupt_mode == "per_call"
        for result in in_call_order(
            messages, reviewed_apart=lambda name: per_call and bool(self.policy.gated(name))
        ):
            message, call_id = result.message, result.call_id
            key = f"tool:{call_id}"
            if key in calls.posted:
                continue
            await self._record_result(run, message, call_id, calls)
            await self._post_result(
                run, message, message.name or wording.UNNAMED_TOOL, call_id, calls
            )
            calls.posted.add(key)

    def learn(self, messages: Sequence[BaseMessage], calls: ToolCalls) -> None:
        """Note the arguments of every tool call in ``messages`` (by the run's call ID),
        and their secrets."""
        for turn in call_ids.turns(messages):
            for call in turn.calls:
                if call["id"] is not None:
                    calls.args[call["id"]] = call["args"]
                rules = self.policy.redaction(call["name"])
                calls.secrets |= secret_values(call["args"], rules)

    async def _record_result(
        self, run: Run, message: ToolMessage, call_id: str, calls: ToolCalls
    ) -> None:
        """A reviewed call's result goes on its request, once (its card is redrawn to say
        how the call went, wherever it is) and to the audit trail, scrubbed of the run's
        redacted values; its card shows none of its output if its ``post_results`` is
        ``none``."""
        if call_id not in calls.reviewed:
            return
        name = message.name or wording.UNNAMED_TOOL
        request = await self.store.record_outcome(
            run.run_id,
            call_id,
            ok=message.status != "error",
            content=self._scrubbed(
                _result_text(message, edited=call_id in calls.edited), name, calls
            ),
            shown=self.policy.posts_results(name) != "none",
            known=calls.request_of(call_id),
        )
        if request is not None:
            calls.requests[request.request_id] = request
            await self.notifier.approval_updated(request, run=run)

    async def final_answer(
        self, run: Run, answer: str, messages: Sequence[BaseMessage], calls: ToolCalls
    ) -> None:
        """Post the final answer (scrubbed of the run's redacted values, seen in
        ``messages`` and ``calls``) unless it was posted before, and mark the run's
        first message done (again, if a dead worker posted the answer but not that).

        Raises:
            NotifyError: Slack failed; a retry posts what is missing.
        """
        self.learn(messages, calls)
        await self.notifier.run_finished(run, answer=self._scrubbed(answer, None, calls))

    async def _post_result(
        self, run: Run, message: ToolMessage, name: str, call_id: str, calls: ToolCalls
    ) -> None:
        if self.policy.gated(name) and call_id not in calls.reviewed:
            args = redact(calls.args.get(call_id, {}), self.policy.redaction(name))
            await self.notifier.ran_without_review(
                run, key=f"unreviewed:{call_id}", tool_name=name, args=args
            )
        answer = calls.answered.get(call_id)
        if answer is not None and answer.type in ("reject", "respond"):
            await self.notifier.tool_ran(
                run,
                key=f"tool:{call_id}",
                tool_name=name,
                content=self._scrubbed(answer.message or "", name, calls),
                ok=answer.type == "respond",
                answered=answer.type,
            )
            return
        ok = message.status != "error"
        content: str | None = _result_text(message, edited=call_id in calls.edited)
        shown_name = wording.as_edited_tool_name(name) if call_id in calls.edited else name
        if not ok:
            logger.warning(
                "run=%s thread_id=%s tool_call=%s %s failed: %s",
                run.run_id,
                run.thread_id,
                call_id,
                name,
                self._scrubbed(content or "", name, calls),
            )
            content = None
        elif not self._shows_output(name, call_id, calls):
            content = None
        await self.notifier.tool_ran(
            run,
            key=f"tool:{call_id}",
            tool_name=shown_name,
            content=None if content is None else self._scrubbed(content, name, calls),
            ok=ok,
        )

    def _scrubbed(self, text: str, tool_name: str | None, calls: ToolCalls) -> str:
        """``text`` (a tool's output or error, a reviewer's words, the final answer)
        without the run's redacted values, nor a secret it carries itself in a shape the
        ``redact`` rules name (``DB_PASSWORD=…``, ``Authorization: Bearer …``, a URL's
        password: ``redaction.secret_values``); ``tool_name``'s rules, or the policy's for
        the final answer (``None``)."""
        rules = self.policy.redaction(tool_name) if tool_name else tuple(self.policy.redact)
        return scrub(text, calls.secrets | secret_values(text, rules))

    def _shows_output(self, name: str, call_id: str, calls: ToolCalls) -> bool:
        """Whether the tool's ``post_results`` lets this call's output be posted."""
        posts = self.policy.posts_results(name)
        return posts == "all" or (posts == "reviewed" and call_id in calls.reviewed)


def _result_text(message: ToolMessage, *, edited: bool) -> str:
    """A tool's own output: the text of its ``ToolMessage``, for an ``edited`` call
    without the edit notice ``HumanInTheLoopMiddleware`` puts before its result (alone,
    with no ``EDIT_NOTICE_END``, when the tool's output was empty: LangChain's
    ``_notice``; the output shown is then empty too)."""
    content = message_text(message)
    if not edited:
        return content
    _, end, output = content.partition(EDIT_NOTICE_END)
    if end:
        return output
    return "" if EDIT_NOTICE_ALONE.fullmatch(content) else content

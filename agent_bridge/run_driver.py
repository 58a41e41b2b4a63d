"""Driving one run's graph: start it, resume it with decisions, post what happens.

Called by the worker under the run's lease; a run is one LangGraph thread
(``thread_id``). Before resuming, the checkpoint is asked which interrupts are still
pending: a decision whose interrupt is gone was applied already and is only marked so
(docs/architecture.md, invariant 3). Results are posted once each, and an answer the
graph refuses goes back to the reviewer instead of failing the run. ``drive`` is a
sequence of named steps: make sure the run has its Slack thread (``thread_ts``), plan
the resume from the checkpoint, pick the graph's input, stream it, settle.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from typing import Any

from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.constants import START, TAG_HIDDEN
from langgraph.runtime import ExecutionInfo
from langgraph.types import Command, Interrupt, StateSnapshot, interrupt
from pydantic import ValidationError

from agent_bridge import log_context, logs, metrics, review_wording, wording
from agent_bridge.decisions import ResumePlan, plan_resume
from agent_bridge.errors import (
    AgentServerUnavailableError,
    CheckpointLostError,
    CheckpointUnavailableError,
    PausedWithoutInterruptError,
    StoreUnavailableError,
    UndecidableCallError,
    error_text,
)
from agent_bridge.graph import AgentGraph, thread_config
from agent_bridge.interrupts import Placement, approval_requests, is_batched
from agent_bridge.message_text import message_text
from agent_bridge.models import HITL_MODES, ApprovalRequest, ApprovalState, Run, RunState
from agent_bridge.notifier import Notifier, NotifyError
from agent_bridge.policy import Policy, SqlPolicy
from agent_bridge.progress import NoProgress, ProgressHook
from agent_bridge.remote_agent import REFUSED_TITLE
from agent_bridge.row_estimate import RowEstimator
from agent_bridge.run_messages import RunMessages, ToolCalls
from agent_bridge.store import ApprovalStore
from agent_bridge.when_rules import RaisedIn, WhenRules

logger = logging.getLogger(__name__)

PENDING_REDRAW_MAX = 10
"""Most pending cards of a run redrawn after each applied decision (``chat.update`` is
rate limited, Tier 3: about 50 a minute); a larger run relies on its reminders."""
_FINISHED = object()
"""``_graph_input``'s answer when the ``thread_id``'s graph has nothing left to run."""


class RunDriver:
    """Advances runs of one agent graph.

    Args:
        store: The approval store.
        graph: The compiled agent graph (with its checkpointer).
        notifier: Posts to Slack.
        policy: The approval policy the graph was built with.
        args_schemas: Tool name -> JSON schema of its arguments.
        approvals_channel: Channel for approval cards; ``None``: the run's Slack thread.
        estimator: Affected rows of SQL statements, for tools whose policy's ``sql``
            has an ``estimate_url``.
        progress: Told of each step of the stream, and of the end of a drive that leaves
            the run waiting (the run's live progress message).
        deployed: Whether ``graph`` runs on LangGraph Agent Server
            (``agent_bridge.remote_agent.RemoteAgent``): an ``AgentServerUnavailableError``
            out of its stream is then the server's, and the run is retried; out of a local
            graph's stream it was raised by a node, and fails the run (``_stream``).
        when_rules: The ``when`` predicates of ``graph``'s middleware
            (``WorkerAgent.when_rules``): asked before a resume whether the middleware
            will still take the decision (``Placement.decisions_now``).
    """

    def __init__(
        self,
        *,
        store: ApprovalStore,
        graph: AgentGraph,
        notifier: Notifier,
        policy: Policy,
        args_schemas: Mapping[str, dict[str, Any]],
        approvals_channel: str | None = None,
        estimator: RowEstimator | None = None,
        progress: ProgressHook | None = None,
        deployed: bool = False,
        when_rules: WhenRules | None = None,
    ) -> None:
        self.store = store
        self.graph = graph
        self.notifier = notifier
        self.policy = policy
        self.args_schemas = dict(args_schemas)
        self.approvals_channel = approvals_channel
        self.estimator = estimator or RowEstimator()
        self.progress = progress or NoProgress()
        self.deployed = deployed
        self.when_rules = when_rules or WhenRules()
        self.messages = RunMessages(store=store, notifier=notifier, policy=policy)
        self._sent: dict[str, frozenset[str]] = {}

    def answers_sent(self, run_id: str) -> frozenset[str]:
        """The requests whose answers the graph was given by the latest drive of
        ``run_id``, if that drive raised once it had (in the stream, or in what follows
        it); empty otherwise. Forgotten once read. For the worker to close a failed run's
        cards truthfully: those calls may have run (``RunFailures.end``)."""
        return self._sent.pop(run_id, frozenset())

    async def drive(self, run: Run) -> tuple[RunState, str | None]:
        """Advance ``run`` once; return the state to leave it in and its final answer.

        Raises:
            StoreUnavailableError: The database failed; the run's lease will expire and
                a later sweep continues from the checkpoint.
            NotifyError: Slack failed; retryable ones are retried by the next sweep.
            CheckpointLostError: The run has requests but its ``thread_id`` has no
                state (the checkpoints are gone): the run must fail, not start over.
            Exception: Whatever the graph raised, but a refused answer (the run has
                failed).
        """
        try:
            ended = await self._drive(run)
        except BaseException:
            self.progress.abandon(run)  # cut: whoever drives it next draws its progress
            raise
        self._sent.pop(run.run_id, None)
        return ended

    async def _drive(self, run: Run) -> tuple[RunState, str | None]:
        """``drive``'s steps."""
        log_context.bind_run(run)  # on every line of this drive
        run = await self._ensure_slack_thread(run)
        config = thread_config(run.thread_id)
        # Two reads of two stores, neither needing the other: on the click's path, so at
        # once. If the requests cannot be read, the state's read is cancelled: a deployed
        # agent's waits for the thread's server runs, which must not outlive this drive.
        reading = asyncio.ensure_future(self.graph.aget_state(config, subgraphs=True))
        try:
            requests = await self.store.requests_for_run(run.run_id)
        except BaseException:
            reading.cancel()
            raise
        snapshot = await reading
        if requests and _empty(snapshot):
            raise CheckpointLostError(
                f"thread_id {run.thread_id} has no state any more, though the run paused "
                f"on it ({len(requests)} requests): the agent's checkpoints are gone (an "
                "in-memory Agent Server restarted, or the thread was deleted); the "
                "decisions not given to it yet can no longer be"
            )
        calls = ToolCalls.of(requests, snapshot)
        logs.watch_run_secrets(calls.secrets)  # masked in the run's lines and errors
        await self._catch_up(run, snapshot, requests, calls)
        plan = await self._plan(run, snapshot, requests, calls)
        if snapshot.interrupts and not plan.resume:
            await self._post_approvals(run, snapshot, requests)
            return RunState.WAITING, None
        graph_input = self._graph_input(run, snapshot, plan)
        if graph_input is _FINISHED:
            return await self._finish(run, snapshot.values, calls)
        applying = [r for r in requests if r.request_id in plan.applying]
        self._sent[run.run_id] = frozenset(plan.applying)
        with metrics.resuming(applying, now=self.store.clock()):
            resumed, ended = await self._resume(run, graph_input, config, plan, calls)
        if not resumed:
            metrics.RESUME_FAILURES.labels(reason="refused").inc()
            await self.progress.waiting(run, _messages(snapshot))  # nothing saved: as before
            return RunState.WAITING, None
        if (
            ended is not None
            and {i.id for i in snapshot.interrupts} <= set(plan.resume)
            and not _calls_unanswered(ended)
        ):
            # The stream showed the graph's end, and every interrupt pending before it was
            # resumed (one that was not, LangGraph raises again as it re-runs its node; the
            # driver does not rely on it): the checkpoint holds ``ended``, nothing to read.
            # Its last message calling tools with no result is no end: a static breakpoint
            # stops a stream so too (``_settle`` reads the checkpoint's ``next``).
            await self.store.mark_applied(plan.applying, known=calls.requests)
            return await self._finish(run, ended, calls)
        return await self._settle(run, config, plan, calls)

    async def _catch_up(
        self, run: Run, snapshot: Any, requests: Sequence[ApprovalRequest], calls: ToolCalls
    ) -> None:
        """Post what a dead worker may have left unposted before going on: the results
        in the checkpoint (in call order; each once, found in Slack if it was posted),
        and the cards of requests decided before their card's ``ts`` was recorded (a
        reviewer clicked a card whose post was interrupted: it is adopted and redrawn).
        The results earlier drives posted are read at once, not asked for one by one:
        a drive's statements do not grow with the run's history."""
        messages = snapshot.values.get("messages", [])
        if any(isinstance(m, ToolMessage) for m in messages):
            calls.posted |= await self.store.posted_notices(run.run_id)
        await self.messages.results(run, messages, calls)
        for request in requests:
            if request.message_ts is None and request.state != ApprovalState.PENDING:
                await self._post_card(run, request)

    async def _ensure_slack_thread(self, run: Run) -> Run:
        """Post the run's first message (its Slack thread) if it has none yet."""
        if run.thread_ts is not None:
            return run
        thread_ts = await self.notifier.run_started(run)
        await self.store.set_run_thread_ts(run.run_id, thread_ts)
        return run.model_copy(update={"thread_ts": thread_ts})

    async def _plan(
        self, run: Run, snapshot: Any, requests: Sequence[ApprovalRequest], calls: ToolCalls
    ) -> ResumePlan:
        """Plan the resume against the checkpoint's pending interrupts: mark applied
        what the checkpoint shows was applied (from the requests as ``calls`` last has
        them); reopen decisions that no longer fit."""
        current = {(r.interrupt_id, r.index): r for r in self._requests_of(run, snapshot, requests)}
        plan = plan_resume(
            requests,
            {i.id for i in snapshot.interrupts},
            current_schemas=self.args_schemas,
            current_calls=current,
        )
        await self.store.mark_applied(plan.already_applied, known=calls.requests)
        for request_id, errors in plan.invalid.items():
            await self._reopen(
                run, request_id, wording.invalid_answer_note(errors), schema_changed=True
            )
        reissues = [
            (plan.changed, "call changed since its decision", review_wording.CALL_REISSUED_NOTE),
            (plan.unoffered, "decision not offered now", review_wording.DECISION_UNOFFERED_NOTE),
        ]
        for found, why, note in reissues:
            for request_id, now in found.items():
                logger.warning(
                    "run=%s thread_id=%s request=%s %s; reopened",
                    run.run_id,
                    run.thread_id,
                    request_id,
                    why,
                )
                reopened = await self.store.reopen(request_id, note=note, reissued=now)
                if reopened is not None:
                    await self.notifier.approval_updated(reopened, run=run)
        return plan

    def _graph_input(self, run: Run, snapshot: Any, plan: ResumePlan) -> Any:
        """What to stream: the resume, the task (a new ``thread_id``), ``None`` (continue a step
        a dead worker left), or ``_FINISHED``.

        The graph has ended only when it has neither ``next`` nodes nor pending
        ``tasks``: LangGraph leaves a task whose writes were saved out of ``next``
        (a worker killed after a turn's tools ran, before the step's checkpoint), and
        continuing with ``None`` applies those saved writes without running the tools
        again, then runs the agent's real next turn (docs/architecture.md, step 8).
        """
        if snapshot.interrupts:
            logger.info(
                "run=%s thread_id=%s resuming interrupts=%s",
                run.run_id,
                run.thread_id,
                sorted(plan.resume),
            )
            return Command(resume=plan.resume)
        if not snapshot.values:
            return {"messages": [{"role": "user", "content": run.task}]}
        if snapshot.next or snapshot.tasks:
            logger.info(
                "run=%s thread_id=%s continuing a step left by a dead worker next=%s tasks=%d",
                run.run_id,
                run.thread_id,
                list(snapshot.next),
                len(snapshot.tasks),
            )
            return None
        return _FINISHED

    async def _resume(
        self, run: Run, graph_input: Any, config: dict[str, Any], plan: ResumePlan, calls: ToolCalls
    ) -> tuple[bool, dict[str, Any] | None]:
        """Stream ``graph_input``; return ``False`` if the graph refused the answer
        (its requests are pending again, with the reason), and the graph's final
        values if the stream showed it ended (``_stream``).

        Raises:
            UndecidableCallError: A local graph's batched ``HumanInTheLoopMiddleware``
                refused the turn's decisions (``_middleware_refused_the_turn``: a deploy
                gated another call of the turn since its cards were drawn); no tool of
                the turn ran, and with one interrupt resumed no answer counts as sent.
        """
        try:
            ended = await self._stream(run, graph_input, config, calls)
        except ValidationError as exc:
            # LangGraph checked a per-call answer against the interrupt's response_schema
            # and refused it before saving anything. Any other error (a tool that raised,
            # a node's own ValidationError after the answer was taken and acted on) fails
            # the run: re-answering would replay the saved answer, not the new one, and
            # run the node's side effects again at each answer.
            if (
                not plan.applying
                or not _langgraph_refused(exc, deployed=self.deployed)
                or not await self._reopen_refused(run, config, plan, exc)
            ):
                raise
            return False, None
        except ValueError as exc:
            if self.deployed or not _middleware_refused_the_turn(exc):
                raise
            if len(plan.resume) == 1:  # one interrupt resumed: no other branch's tool ran
                self._sent.pop(run.run_id, None)  # so its cards say the calls will not run
            raise UndecidableCallError(
                "LangChain's HumanInTheLoopMiddleware refused this turn's decisions on resume "
                f"({type(exc).__name__} in after_model, in the worker's log): the agent now "
                "gates other calls of the turn than the cards asked about (a deploy changed "
                "which tools or calls are gated since), or a `when` rule raised. No tool of "
                "the turn ran; the run stops. Start the task again"
            ) from exc
        return True, ended

    async def _settle(
        self, run: Run, config: dict[str, Any], plan: ResumePlan, calls: ToolCalls
    ) -> tuple[RunState, str | None]:
        """After a stream: post any result the stream did not carry, mark the answers
        applied, then wait on the next interrupts or finish."""
        snapshot = await self.graph.aget_state(config, subgraphs=True)
        await self.messages.results(run, snapshot.values.get("messages", []), calls)
        unconsumed = set(plan.resume) & {i.id for i in snapshot.interrupts}
        if unconsumed:
            logger.error(
                "run=%s thread_id=%s resume consumed nothing for interrupts %s",
                run.run_id,
                run.thread_id,
                sorted(unconsumed),
            )
            await self._reopen_refused(run, config, plan, None)
        await self.store.mark_applied(plan.applying, known=calls.requests)
        if snapshot.interrupts:
            await self._post_approvals(
                run, snapshot, calls.requests.values(), redraw_posted=bool(plan.applying)
            )
            return RunState.WAITING, None
        if snapshot.next:
            raise PausedWithoutInterruptError(
                f"the graph stopped before {', '.join(snapshot.next)} with no interrupt to "
                "answer: a static breakpoint (interrupt_before/interrupt_after, in the "
                "deployed graph or in a sub-agent run inside a tool). Nothing a person can "
                "answer from Slack resumes it, so the run stops here. Compile the graph "
                "without breakpoints; gate tools with HumanInTheLoopMiddleware or ask with "
                "interrupt()"
            )
        return await self._finish(run, snapshot.values, calls)

    async def _stream(
        self, run: Run, graph_input: Any, config: dict[str, Any], calls: ToolCalls
    ) -> dict[str, Any] | None:
        """Run the graph, posting the tool results (and rejections) of each step once
        it is done, in call order (``stream_mode="values"``: the state after each step).
        Each step is saved before the next begins (``durability="sync"``), so a worker
        killed while posting a step's results never runs that step's tools again.

        A resumed graph replays results of calls that finished before the pause; each is
        posted once (``RunMessages``).

        Returns:
            The graph's final values if the stream showed it ended: no chunk of a local
            graph's stream (``version="v2"``: each a ``StreamPart`` with the
            ``interrupts`` raised, those of subgraphs and of parallel calls included, a
            chunk each) raised an interrupt, and its last is a dict of values, the state
            its last checkpoint holds. ``None`` otherwise (an interrupt raised, a
            deployed graph's stream, a graph some of whose tasks LangGraph does not
            stream (``_streams_every_interrupt``), values that are not a dict, no
            chunk): ``_settle`` reads the checkpoint. An interrupt pending before the
            stream and not resumed by it is the caller's to check (``_drive``).

        Raises:
            CheckpointUnavailableError: A checkpoint's statement failed for an outage.
            AgentServerUnavailableError: The Agent Server failed (a ``deployed`` graph).
            Exception: Whatever a node raised (one of the errors the worker retries on,
                ``StoreUnavailableError``, ``NotifyError`` or a local graph's
                ``AgentServerUnavailableError``, as ``RuntimeError``, so that it fails
                the run instead of running the node's tool again at each retry).
        """
        stream = self.graph.astream(
            graph_input, config, stream_mode="values", version="v2", durability="sync"
        )
        last: Any = None
        interrupted = False
        try:
            async for chunk in _nodes_failures_as_theirs(stream, deployed=self.deployed):
                last = chunk
                interrupted = interrupted or bool(
                    isinstance(chunk, dict) and chunk.get("interrupts")
                )
                values = chunk.get("data") if isinstance(chunk, dict) and "type" in chunk else chunk
                messages = values.get("messages") if isinstance(values, dict) else None
                if messages:
                    await self.messages.results(run, messages, calls)
                    await self.progress.step(run, messages)
        except TimeoutError as exc:
            bound = getattr(self.graph, "step_timeout", None)
            if bound is None or not _raised_by_langgraphs_runner(exc):
                raise
            raise RuntimeError(
                f"a step of the graph ran longer than its step_timeout ({bound:g} s, as "
                "STEP_TIMEOUT_S or the graph set it) and was cancelled; a sync tool of it "
                "cannot be, and may still be running"
            ) from exc
        if self.deployed or interrupted or not _streams_every_interrupt(self.graph):
            return None
        return _ended_values(last)

    async def _reopen_refused(
        self, run: Run, config: dict[str, Any], plan: ResumePlan, exc: Exception | None
    ) -> bool:
        """After a resume the graph refused (raised ``exc``, or consumed nothing): put the
        requests of interrupts still pending back to pending, with the reason, so the
        reviewer can answer again. Returns whether any was reopened."""
        snapshot = await self.graph.aget_state(config)
        pending = {i.id for i in snapshot.interrupts}
        refused = [
            r.request_id
            for r in await self.store.requests_for_run(run.run_id)
            if r.request_id in plan.applying and r.interrupt_id in pending
        ]
        # The card shows a sentence; the log has the details, without the refused input
        # (a ValidationError's text repeats the answer, redacted arguments and all).
        reason = wording.CONSUMED_NOTHING_REASON
        detail = reason
        if exc is not None:
            reason = wording.refused_in_log_reason(type(exc).__name__, run.run_id)
            detail = (
                str(exc.errors(include_url=False, include_input=False))
                if isinstance(exc, ValidationError)
                else type(exc).__name__
            )
        for request_id in refused:
            logger.error(
                "run=%s thread_id=%s request=%s answer refused on resume: %s",
                run.run_id,
                run.thread_id,
                request_id,
                detail,
            )
            await self._reopen(run, request_id, wording.refused_answer_note(reason))
        plan.applying = [r for r in plan.applying if r not in refused]
        return bool(refused)

    async def _reopen(
        self, run: Run, request_id: str, note: str, *, schema_changed: bool = False
    ) -> None:
        """Reopen one request with ``note`` and redraw its card."""
        current = await self.store.get_request(request_id)
        schema = None
        if current is not None and current.mode in HITL_MODES and schema_changed:
            schema = self.args_schemas.get(current.tool_name)  # a tool call's, not another's
        request = await self.store.reopen(request_id, note=note, args_schema=schema)
        if request is not None:
            await self.notifier.approval_updated(request, run=run)

    async def _post_approvals(
        self,
        run: Run,
        snapshot: Any,
        drawn: Collection[ApprovalRequest],
        *,
        redraw_posted: bool = False,
    ) -> None:
        """Store the requests of the pending interrupts (a gated call's, or any other
        interrupt's, those of sub-graphs and parallel branches included); post unposted
        ones. ``drawn``: the run's requests as the drive read them at its start.

        With ``redraw_posted`` (a decision was just applied), the run's other pending cards,
        up to ``PENDING_REDRAW_MAX`` of them, are redrawn too: a per-call card someone
        deleted is noticed there and posted again, as a batch's siblings are after a click.
        Then the run's first message shows the cards still pending (``ProgressHook.waiting``):
        the drive's last drawing of it, before the lease is released.
        """
        requests = await self._with_rows(run, self._requests_of(run, snapshot, drawn))
        stored = await self.store.add_requests(requests)
        posted = [
            r for r in stored if r.message_ts is not None and r.state == ApprovalState.PENDING
        ]
        for request in stored:
            if request.message_ts is None and request.state != ApprovalState.CANCELLED:
                await self._post_card(run, request)
        if redraw_posted and len(posted) <= PENDING_REDRAW_MAX:
            for request in posted:
                await self.notifier.approval_updated(request, run=run)
        await self.progress.waiting(run, _messages(snapshot))

    def _placement(self, run: Run, drawn: Collection[ApprovalRequest] = ()) -> Placement:
        return Placement(
            run=run,
            policy=self.policy,
            args_schemas=self.args_schemas,
            approvals_channel=self.approvals_channel,
            gating_here=not self.deployed,
            drawn=frozenset(r.interrupt_id for r in drawn),
            when_rules=self.when_rules,
        )

    def _requests_of(
        self, run: Run, snapshot: Any, drawn: Collection[ApprovalRequest]
    ) -> list[ApprovalRequest]:
        """The approval requests of the checkpoint's pending interrupts, as they are now;
        each read with the messages of the graph that raised it (a sub-agent's own, for
        its tool call IDs and the model's reason) and its values (for its ``when``
        rules). ``drawn``: the run's stored requests (their interrupts were raised before
        this drive, perhaps before a deploy: ``Placement.decisions_now``)."""
        placement = self._placement(run, drawn)
        return [
            request
            for interrupt in snapshot.interrupts
            for request in approval_requests(
                [interrupt],
                messages=turn_messages(snapshot, interrupt),
                placement=placement,
                raised=raised_in(snapshot, interrupt.id, thread_id=run.thread_id),
            )
        ]

    async def _with_rows(
        self, run: Run, requests: Sequence[ApprovalRequest]
    ) -> list[ApprovalRequest]:
        """Add the affected rows to the writes of SQL tools with an ``estimate_url``,
        for requests not stored yet (a stored request keeps the estimate it was posted
        with: the stored row wins, and no drive estimates again)."""
        estimating = [
            r
            for r in requests
            if r.risk is not None and r.risk.level != "read_only" and self._estimate_policy(r)
        ]
        if not estimating:
            return list(requests)
        stored = {(r.interrupt_id, r.index) for r in await self.store.requests_for_run(run.run_id)}
        placement = self._placement(run)
        done: dict[str, ApprovalRequest] = {}
        for request in estimating:
            sql = self._estimate_policy(request)
            if (request.interrupt_id, request.index) in stored or sql is None:
                continue
            rows = await self.estimator.estimate(
                request.args.get(sql.argument),
                sql,
                log_context=f"run={run.run_id} thread_id={run.thread_id} "
                f"interrupt={request.interrupt_id} index={request.index}",
            )
            done[request.request_id] = placement.with_rows(request, rows)
        return [done.get(r.request_id, r) for r in requests]

    def _estimate_policy(self, request: ApprovalRequest) -> SqlPolicy | None:
        tool_policy = self.policy.gated(request.tool_name)
        sql = tool_policy.sql if tool_policy else None
        return sql if sql is not None and sql.estimate_url is not None else None

    @log_context.request_ids
    async def _post_card(self, run: Run, request: ApprovalRequest) -> None:
        """Post one request's card; a retryable failure is left to the next sweep.

        Raises:
            NotifyError: Slack refused the card for good (e.g. an unknown
                ``APPROVALS_CHANNEL``): the run fails, saying why.
        """
        try:
            await self.notifier.approval_requested(request, run=run)
        except NotifyError as exc:
            if not exc.retryable:
                raise
            logger.warning(
                "run=%s interrupt=%s request=%s not posted, will retry: %s",
                run.run_id,
                request.interrupt_id,
                request.request_id,
                exc,
            )
            return
        logger.info(
            "run=%s interrupt=%s index=%s request=%s posted",
            run.run_id,
            request.interrupt_id,
            request.index,
            request.request_id,
        )

    async def _finish(
        self, run: Run, values: dict[str, Any], calls: ToolCalls
    ) -> tuple[RunState, str]:
        """Post the final answer (the last AI message of ``values``, the graph's final
        state, or the tool result after it: a ``return_direct`` tool's result is the
        agent's answer, ``create_agent`` ending on it) and end the run ``done``."""
        messages = values.get("messages", [])
        last = next((m for m in reversed(messages) if isinstance(m, AIMessage | ToolMessage)), None)
        answer = message_text(last) if last else ""
        await self.messages.final_answer(run, answer, messages, calls)
        logger.info("run=%s thread_id=%s done", run.run_id, run.thread_id)
        return RunState.DONE, answer


def _streams_every_interrupt(graph: Any) -> bool:
    """Whether every interrupt of ``graph``'s tasks reaches its stream: LangGraph streams
    nothing of a task tagged ``langsmith:hidden`` (``TAG_HIDDEN``: its ``__start__``
    node, or every node of a graph given the tag, ``graph.with_config(tags=[...])``, or
    a node given it), its interrupts included. A graph whose ``config`` and ``nodes``
    cannot be read (``nodes``; ``config`` is ``None`` until set) is not known to."""
    config, nodes = getattr(graph, "config", None) or {}, getattr(graph, "nodes", None)
    if not isinstance(config, Mapping) or not isinstance(nodes, Mapping):
        return False
    if TAG_HIDDEN in (config.get("tags") or ()):
        return False
    return not any(
        TAG_HIDDEN in (getattr(node, "tags", None) or ())
        for name, node in nodes.items()
        if name != START
    )


def _ended_values(chunk: Any) -> dict[str, Any] | None:
    """The values of a ``version="v2"`` values chunk that raised no interrupt, if they
    are a dict, else ``None``."""
    if not isinstance(chunk, dict) or chunk.get("type") != "values":
        return None
    values, interrupts = chunk.get("data"), chunk.get("interrupts")
    if not isinstance(values, dict) or interrupts is None or interrupts:
        return None
    return values


def _calls_unanswered(values: dict[str, Any]) -> bool:
    """Whether the last of ``values``' messages is an AI message calling tools: no graph
    that ran to its end leaves its last turn's calls without results (a static
    breakpoint before the tools does)."""
    messages = values.get("messages")
    last = messages[-1] if isinstance(messages, list) and messages else None
    return isinstance(last, AIMessage) and bool(last.tool_calls)


def _empty(snapshot: Any) -> bool:
    """Whether ``snapshot`` is the state of a ``thread_id`` nothing has run on: no
    values, nothing next, no interrupts (what a checkpointer or Agent Server gives for a
    thread it does not have)."""
    return not snapshot.values and not snapshot.next and not snapshot.interrupts


AFTER_MODEL_HOOK = ".after_model"
"""How the node of a middleware's ``after_model`` hook is named (``<middleware
name>.after_model``), the batched ``HumanInTheLoopMiddleware``'s among them."""


def turn_messages(snapshot: Any, interrupt: Interrupt) -> list[Any]:
    """The messages to read ``interrupt``'s calls from: those of the graph whose node
    raised it (``messages_of``); none for a batched ``HumanInTheLoopMiddleware``
    interrupt that a task other than a middleware's ``after_model`` hook raised (a
    sub-agent run inside a tool: its turn is in no state the driver reads, and the
    graph's own last turn is another one), so its actions match no call and its cards
    offer no Edit (``interrupts.UNKNOWN_CALL``)."""
    state, task = _raised_in(snapshot, interrupt.id)
    if task is not None and is_batched(interrupt) and not task.name.endswith(AFTER_MODEL_HOOK):
        return []
    return _messages(state)


def messages_of(snapshot: Any, interrupt_id: str) -> list[Any]:
    """The messages of the graph whose node raised ``interrupt_id``: the deepest subgraph
    state among ``snapshot``'s tasks (``aget_state(..., subgraphs=True)`` gives each paused
    subgraph task its ``StateSnapshot``) that holds it, else the snapshot's own.

    A sub-agent (a ``create_agent`` graph as a node) keeps the turn being reviewed in
    its own state until it ends; the parent's messages do not have it yet.
    """
    state, _ = _raised_in(snapshot, interrupt_id)
    return _messages(state)


def raised_in(snapshot: Any, interrupt_id: str, *, thread_id: str) -> RaisedIn:
    """Where ``interrupt_id`` was raised, as LangChain describes it to a ``when`` rule:
    the state of the graph whose node raised it (``_raised_in``), that state's config,
    and the node's ``ExecutionInfo`` (its checkpoint, namespace and task, in
    ``thread_id``)."""
    state, task = _raised_in(snapshot, interrupt_id)
    config = state.config if isinstance(getattr(state, "config", None), dict) else {}
    configurable = config.get("configurable", {})
    execution = (
        ExecutionInfo(
            checkpoint_id=str(configurable.get("checkpoint_id", "")),
            checkpoint_ns=str(configurable.get("checkpoint_ns", "")),
            task_id=task.id,
            thread_id=thread_id,
        )
        if task is not None
        else None
    )
    return RaisedIn(values=_values(state), config=config, execution=execution)


def _raised_in(snapshot: Any, interrupt_id: str) -> tuple[Any, Any]:
    """``(state, task)``: the deepest state of ``snapshot`` (``aget_state(...,
    subgraphs=True)``: each paused subgraph task has its ``StateSnapshot``) with a task
    holding ``interrupt_id``, and the deepest such task; ``(snapshot, None)`` if no task
    holds it."""
    for task in getattr(snapshot, "tasks", ()):
        if any(i.id == interrupt_id for i in task.interrupts):
            inner = getattr(task, "state", None)
            if not isinstance(inner, StateSnapshot):
                return snapshot, task
            state, deeper = _raised_in(inner, interrupt_id)
            return state, deeper or task
    return snapshot, None


def _messages(state: Any) -> list[Any]:
    """The ``messages`` of a ``StateSnapshot``'s values (none if it has none)."""
    return list(_values(state).get("messages", []))


def _values(state: Any) -> dict[str, Any]:
    """A ``StateSnapshot``'s values (empty if they are not a dict)."""
    return state.values if isinstance(state.values, dict) else {}


async def _nodes_failures_as_theirs(
    stream: AsyncIterator[Any], *, deployed: bool
) -> AsyncIterator[Any]:
    """Yield ``stream``'s chunks; an error out of it that the worker retries on, but that
    the graph's own machinery does not raise, was raised by a node, a tool of the agent's:
    raised as ``RuntimeError``, it fails the run like any other exception of the graph,
    instead of sending it back to the queue to run the tool again, forever. So are a
    ``StoreUnavailableError`` that is not the checkpointer's (``PostgresCheckpointer``
    raises ``CheckpointUnavailableError`` itself, never a subclass), any ``NotifyError``
    (the driver posts to Slack between chunks, never inside the stream), and an
    ``AgentServerUnavailableError`` out of a graph that is not ``deployed`` (only
    ``RemoteAgent``'s stream raises its own). The checkpointer's is marked
    ``tools_may_have_run``. Whether an error is a node's is read from its type alone,
    never from its text or attributes, which the node's code controls."""
    try:
        async for chunk in stream:
            yield chunk
    except CheckpointUnavailableError as exc:
        if type(exc) is not CheckpointUnavailableError:
            raise _nodes(exc) from exc
        exc.tools_may_have_run = True
        raise
    except AgentServerUnavailableError as exc:
        if deployed and type(exc) is AgentServerUnavailableError:
            raise
        raise _nodes(exc) from exc
    except (StoreUnavailableError, NotifyError) as exc:
        raise _nodes(exc) from exc


def _nodes(exc: Exception) -> RuntimeError:
    """``exc``, raised by a node of the graph, as the failure of the run it is."""
    return RuntimeError(f"a node raised {error_text(exc)}")


def _middleware_refused_the_turn(exc: BaseException) -> bool:
    """Whether ``exc`` came out of a ``HumanInTheLoopMiddleware``'s ``after_model`` (its
    batched hook, run again on resume: it gathers the last turn's gated calls by its
    configuration as it is now and raises ``ValueError`` when their count differs from
    the decisions), so that no tool of the turn ran. Read from the traceback's frames (the
    hook's own ``self``), which a tool's code does not control, never from the text."""
    traceback = exc.__traceback__
    while traceback is not None:
        frame = traceback.tb_frame
        if frame.f_code.co_name == "after_model" and isinstance(
            frame.f_locals.get("self"), HumanInTheLoopMiddleware
        ):
            return True
        traceback = traceback.tb_next
    return False


def _raised_by_langgraphs_runner(exc: BaseException) -> bool:
    """Whether ``exc`` was raised by the graph's own step runner, where a step past its
    ``step_timeout`` ends: from the traceback's first LangGraph frame inward, every frame
    is LangGraph's or ``asyncio``'s (which waits for the step), the innermost of
    LangGraph's in ``langgraph.pregel._runner``. A node's code in between (a tool's own
    ``TimeoutError``, a sub-agent with a ``step_timeout`` of its own run by a tool) makes
    it the node's."""
    modules = []
    tb = exc.__traceback__
    while tb is not None:
        modules.append(str(tb.tb_frame.f_globals.get("__name__", "")))
        tb = tb.tb_next
    first = next((i for i, m in enumerate(modules) if m.split(".")[0] == "langgraph"), None)
    if first is None:
        return False
    inner = [m for m in modules[first:] if m.split(".")[0] != "asyncio"]
    return all(m.split(".")[0] == "langgraph" for m in inner) and inner[-1] == (
        "langgraph.pregel._runner"
    )


def _langgraph_refused(exc: ValidationError, *, deployed: bool) -> bool:
    """Whether ``exc`` is LangGraph's check of a resume value against the interrupt's
    ``response_schema``: raised inside ``langgraph.types.interrupt`` (its frame is on the
    traceback), before the node that called it could act on the answer; for a
    ``deployed`` graph, ``RemoteAgent``'s stand-in for the server run's
    ``ValidationError`` (``REFUSED_TITLE``: the server says only the error's name, so a
    node's own ``ValidationError`` there cannot be told apart)."""
    if deployed and exc.title == REFUSED_TITLE:
        return True
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code is interrupt.__code__:
            return True
        tb = tb.tb_next
    return False

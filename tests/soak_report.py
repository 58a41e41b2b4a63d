"""What the soak checks once its runs are over: each count a reviewer would care about.

Reads the database (runs, requests), the checkpoints (tool results), the ledger (each
real execution of ``append_line``) and the sandbox (every message, with the key in its
metadata), and counts what is wrong. Every count should be 0.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from agent_bridge.models import ApprovalState, RunState
from agent_bridge.run_messages import in_call_order
from bot.slack_gateway import message_key
from tests.harness import CHANNEL, Harness, decision_buttons
from tests.ledger_agent import Entry


@dataclass
class Expected:
    """What the soak's reviewer did to one run, to check its outcome against.

    Attributes:
        run_id: The run.
        lines: Tool call's line per request ID (the model's argument).
        edited: Request ID -> the line the reviewer put instead.
    """

    run_id: str
    lines: dict[str, str] = field(default_factory=dict)
    edited: dict[str, str] = field(default_factory=dict)


@dataclass
class Counts:
    """The soak's findings."""

    runs: int = 0
    finished: int = 0
    stuck: int = 0
    failed: int = 0
    wrong_answer: int = 0
    decisions_lost: int = 0
    calls_run_twice: int = 0
    calls_run_twice_after_a_kill_inside: int = 0
    rejected_calls_run: int = 0
    edited_calls_run_with_original_args: int = 0
    cards_offering_buttons_after_decision: int = 0
    missing: Counter[str] = field(default_factory=Counter)
    duplicate: Counter[str] = field(default_factory=Counter)
    out_of_order_results: int = 0
    headers_not_matching_end: int = 0
    violations: int = 0
    slowest_ack_s: float = 0.0
    longest_wait_after_kill_s: float = 0.0
    notes: list[str] = field(default_factory=list)
    """One line per problem found, naming the run and request."""

    def clean(self) -> bool:
        """Whether every count is 0 and no run waited 5 s or more after a kill."""
        bad = [
            self.stuck,
            self.failed,
            self.wrong_answer,
            self.decisions_lost,
            self.calls_run_twice,
            self.rejected_calls_run,
            self.edited_calls_run_with_original_args,
            self.cards_offering_buttons_after_decision,
            sum(self.missing.values()),
            sum(self.duplicate.values()),
            self.out_of_order_results,
            self.headers_not_matching_end,
            self.violations,
        ]
        return not any(bad) and self.longest_wait_after_kill_s < 5.0 and self.slowest_ack_s < 3.0

    def lines(self) -> list[str]:
        """The report, one count a line."""
        kinds = sorted(set(self.missing) | set(self.duplicate) | set(KINDS))
        return [
            f"runs {self.runs}: finished {self.finished}, stuck {self.stuck}, "
            f"failed {self.failed}, finished with a wrong answer {self.wrong_answer}",
            f"decisions lost {self.decisions_lost}",
            f"calls run twice {self.calls_run_twice} "
            f"(apart: run twice because its worker died inside it "
            f"{self.calls_run_twice_after_a_kill_inside})",
            f"rejected calls run {self.rejected_calls_run}",
            f"edited calls run with the original arguments "
            f"{self.edited_calls_run_with_original_args}",
            f"cards still offering buttons after their decision "
            f"{self.cards_offering_buttons_after_decision}",
            "missing messages " + ", ".join(f"{kind} {self.missing[kind]}" for kind in kinds),
            "duplicate messages " + ", ".join(f"{kind} {self.duplicate[kind]}" for kind in kinds),
            f"tool results out of call order {self.out_of_order_results}",
            f"headers not matching the run's end {self.headers_not_matching_end}",
            f"sandbox violations (late acks, invalid Block Kit) {self.violations}",
            f"slowest ack {self.slowest_ack_s * 1000:.0f} ms",
            f"longest wait after a kill {self.longest_wait_after_kill_s:.2f} s",
        ]


KINDS = ("header", "card", "tool", "final_answer")


async def checkpoint_messages(harness: Harness, thread_id: str) -> list[BaseMessage]:
    """Every message in the ``thread_id``'s checkpoint, oldest first."""
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    checkpoint = await harness.backend.checkpointer.aget_tuple(config)
    if checkpoint is None:
        return []
    return list(checkpoint.checkpoint["channel_values"].get("messages", []))


def kind_of(key: str) -> str:
    """``header``, ``card``, ``tool``... of a message key ``<run_id>/<kind>[:<id>]``."""
    return key.split("/", 1)[-1].split(":", 1)[0]


async def count(
    harness: Harness,
    expected: list[Expected],
    entries: list[Entry],
    *,
    stuck: set[str],
    killed_pids: set[int],
) -> Counts:
    """Count what is wrong after the soak's runs (see the module docstring)."""
    counts = Counts(
        runs=len(expected), stuck=len(stuck), violations=len(harness.sandbox.violations)
    )
    by_call: dict[str, list[Entry]] = {}
    for entry in entries:
        by_call.setdefault(entry.tool_call_id, []).append(entry)
    for runs in by_call.values():
        if len(runs) > 1:
            if runs[0].pid in killed_pids:
                counts.calls_run_twice_after_a_kill_inside += 1
            else:
                counts.calls_run_twice += 1
    messages = harness.sandbox.messages(CHANNEL)
    keyed: dict[str, list[dict[str, Any]]] = {}
    for message in messages:
        keyed.setdefault(message_key(message) or "", []).append(message)
    for plan in expected:
        if plan.run_id in stuck:
            run = await harness.store.get_run(plan.run_id)
            states = [
                (r.request_id, r.state.value, r.message_ts is not None)
                for r in await harness.store.requests_for_run(plan.run_id)
            ]
            counts.notes.append(f"stuck {plan.run_id} {run.state.value} requests={states}")
            continue
        await _check_run(harness, plan, by_call, keyed, counts)
    return counts


async def _check_run(
    harness: Harness,
    plan: Expected,
    by_call: dict[str, list[Entry]],
    keyed: dict[str, list[dict[str, Any]]],
    counts: Counts,
) -> None:
    run = await harness.store.get_run(plan.run_id)
    if run.state == RunState.FAILED:
        counts.failed += 1
        return
    counts.finished += 1
    requests = await harness.store.requests_for_run(run.run_id)
    answer = run.final_answer or ""
    wrong = False
    for request in requests:
        ran = [e.line for e in by_call.get(request.tool_call_id or "", [])]
        decision = request.decision
        if request.state != ApprovalState.APPLIED or decision is None:
            counts.decisions_lost += 1
            continue
        if decision.type == "reject":
            counts.rejected_calls_run += bool(ran)
        elif decision.type == "edit":
            if plan.lines.get(request.request_id) in ran:
                counts.edited_calls_run_with_original_args += 1
            wrong |= f"appended {plan.edited.get(request.request_id)}" not in answer
        else:
            wrong |= f"appended {plan.lines.get(request.request_id)}" not in answer
        card = keyed.get(f"{run.run_id}/card:{request.request_id}", [])
        if any(decision_buttons(m) for m in card):
            counts.cards_offering_buttons_after_decision += 1
            counts.notes.append(
                f"buttons {run.run_id} {request.request_id} r{request.revision} "
                f"drawn r{request.drawn_revision} cards={[m['ts'] for m in card]} "
                f"recorded={request.message_ts}"
            )
    counts.wrong_answer += wrong
    results = in_call_order(await checkpoint_messages(harness, run.thread_id))
    wanted = {
        "header": [f"{run.run_id}/header"],
        "card": [f"{run.run_id}/card:{r.request_id}" for r in requests],
        "tool": [f"{run.run_id}/tool:{r.call_id}" for r in results],
        "final_answer": [f"{run.run_id}/final_answer"],
    }
    for kind, keys in wanted.items():
        for key in keys:
            found = len(keyed.get(key, []))
            counts.missing[kind] += found == 0
            counts.duplicate[kind] += max(0, found - 1)
    extra = [k for k in keyed if k.startswith(f"{run.run_id}/")]
    for key in extra:
        if kind_of(key) not in wanted:
            counts.duplicate[kind_of(key)] += max(0, len(keyed[key]) - 1)
    if run.thread_ts:
        thread_keys = [
            message_key(m) or "" for m in harness.sandbox.thread(run.channel_id, run.thread_ts)
        ]
        posted = [k for k in thread_keys if kind_of(k) == "tool"]
        in_order = [k for k in wanted["tool"] if k in posted]
        if posted != in_order:
            counts.out_of_order_results += 1
            counts.notes.append(f"order {run.run_id} posted={posted} wanted={in_order}")
        header = harness.sandbox.message(run.channel_id, run.thread_ts)
        counts.headers_not_matching_end += not str(header.get("text", "")).startswith("Done")

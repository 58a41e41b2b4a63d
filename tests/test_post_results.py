"""What a run's Slack thread shows of each tool call: ``post_results`` (``all``,
``reviewed``, ``none``) for gated and ungated tools, one sentence for a failure (the
details in the log, with the run and tool call IDs), redacted arguments in the
"ran without review" note. The run driver on a real graph and SQLite store, with the
notifier port's twin; the model gets every result as LangGraph made it."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langgraph.checkpoint.memory import InMemorySaver

from agent_bridge import wording
from agent_bridge.agent import build_agent
from agent_bridge.arguments import tool_args_schema
from agent_bridge.models import Decision, Run, RunState
from agent_bridge.policy import Policy, PostResults, ToolPolicy
from agent_bridge.run_driver import RunDriver
from agent_bridge.scripted_model import ScriptedChatModel
from agent_bridge.store import ApprovalStore
from bot.testing import RecordingNotifier

MODES: tuple[PostResults, ...] = ("all", "reviewed", "none")
REASON = "Not on a Friday."
PASSWORD = "Fr1day-Pa55word"


def never_review(request: Any) -> bool:
    """A ``when`` predicate letting every call through without review."""
    return False


def make_tools(broken_dir: Path) -> list[BaseTool]:
    def output_of(name: str) -> Any:
        def tool(table: str, password: str = "") -> str:
            return f"rows of {name}"

        tool.__name__ = name
        tool.__doc__ = f"The {name} tool."
        return tool

    def fails(table: str) -> str:
        """A tool that fails naming a server path."""
        raise ToolException(f"cannot read {broken_dir.resolve()}/{table}.db")

    names = [f"{kind}_{mode}" for kind in ("gated", "ungated") for mode in MODES]
    functions = [output_of(n) for n in [*names, "rejected", "unreviewed"]] + [fails]
    return [StructuredTool.from_function(f, handle_tool_error=True) for f in functions]


def policy() -> Policy:
    tools: dict[str, bool | ToolPolicy] = {}
    for mode in MODES:
        tools[f"gated_{mode}"] = ToolPolicy(post_results=mode)
        tools[f"ungated_{mode}"] = ToolPolicy(gated=False, post_results=mode)
    tools["rejected"] = ToolPolicy(post_results="none")
    tools["unreviewed"] = ToolPolicy(when=f"{__name__}:never_review")
    return Policy(tools=tools)


@pytest.fixture
def store(sqlite_store: ApprovalStore) -> ApprovalStore:
    return sqlite_store


async def drive_to_the_end(
    store: ApprovalStore, tmp_path: Path
) -> tuple[RecordingNotifier, Run, list[Any]]:
    """Start a run calling every tool once, approve the gated calls but ``rejected``
    (rejected with ``REASON``), drive it to its end; return the notifier, the run and
    the checkpoint's tool messages."""
    tools = make_tools(tmp_path / "data")
    notifier = RecordingNotifier(store)
    graph = build_agent(
        tools=tools, model=ScriptedChatModel(), policy=policy(), checkpointer=InMemorySaver()
    )
    driver = RunDriver(
        store=store,
        graph=graph,
        notifier=notifier,
        policy=policy(),
        args_schemas={t.name: tool_args_schema(t) for t in tools},
    )
    calls = [
        {"name": t.name, "args": {"table": "orders", "password": PASSWORD}}
        if t.name == "unreviewed"
        else {"name": t.name, "args": {"table": "orders"}}
        for t in tools
    ]
    run = await store.create_run(
        Run(
            run_id="run-1",
            thread_id="t-1",
            task=json.dumps({"tool_calls": calls}),
            channel_id="C1",
            user_id="U1",
        )
    )
    state, _ = await driver.drive(run)
    assert state == RunState.WAITING
    for request in await store.requests_for_run(run.run_id):
        decision = (
            Decision(type="reject", message=REASON)
            if request.tool_name == "rejected"
            else Decision(type="approve")
        )
        await store.record_decision(request.request_id, decision, user_id="U2")
    state, _ = await driver.drive(await store.get_run(run.run_id))
    assert state == RunState.DONE
    config = {"configurable": {"thread_id": run.thread_id}}
    messages = (await graph.aget_state(config)).values["messages"]
    return notifier, run, [m for m in messages if m.type == "tool"]


async def test_each_tool_s_post_results_decides_whether_its_output_is_posted(
    store: ApprovalStore, tmp_path: Path
) -> None:
    notifier, _, results = await drive_to_the_end(store, tmp_path)
    posted = dict(payload for kind, payload in notifier.events if kind == "result")
    assert posted == {
        "gated_all": "rows of gated_all",
        "gated_reviewed": "rows of gated_reviewed",
        "gated_none": None,  # a line that it ran, no output
        "ungated_all": "rows of ungated_all",
        "ungated_reviewed": None,
        "ungated_none": None,
        "rejected": posted["rejected"],  # checked below
        "unreviewed": None,  # its when let it through: not reviewed
        "fails": None,  # a failure: one sentence
    }
    assert REASON in (posted["rejected"] or "")  # the reviewer's words, not output
    # A reviewed call's card says how it went; with post_results none, without output.
    results_on_cards = {
        r.tool_name: r.result.text if r.result else None
        for r in await store.requests_for_run("run-1")
    }
    assert results_on_cards["gated_all"] == "rows of gated_all"
    assert results_on_cards["gated_none"] == ""
    # The model got every output, whatever Slack was shown.
    assert {m.name: m.content for m in results}["ungated_none"] == "rows of ungated_none"


async def test_a_failure_is_one_sentence_in_slack_and_details_in_the_log(
    store: ApprovalStore, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    notifier, run, results = await drive_to_the_end(store, tmp_path)
    failed = [p for k, p in notifier.events if k == "result" and p[0] == "fails"]
    assert failed == [("fails", None)]
    (message,) = [m for m in results if m.name == "fails"]
    path = str((tmp_path / "data").resolve())
    assert message.status == "error" and path in message.content  # as LangGraph made it
    (record,) = [r for r in caplog.records if "fails failed" in r.getMessage()]
    text = record.getMessage()
    assert run.run_id in text and message.tool_call_id in text and path in text


async def test_a_call_its_when_let_through_is_noted_with_its_secrets_masked(
    store: ApprovalStore, tmp_path: Path
) -> None:
    notifier, _, _ = await drive_to_the_end(store, tmp_path)
    notes = [p for k, p in notifier.events if k == "unreviewed"]
    assert notes == [("unreviewed", {"table": "orders", "password": wording.REDACTED})]

"""A "bring your own agent" for the tests: a tool with typed, structured arguments.

Used as ``AGENT=tests.report_agent:tools`` with ``tests/fixtures/report_policy.yml``.
"""

from __future__ import annotations

from typing import Any

from langchain_core.tools import BaseTool, StructuredTool


def send_report(recipients: list[str], copies: int, subject: str) -> str:
    """Send the monthly report to each recipient."""
    return f"Sent {copies} copies of {subject!r} to {', '.join(recipients)}"


tools: list[BaseTool] = [StructuredTool.from_function(send_report)]


def describe(tool_call: dict[str, Any], state: Any, runtime: Any) -> str:
    """A description callable (``callable:`` in the policy): written from the call."""
    args = tool_call["args"]
    return f"📨 {args.get('copies')} copies of {args.get('subject')!r} will go out"

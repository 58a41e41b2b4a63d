"""Way 1 of bringing an agent: a list of tools; the product builds the agent around them.

Run it with ``AGENT=examples.tools_agent:make_tools POLICY=examples/tools_policy.yml``
(from the repository root, or with this module installed where the worker can import it).
The worker builds ``create_agent(MODEL, tools, middleware=[HumanInTheLoopMiddleware(...)])``
from the policy, with ``SYSTEM_PROMPT`` as its prompt.

``send_email`` does not send anything here: it writes the message under the worker's
``WORKSPACE_DIR`` (``outbox/``), so the example runs offline. Replace its body with your
mail client; keep the signature, which is what the reviewer's edit form is built from.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

from agent_bridge.settings import WorkerConfig

COMPANY_DOMAIN = "@example.com"
"""Mail to this domain goes out without review (``external_recipient``)."""


def outbox_of(workspace_dir: Path) -> Path:
    """Where ``send_email`` leaves the messages it "sent"."""
    return workspace_dir / "outbox"


def make_tools(settings: WorkerConfig) -> list[BaseTool]:
    """``AGENT`` may name a callable taking the worker's settings and returning the tools.

    Returns:
        ``[send_email]``, writing under ``settings.workspace_dir``.
    """
    outbox = outbox_of(settings.workspace_dir)

    def send_email(to: str, subject: str, body: str) -> str:
        """Send an email."""
        outbox.mkdir(parents=True, exist_ok=True)
        # one file per message, named uniquely: a turn's calls run at once, in threads
        (outbox / f"{uuid.uuid4().hex}.eml").write_text(f"To: {to}\nSubject: {subject}\n\n{body}\n")
        return f"Sent to {to}"

    return [StructuredTool.from_function(send_email)]


def external_recipient(request: Any) -> bool:
    """The policy's ``when`` predicate: review only mail leaving the company.

    Args:
        request: The middleware's ``ToolCallRequest`` (``request.tool_call["args"]``).

    Returns:
        ``True`` to ask a person; ``False`` runs the call at once (noted in Slack).
    """
    return not str(request.tool_call["args"].get("to", "")).endswith(COMPANY_DOMAIN)


def describe(tool_call: dict[str, Any], state: Any, runtime: Any) -> str:
    """The policy's ``callable`` description: the card's headline, written from the call."""
    args = tool_call["args"]
    return f"📧 Mail to {args.get('to')}: {args.get('subject')}"

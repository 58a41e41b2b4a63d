"""An agent whose calls carry secrets, for the redaction tests.

``make_tools`` (``AGENT=tests.secret_agent:make_tools``, with
``tests/fixtures/secret_policy.yml``) gives three tools working in the workspace:
``connect`` records every input it really receives in ``connect_calls.jsonl`` (so a
test sees the real values reached the tool) and repeats the password in its result (so
a test sees the result is scrubbed before Slack); ``lookup`` returns customer rows (its
output is what ``post_results`` keeps out of the channel); ``explode`` fails with an
absolute server path in its error; ``rotate`` prints nothing; ``show_config`` prints
secrets under their own names, and a Slack token bare; ``unlock`` raises an error
carrying its password, which fails the run.

The secrets cannot come from the task: the requester's task is their own text and is
shown as typed. ``PlannedModel`` is the tests' chat model instead of the scripted one:
it proposes the calls planned for the task's name, then answers quoting the results
that succeeded (so the answer repeats the password too).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, ToolException

from agent_bridge.scripted_model import ScriptedChatModel
from agent_bridge.settings import WorkerConfig

PASSWORD = "hunter2-Pa55-q7Zr"
API_KEY = "sk-live-9b8c7d6e5f4a"
TOKEN = "ghp-Tok3n-0a1b2c3d"
CONFIG_PASSWORD = "cfg-Pa55-7781-zz"
CONFIG_TOKEN = "cfg-B3arer-0042-yy"
"""Secrets only in ``show_config``'s output, never an argument: known by their names."""
BARE_SLACK_TOKEN = "xoxb-2222-3333-Sl4ckB0tT0k3n"
"""A secret only in ``show_config``'s output, named by nothing: known by its shape."""
TYPED_PASSWORD = "typed-N3w-Pass-4411"
"""What a reviewer types into the redacted field of an edit form."""
SECRETS = (
    PASSWORD,
    API_KEY,
    TOKEN,
    TYPED_PASSWORD,
    CONFIG_PASSWORD,
    CONFIG_TOKEN,
    BARE_SLACK_TOKEN,
)
CALLS_FILE = "connect_calls.jsonl"
CUSTOMER_ROWS = "Ada Lovelace, ada@example.com, card 4242-4242"


def connect_args(*, notes_chars: int = 0) -> dict[str, Any]:
    """``connect``'s proposed arguments: a top-level password, an API key nested in an
    object, a token in an object in a list; ``notes`` long enough to cut the card."""
    return {
        "host": "db1.internal",
        "password": PASSWORD,
        "options": {"tls": True, "auth": {"api_key": API_KEY}, "replicas": [{"token": TOKEN}]},
        "notes": "n" * notes_chars,
    }


def received(workspace_dir: Path) -> list[dict[str, Any]]:
    """Every input ``connect`` really received, oldest first."""
    path = workspace_dir / CALLS_FILE
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def make_tools(settings: WorkerConfig) -> list[BaseTool]:
    """The secret agent's tools, recording under ``settings.workspace_dir``."""
    workspace = settings.workspace_dir

    def connect(host: str, password: str, options: dict[str, Any], notes: str = "") -> str:
        """Connect to a database host."""
        workspace.mkdir(parents=True, exist_ok=True)
        record = {"host": host, "password": password, "options": options}
        with (workspace / CALLS_FILE).open("a") as out:
            out.write(json.dumps(record) + "\n")
        return f"connected to {host} as admin/{password}"

    def lookup(customer: str) -> str:
        """Look a customer up."""
        return CUSTOMER_ROWS

    def explode(name: str) -> str:
        """Open a report (always fails, naming a server path)."""
        raise ToolException(f"cannot open {workspace.resolve()}/reports/{name}: no such file")

    def rotate(host: str, password: str) -> str:
        """Rotate a host's credential (prints nothing when it works)."""
        return ""

    def show_config(host: str) -> str:
        """Show a host's configuration (its secrets in it, under their own names)."""
        return (
            f"host={host}\nDB_PASSWORD={CONFIG_PASSWORD}\nAuthorization: Bearer {CONFIG_TOKEN}"
            f"\nSlack integration ready with {BARE_SLACK_TOKEN} for #ops"
        )

    def unlock(vault: str, password: str) -> str:
        """Unlock a vault (its client fails with the password in its message)."""
        raise RuntimeError(f"vault {vault} refused the login {password}")

    tools = (connect, lookup, explode, rotate, show_config)
    handled = [StructuredTool.from_function(fn, handle_tool_error=True) for fn in tools]
    return [*handled, StructuredTool.from_function(unlock)]  # its error fails the run


class PlannedModel(ScriptedChatModel):
    """A chat model proposing, for a task named in ``plans``, its calls turn by turn (the
    scripted model, with its plans given here rather than in the task, whose text Slack
    shows).

    Attributes:
        plans: Task text -> the tool calls of each turn (``{"name", "args"}``); after
            the last turn, the answer quotes each result that succeeded.
    """

    plans: dict[str, list[list[dict[str, Any]]]]

    def next_turn(self, messages: Sequence[BaseMessage]) -> AIMessage:
        """The next turn of the task's plan, or the answer after its last turn."""
        task = next((str(m.content) for m in messages if isinstance(m, HumanMessage)), "")
        turns = self.plans.get(task, [])
        turn = sum(1 for m in messages if isinstance(m, AIMessage) and m.tool_calls)
        if turn >= len(turns):
            quoted = [
                f"- {m.name}: {m.content}"
                for m in messages
                if isinstance(m, ToolMessage) and m.status != "error"
            ]
            return AIMessage(content="\n".join(["Done.", *quoted]))
        calls = [
            {**call, "id": f"call_{task}_{turn}_{i}", "type": "tool_call"}
            for i, call in enumerate(turns[turn])
        ]
        return AIMessage(content="", tool_calls=calls)

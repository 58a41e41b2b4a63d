"""An agent deployed on LangGraph Agent Server, reviewed from Slack: copy this folder.

The graph is yours: your model, system prompt, tools and ``HumanInTheLoopMiddleware``
configuration (which tools pause for a person, and which decisions each allows). It is
compiled **without a checkpointer**: the Agent Server keeps every thread's checkpoints.
Serve it with ``langgraph dev`` (or deploy it to LangGraph Platform) and point the
worker at it::

    cd examples/deployed_graph && langgraph dev --port 2024 --no-browser
    AGENT_URL=http://127.0.0.1:2024 ASSISTANT_ID=agent \
        AGENT=examples.deployed_graph.graph:graph \
        POLICY=examples/deployed_graph/policy.yml agent-bridge worker

``AGENT`` names this same module so the worker knows, without running it, which calls
pause and with which decisions (the policy is checked against them) and each tool's
argument schema (the edit form); the server runs it and keeps its checkpoints.

The offline ``ScriptedChatModel`` stands in for a real model so the example runs
anywhere; replace it with yours, e.g. ``init_chat_model("anthropic:claude-sonnet-4-5")``.
"""

from __future__ import annotations

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.tools import tool

from agent_bridge.scripted_model import ScriptedChatModel

SYSTEM_PROMPT = "You help the support team. Look customers up before writing to them."


@tool
def lookup_customer(name: str) -> str:
    """Find a customer's email address by name."""
    return f"{name.lower()}@example.com"


@tool
def send_email(to: str, subject: str, body: str) -> str:
    """Send an email to a customer."""
    return f"Sent {subject!r} to {to}"


graph = create_agent(
    ScriptedChatModel(),
    tools=[lookup_customer, send_email],
    system_prompt=SYSTEM_PROMPT,
    middleware=[
        HumanInTheLoopMiddleware(
            interrupt_on={"send_email": {"allowed_decisions": ["approve", "edit", "reject"]}},
            description_prefix="The agent wants to send an email",
        )
    ],
)

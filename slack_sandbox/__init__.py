"""A local fake Slack for the demo and end-to-end tests (no network needed).

It serves the Web API methods the bot calls at ``/api/{method}``, delivers slash
commands, button clicks and modal submissions to the bot signed as Slack signs them,
and shows a page at ``/`` where a person can click through the flow.
"""

from __future__ import annotations

from slack_sandbox.errors import BotUnreachable, NotSubmitted, SandboxError
from slack_sandbox.sandbox import Sandbox
from slack_sandbox.validation import live_links, live_mentions, message_live_links

__all__ = [
    "BotUnreachable",
    "NotSubmitted",
    "Sandbox",
    "SandboxError",
    "live_links",
    "live_mentions",
    "message_live_links",
]

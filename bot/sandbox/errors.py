"""Errors of the local Slack sandbox."""

from __future__ import annotations


class SandboxError(Exception):
    """A sandbox operation could not be done as asked.

    Raised to the test or page that asked, never sent to the bot: a click on a button
    that is not in the message, a submission of a view that is not open, a delivery
    while the bot's ``request_url`` is unset or unreachable. Fix the test (it is
    probably stale) or start the bot, then try again.
    """


class BotUnreachable(SandboxError):
    """The bot's ``request_url`` is unset, refused the connection or timed out.

    Start the bot (or set ``Sandbox.request_url``) and try again.
    """

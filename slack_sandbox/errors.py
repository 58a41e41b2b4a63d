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


class NotSubmitted(SandboxError):
    """Slack's client would refuse to submit the modal (a required input is empty...).

    The bot is not called; ``errors`` (``block_id -> message``) are shown under the
    inputs, as Slack shows them. Fill the inputs in and submit again.
    """

    def __init__(self, view_id: str, errors: dict[str, str]) -> None:
        super().__init__(f"Slack's client would not submit view {view_id}: {errors}")
        self.errors = errors

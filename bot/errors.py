"""Errors of the Slack side. Each says what to do next."""

from __future__ import annotations

from agent_bridge import review_wording
from agent_bridge.notifier import NotifyError


class BotError(Exception):
    """Root of every error ``bot`` raises on purpose."""


class PayloadError(BotError):
    """Slack sent a payload this app cannot read (or someone sent one pretending).

    It is answered without a crash and logged; nothing is recorded.
    """


class SlackCallError(NotifyError, BotError):
    """A Web API call failed; raised only by ``bot.slack_gateway``, never a slack_sdk type.

    It is a ``NotifyError``, so the worker handles it as the notifier port says:
    ``retryable`` ones are tried again on its next sweep.

    Attributes:
        method: The Web API method, e.g. ``chat.update``.
        code: Slack's ``error`` field (``message_not_found``...), or ``None`` when Slack
            was not reached.
    """

    def __init__(
        self, message: str, *, method: str, code: str | None = None, retryable: bool
    ) -> None:
        super().__init__(message, retryable=retryable)
        self.method = method
        self.code = code


class SlackUnavailableError(SlackCallError):
    """Slack could not be reached, or kept answering 429 / 5xx past slack_sdk's retries.

    Nothing was done on Slack's side; the same call can simply be made again later.
    """


class MessageGoneError(SlackCallError):
    """The message to update no longer exists (someone deleted it).

    Post it again if it still matters (``bot.card_owner`` does so for pending cards).
    """


class ChannelUnreachableError(SlackCallError):
    """The bot cannot write in that channel (unknown, archived, or the bot is not in it).

    Invite the bot to the channel, or fix the channel ID in the configuration.
    """


class SlackRefusedError(SlackCallError):
    """Slack refused the call itself (invalid blocks, a revoked token, an expired trigger).

    Retrying the same call fails again; the message names Slack's error code.
    """


class ApprovalsUnjudgedError(BotError):
    """Whether an earlier approval of a request still counts cannot be told: the person
    is named by none of the approver lists read, and an approver group Slack did not
    list (a passing failure, not a group Slack says does not exist) may hold them.

    Nothing is recorded; the clicker is told so and may click again once Slack lists
    the group (``bot.guard.Guard.current_approvers``), or, if Slack refuses to list it
    (the app's scopes, token or plan), told that an admin must act.

    Attributes:
        groups: The user group IDs Slack did not list.
        refused: Those Slack refused to list, with its error codes, as people read them
            (``bot.authorization.refused_groups``); empty if none was.
    """

    def __init__(self, groups: tuple[str, ...], *, refused: str = "") -> None:
        super().__init__(f"approver groups not read: {', '.join(groups)}")
        self.groups = groups
        self.refused = refused

    @property
    def answer(self) -> str:
        """What the clicker is told, and the audit trail keeps (mrkdwn)."""
        if self.refused:
            return review_wording.approvals_refused_text(self.refused)
        return review_wording.approvals_unjudged_text(", ".join(self.groups))

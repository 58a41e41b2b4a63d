"""Every sentence a Slack user reads about a click, a run or a card, in one place.

Both packages use it: ``agent_bridge`` writes notes onto requests (expired, run failed,
answer refused) and decision refusals; ``bot`` answers clicks, submissions and commands
and draws cards. Wording changes here and is tested in ``tests/test_wording.py``.
Mrkdwn sentences (``*_TEXT``, for messages) and plain ones (``*_PLAIN``, for modal
field errors, which show no mrkdwn) are kept apart. Field messages of the argument
schema check ("Must be a whole number.") live with that check, in
``agent_bridge.arguments`` and ``bot.edit_form``.
"""

from __future__ import annotations

from collections.abc import Sequence

# Private answers to a click or a command (chat.postEphemeral, mrkdwn).
STORE_DOWN_TEXT = (
    ":warning: Your decision was *not* recorded: the approval database is unreachable. "
    "Please try again in a moment."
)
STALE_TEXT = (
    "This approval request is no longer open (its run has finished or was "
    "cancelled), so nothing was recorded."
)
FORM_NOT_OPENED_TEXT = "The form could not be opened; click again."
COMMAND_UNREADABLE_TEXT = "That command could not be read; please try again."
USAGE_TEXT = "Usage: `/agent <task>`, for example `/agent Archive old orders, then delete them`"
MENTION_USAGE_TEXT = USAGE_TEXT.replace("/agent", "@agent")
RUN_NOT_STARTED_TEXT = (
    ":warning: The run was not started (the database refused or is unreachable). Please try again."
)
MENTION_NOT_STARTED_TEXT = ":warning: The run was not started; please mention me again."

# Field errors on a modal (plain text).
STORE_DOWN_PLAIN = (
    "Not recorded: the approval database is unreachable. Please submit again in a moment."
)
FAILED_PLAIN = "Not recorded: something went wrong on our side. Please submit again."
EDIT_NEEDS_ARGS_PLAIN = "An edit needs the new arguments."
RESPOND_NEEDS_ANSWER_PLAIN = "Write an answer."


def starting_run_text(task_shown: str) -> str:
    """The slash command's immediate answer; ``task_shown`` is escaped and cut."""
    return f"Starting a run for: {task_shown}"


def not_allowed_plain(decision_type: str, tool_name: str, allowed: Sequence[str]) -> str:
    """A decision the tool's policy does not offer (a forged click or submission)."""
    return f"'{decision_type}' is not allowed for {tool_name}; allowed: {', '.join(allowed)}."


def already_decided_text(outcome_line: str, why: str | None) -> str:
    """A losing click: ``outcome_line`` says who decided, how and when (mrkdwn);
    ``why`` is the request's note when no one did (it expired, its run failed)."""
    return f"This request was already decided: {outcome_line}.{f' {why}' if why else ''}"


def already_decided_plain(verb: str, when: str) -> str:
    """A losing modal submission, e.g. verb ``approved``, when `` at 14:02 UTC``."""
    return (
        f"Another reviewer already decided this request ({verb}{when}); "
        "nothing was recorded. See the card for who."
    )


# Notes written onto a request and shown on its card.
def expiry_note(verb: str) -> str:
    """An expired request; ``verb`` is what the policy's default decision did."""
    return f"Expired: no reviewer decided in time, so the policy {verb} it."


def run_failed_note(error: str) -> str:
    """A request closed because its run failed."""
    return f"The run failed, so this call will not run ({error[:300]})."


def invalid_answer_note(errors: dict[str, str]) -> str:
    """A decision that no longer fits the tool (e.g. its schema changed in a deploy);
    ``errors`` are ``check_decision``'s (argument name, or ``""``, -> message)."""
    details = "; ".join(
        f"{name}: {message}" if name else message for name, message in errors.items()
    )
    return f"the answer no longer fits the tool's arguments ({details})"


def refused_answer_note(reason: str) -> str:
    """A decision the graph refused when resumed."""
    return f"the agent refused the answer ({reason})"


CONSUMED_NOTHING_REASON = "the graph consumed no answer"
REOPENED_LEAD = ":warning: Not applied, please decide again:"

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


# Cards and run messages (mrkdwn). ``name`` arguments are already escaped inline code.
CARD_ASKS_LABEL = ":question: *The agent asks you:*"
CARD_APPROVAL_LABEL = ":raised_hand: *Approval needed:*"
CARD_DECIDED_LABEL = "*Tool call:*"
CARD_SHORTENED = "Some of this call is shortened here."
VIEW_FULL_ARGS_BUTTON = "View full arguments"
NEW_ARGUMENTS_LEAD = "*New arguments:*"
RUN_DONE_STATUS = (":white_check_mark: *Done*", "Done")
RUN_FAILED_STATUS = (":x: *Failed*", "Failed")
RUN_WORKING_STATUS = (":hourglass_flowing_sand: *Working on it*", "Working on")
RUN_FAILED_HEADING = ":x: *The run failed*"
NO_ANSWER = "(no answer)"
ARGUMENTS_SHORTENED = "Arguments shortened."


def approval_fallback(tool_name: str, description: str) -> str:
    """Notification text of a pending card (raw: the caller escapes and cuts it)."""
    return f"Approval needed: {tool_name}" + (f" — {description}" if description else "")


def progress_text(decided: int, batch_size: int) -> str:
    """A batched card's progress, e.g. "1 of 2 decided"."""
    return f"{decided} of {batch_size} decided"


def call_position_text(index: int, batch_size: int) -> str:
    """Which call of its batch a card is, e.g. "Call 2 of 3" (``index`` from 0)."""
    return f"Call {index + 1} of {batch_size}"


def tool_result_heading(name: str, *, ok: bool) -> str:
    """The heading of a tool's result in the run's Slack thread."""
    return f":white_check_mark: {name} returned:" if ok else f":x: {name} failed:"


def shortened_text(what: str, total_chars: int) -> str:
    """A note under a cut value, e.g. "Output shortened: 12,000 characters in all."."""
    return f"{what} shortened: {total_chars:,} characters in all."


def reminder_text(name: str, when: str, outcome: str) -> str:
    """The half-time reminder; ``when`` is a Slack date, ``outcome`` e.g. "rejected"."""
    return (
        f":alarm_clock: Still waiting for a decision on {name}. If no one decides by "
        f"{when}, it will be {outcome} automatically."
    )


def reminder_fallback(tool_name: str) -> str:
    """Notification text of a reminder (raw)."""
    return f"Reminder: {tool_name} is waiting for a decision"


def ran_without_review_heading(name: str) -> str:
    """A gated tool's call that its ``when`` rule let through unreviewed."""
    return (
        f":information_source: {name} ran without review (the policy's `when` rule let it through)."
    )


# Modals (intros are mrkdwn; titles, labels and buttons are plain, at most 24 characters).
EDIT_TITLE, EDIT_SUBMIT = "Edit tool call", "Run with edits"
REJECT_TITLE, REJECT_SUBMIT, REASON_LABEL = "Reject tool call", "Reject", "Reason"
RESPOND_TITLE, RESPOND_SUBMIT, ANSWER_LABEL = "Respond to the agent", "Send", "Your answer"
FULL_ARGS_TITLE, CLOSE_BUTTON, CANCEL_BUTTON = "Full arguments", "Close", "Cancel"
NEW_ARGUMENTS_HEADING = "*New arguments*"
RESPOND_SHORTENED = (
    "Some values are shortened; the card's View full arguments button shows them whole."
)


def edit_intro(name: str) -> str:
    """The edit modal's first line."""
    return f"Change the arguments of {name}; submitting runs it with them."


def reject_intro(name: str) -> str:
    """The reject modal's first line."""
    return f"Reject {name}? The agent is told, with your reason if you give one."


def respond_intro(name: str, *, asks: bool) -> str:
    """The respond modal's first line: a question the tool asks, or an answer instead of
    running a tool that does something."""
    if asks:
        return f"{name} asks:"
    return (
        f"Answer instead of running {name}: the tool will not run, and the agent gets "
        "your text as its result."
    )


def full_args_intro(name: str) -> str:
    """The full-arguments modal's first line."""
    return f"Every argument of {name}, in full."


def left_out_text(chars: int) -> str:
    """The last line of a full-arguments modal too long for Slack."""
    return f"About {chars:,} more characters are not shown: more than a Slack modal holds."

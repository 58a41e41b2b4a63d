"""Every sentence a Slack user reads about a click, a run or a card, in one place.

Both packages use it: ``agent_bridge`` writes notes onto requests (expired, run failed,
answer refused), decision refusals, the argument schema check's field messages and the
policy's defaults; ``bot`` answers clicks, submissions and commands, draws cards and
modals, and reads the edit form back. Wording changes here and is tested in
``tests/test_wording.py``. Mrkdwn sentences (``*_TEXT``, for messages) and plain ones
(``*_PLAIN``, for modal field errors, which show no mrkdwn) are kept apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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

# Field errors on a modal (plain text).
STORE_DOWN_PLAIN = (
    "Not recorded: the approval database is unreachable. Please submit again in a moment."
)
STORE_SLOW_PLAIN = (
    "Not recorded: the approval database did not answer in time. Please submit again in a moment."
)
STORE_SLOW_DECISION_TEXT = (
    ":warning: Your decision was *not* recorded: the approval database did not answer in "
    "time. Please click again in a moment."
)
STORE_SLOW_TEXT = (
    ":warning: The form was not opened: the approval database did not answer in time. "
    "Please click again in a moment."
)
FAILED_PLAIN = "Not recorded: something went wrong on our side. Please submit again."
EDIT_NEEDS_ARGS_PLAIN = "An edit needs the new arguments."
RESPOND_NEEDS_ANSWER_PLAIN = "Write an answer."


def starting_run_text(task_shown: str) -> str:
    """The slash command's immediate answer; ``task_shown`` is framed (a quote) and cut."""
    return f"Starting a run for:\n{task_shown}"


def too_long_plain(what: str, length: int, limit: int) -> str:
    """An answer or reason (``what``: "An answer", "A reason") longer than the modal takes."""
    return (
        f"{what} can be at most {limit:,} characters; this one has {length:,}. "
        "Nothing was recorded."
    )


def not_allowed_plain(decision_type: str, tool_name: str, allowed: Sequence[str]) -> str:
    """A decision the tool's policy does not offer (a forged click or submission)."""
    return f"'{decision_type}' is not allowed for {tool_name}; allowed: {', '.join(allowed)}."


def already_decided_text(outcome_line: str, why: str | None) -> str:
    """A losing click: ``outcome_line`` says who decided, how and when (mrkdwn);
    ``why`` is the request's note when no one did (it expired, its run failed), framed
    (a quote) on its own line."""
    lead = f"This request was already decided: {outcome_line}."
    return f"{lead}\n{why}" if why else lead


def at_time_plain(time_utc: str) -> str:
    """The ``when`` of :func:`already_decided_plain`, e.g. " at 14:02 UTC"."""
    return f" at {time_utc}"


def already_decided_plain(verb: str, when: str) -> str:
    """A losing modal submission, e.g. verb ``approved``, when `` at 14:02 UTC``."""
    return (
        f"This request was already decided ({verb}{when}); "
        "nothing was recorded. See the card for who."
    )


def attached_task(thread_id: str) -> str:
    """The task of a run attached by ``agent-bridge attach`` without one: its first
    message in Slack says which LangGraph thread it follows."""
    return f"Review the agent's thread {thread_id} (started by another app)"


# Notes written onto a request and shown on its card.
def expiry_note(verb: str) -> str:
    """An expired request; ``verb`` is what the policy's default decision did."""
    return f"Expired: no reviewer decided in time, so the policy {verb} it."


def run_failed_note(run_id: str) -> str:
    """A request closed because its run failed (the error itself is only in the
    worker's log: exception text can hold server paths and data)."""
    return f"The run failed, so this call will not run (details in the worker's log, run {run_id})."


def run_failed_call_may_have_run_note(run_id: str) -> str:
    """A request closed because its run failed after its decision, which the graph was
    (or may have been) given: its call may have started, even finished, so
    ``run_failed_note``'s "will not run" would be untrue (the error itself is only in the
    worker's log)."""
    return (
        "The run failed after this decision, and the call may have run, in whole or in "
        "part, or may still be running: check its effects before running it again "
        f"(details in the worker's log, run {run_id})."
    )


def run_failed_after_call_ran_note(run_id: str) -> str:
    """A request closed because its run failed after its call ran (its result, above
    the note, says how it went)."""
    return f"The run failed after this call ran (details in the worker's log, run {run_id})."


def uninstalled_note(team_id: str) -> str:
    """A request closed because the app left its workspace (uninstalled, or its bot
    token revoked): its card can no longer be updated, so this is in the audit trail."""
    return f"The app was removed from workspace {team_id}, so nobody can decide this call."


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


def refused_in_log_reason(error_type: str, run_id: str) -> str:
    """Why the graph refused an answer, as a card shows it: the error's type only."""
    return f"{error_type}; details in the worker's log, run {run_id}"


CONSUMED_NOTHING_REASON = "the graph consumed no answer"
REOPENED_LEAD = ":warning: Not applied, please decide again:"
DECIDED_NOTE_LEAD = ":information_source:"
"""Lead of the note on a card decided without a reviewer (expired, or its run failed)."""


# Decisions: button labels (plain) and what a decided card says happened.
DECISION_BUTTONS: dict[str, str] = {
    "approve": "Approve",
    "edit": "Edit",
    "reject": "Reject",
    "respond": "Respond",
    "ignore": "Ignore",
}
OUTCOMES: dict[str, tuple[str, str]] = {
    "approve": ("✅", "Approved"),
    "edit": ("✏️", "Edited"),
    "reject": ("❌", "Rejected"),
    "respond": ("💬", "Responded"),
    "ignore": ("⏭️", "Ignored"),
}
"""Decision type -> ``(emoji, verb)``, as in "✅ *Approved* by …" (lower-cased in a
reminder, "it will be rejected automatically")."""
CLOSED_OUTCOME = ("🚫", "Closed")
"""A request closed before anyone decided (its run failed)."""
EXPIRY_VERBS: dict[str, str] = {"approve": "approved", "reject": "rejected", "respond": "answered"}
"""Decision type -> what the policy's default decision did, for :func:`expiry_note`."""
DECIDED_VERB = "decided"
"""What a default decision does when no verb above says it (e.g. none is set)."""
REASON_LEAD = "*Reason:*"
ANSWER_LEAD = "*Answer:*"


def outcome_line(emoji: str, verb: str, *, user_id: str | None, when: str | None) -> str:
    """What happened to a request, e.g. "✅ *Approved* by <@U1> <!date^…>": ``user_id``
    a Slack user ID safe inside ``<@…>`` (``None``: no one decided), ``when`` a Slack
    date (``None``: unknown)."""
    line = f"{emoji} *{verb}*"
    if user_id:
        line += f" by <@{user_id}>"
    if when is not None:
        line += f" {when}"
    return line


# Cards and run messages (mrkdwn). ``name`` arguments are already escaped inline code.
CARD_ASKS_LABEL = ":question: *The agent asks you:*"
CARD_APPROVAL_LABEL = ":raised_hand: *Approval needed:*"
CARD_DECIDED_LABEL = "*Tool call:*"
CARD_EDITED_LABEL = "*Tool call, as edited:*"
CARD_SHORTENED = "Some of this card is shortened here."
VIEW_FULL_ARGS_BUTTON = "View full arguments"
EDIT_CHANGED_LEAD = "*What the edit changed:*"
PENDING_EDIT_LEAD = "*Edited, waiting for more approvals. What the edit changed:*"
NOTHING_CHANGED = "_No argument changed._"
CALL_SUCCEEDED = "▶️ *The call ran and succeeded.*"


def call_failed_text(run_id: str) -> str:
    """A card's line once its call failed: one sentence, no error text (logs have it)."""
    return f"⚠️ *The call ran and failed.* Details are in the worker's log (run {run_id})."


def more_changes_text(count: int) -> str:
    """After the changes an edit made that fit on a card."""
    return f"…and {count} more {'argument' if count == 1 else 'arguments'} changed."


def arg_added(name: str) -> str:
    """The title of an argument an edit added."""
    return f"{name} (added)"


def arg_removed(name: str) -> str:
    """The title of an argument an edit removed."""
    return f"{name} (removed)"


RUN_DONE_STATUS = (":white_check_mark: *Done*", "Done")
RUN_FAILED_STATUS = (":x: *Failed*", "Failed")
RUN_WORKING_STATUS = (":hourglass_flowing_sand: *Working on it*", "Working on")
NO_ANSWER = "(no answer)"
NO_OUTPUT = "_no output_"
ARGUMENTS_SHORTENED = "Arguments shortened."
NO_ARGUMENTS = "_No arguments._"
ARGUMENTS_TITLE = "*Arguments*"
"""Over all the arguments in one JSON object (a call with very many arguments)."""
REMINDER_SOON = "soon"
"""A reminder's ``when`` for a request with no expiry time."""


def approval_fallback(tool_name: str, description: str) -> str:
    """Notification text of a pending card (raw: the caller escapes and cuts it)."""
    return f"Approval needed: {tool_name}" + (f" — {description}" if description else "")


RUN_THREAD_LINK = "Open the run's thread"
REASON_FROM_AGENT_LEAD = "*Why, in the agent's words:*"
TASK_HEADING = "*Task*"


def asked_by_text(who: str) -> str:
    """A card's context: who started the run (a name as text, never a mention)."""
    return f"Asked by {who}"


def task_line(task: str) -> str:
    """A card's context: the run's task (escaped, on one line)."""
    return f"Task: {task}"


def run_context_text(name: str) -> str:
    """The context line of a run's first message, e.g. "Run `run-1a2b`"."""
    return f"Run {name}"


def tool_result_fallback(tool_name: str, content: str, *, ok: bool) -> str:
    """Notification text of a tool's result in the run's thread (raw)."""
    return f"{tool_name} {'returned' if ok else 'failed'}: {content}"


def run_failed_fallback(run_id: str) -> str:
    """Notification text of a run's failure (raw)."""
    return f"The run failed; details are in the worker's log (run {run_id})."


def run_failed_text(run_id: str) -> str:
    """A run's failure in its Slack thread: one sentence, never the exception's text
    (it can hold server paths and data); ``run_id`` as inline code."""
    return f":x: *The run failed*; details are in the worker's log (run {run_id})."


def tool_failed_text(name: str, run_id: str) -> str:
    """A tool's failure in the run's Slack thread, instead of its error text; ``name``
    and ``run_id`` as inline code."""
    return f":x: {name} failed; details are in the worker's log (run {run_id})."


def output_not_posted_text(name: str) -> str:
    """A tool call that ran whose output the policy keeps out of Slack (``post_results``)."""
    return f":white_check_mark: {name} ran; its output is not posted here (policy `post_results`)."


def tool_ran_fallback(tool_name: str, *, ok: bool) -> str:
    """Notification text of a tool result shown without its output (raw)."""
    return f"{tool_name} {'ran' if ok else 'failed'}"


REDACTED = "•••• (redacted)"
"""Shown instead of the value of an argument whose key the policy's ``redact`` names:
never its length or any part of it."""
REDACTED_CHANGED = "•••• (redacted, changed)"
"""Shown instead of a redacted value an edit changed (the value itself stays hidden)."""
REDACTED_HINT = "Redacted: leave empty to keep the current value, or type a new one."
"""The hint of an edit form input whose value is redacted (shown empty)."""
REDACTED_JSON_HINT = f"Leave “{REDACTED}” as it is to keep a redacted value."
"""The hint of a JSON input holding redacted values."""


def invisible_in_value_hint(value: str) -> str:
    """An edit field's hint when its value holds characters that hide or reorder text
    (``value`` is shown with them marked, ``[U+202E]``, as on the card)."""
    return f"This value holds invisible characters; marked, it reads: {value}"


def ran_without_review_fallback(tool_name: str) -> str:
    """Notification text of :func:`ran_without_review_heading` (raw)."""
    return f"{tool_name} ran without review"


UNNAMED_TOOL = "tool"
"""The name a tool result without one is posted under."""


def as_edited_tool_name(tool_name: str) -> str:
    """How a reviewer-edited call's tool is named over its result (raw)."""
    return f"{tool_name} (as edited)"


def progress_text(decided: int, batch_size: int) -> str:
    """A batched card's progress, e.g. "1 of 2 decided"."""
    return f"{decided} of {batch_size} decided"


def call_position_text(index: int, batch_size: int) -> str:
    """Which call of its batch a card is, e.g. "Call 2 of 3" (``index`` from 0)."""
    return f"Call {index + 1} of {batch_size}"


def answered_heading(name: str, answered: str) -> str:
    """The heading of a call a reviewer decided not to run, in the run's Slack thread."""
    if answered == "reject":
        return f":x: {name} was rejected by its reviewer; the agent is told:"
    return f":speech_balloon: {name} was answered by its reviewer instead of running:"


def answered_fallback(tool_name: str, answered: str) -> str:
    """Notification text of a call a reviewer decided not to run (raw)."""
    return f"{tool_name} {'rejected' if answered == 'reject' else 'answered'}"


def tool_result_heading(name: str, *, ok: bool) -> str:
    """The heading of a tool's result in the run's Slack thread."""
    return f":white_check_mark: {name} returned:" if ok else f":x: {name} failed:"


def shortened_text(what: str, total_chars: int) -> str:
    """A note under a cut value, e.g. "Output shortened: 12,000 characters in all."."""
    return f"{what} shortened: {total_chars:,} characters in all."


def output_shortened_text(total_chars: int) -> str:
    """The note under a tool's cut output."""
    return shortened_text("Output", total_chars)


def answer_shortened_text(total_chars: int) -> str:
    """The note under a cut final answer."""
    return shortened_text("Answer", total_chars)


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
    return f":information_source: {name} ran without review (its `when` rule let it through)."


# Modals (intros are mrkdwn; titles, labels and buttons are plain, at most 24 characters).
EDIT_TITLE, EDIT_SUBMIT = "Edit tool call", "Run with edits"
REJECT_TITLE, REJECT_SUBMIT, REASON_LABEL = "Reject tool call", "Reject", "Reason"
RESPOND_TITLE, RESPOND_SUBMIT, ANSWER_LABEL = "Respond to the agent", "Send", "Your answer"
FULL_ARGS_TITLE, CLOSE_BUTTON, CANCEL_BUTTON = "Full arguments", "Close", "Cancel"
NEW_ARGUMENTS_HEADING = "*New arguments*"
MODAL_SHORTENED = (
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


# The edit form: sections (mrkdwn), labels, hints and options (plain).
ARGS_JSON_LABEL = "Arguments (JSON)"
ARGS_JSON_HINT = "All arguments as one JSON object."
NO_ARGUMENTS_TO_EDIT = "This tool takes no arguments."
NOT_IN_SCHEMA_HINT = "Not in the tool's schema."
NONE_OPTION = "(none)"
"""The label of a select's ``null`` option."""


def args_kept_text(json_chars: int, input_chars: int) -> str:
    """An edit form whose arguments, as one JSON text, are too long for an input."""
    return (
        f"These arguments are {json_chars:,} characters of JSON, more than an input holds "
        f"({input_chars:,}), so they cannot be edited here and are kept as proposed. "
        "To change them, reject the call with a reason."
    )


def arg_kept_text(name: str, chars: int, input_chars: int) -> str:
    """One argument too long for an input, shown read-only over a preview of it."""
    return (
        f"{name} is {chars:,} characters, more than an input holds ({input_chars:,}), "
        "so it cannot be edited here and is kept as proposed. "
        "To change it, reject the call with a reason."
    )


def json_field_hint(hint: str) -> str:
    """The hint of an argument edited as JSON, after its own description ``hint``."""
    return f"{hint} (a JSON value)" if hint else "A JSON value."


def default_placeholder(shown: str) -> str:
    """The placeholder of an absent argument with a default (the caller cuts it)."""
    return f"Default: {shown}"


# Field messages of the edit form and the argument schema check (plain: modal field
# errors, and notes on a card). "At items[2].name: Must be a string." says where.
REQUIRED_PLAIN = "This field is required."
NOT_TEXT_PLAIN = "This holds a character that is not text (a lone surrogate); remove it."
UNKNOWN_ARGUMENT_PLAIN = "The tool has no argument with this name."
PATTERN_TOO_SLOW_PLAIN = (
    "This value could not be checked against the pattern in time: shorten or change it."
)
SCHEMA_TOO_SLOW_PLAIN = (
    "This tool's argument schema uses unevaluatedProperties with patternProperties, which "
    "cannot be checked here in bounded time: an edit of it is refused (approve or reject "
    "the call as proposed)."
)
ARGS_NOT_OBJECT_PLAIN = "The arguments must be a JSON object."
NOT_JSON_OBJECT_PLAIN = 'Must be a JSON object, like {"name": "value"}.'
CHOOSE_LISTED_PLAIN = "Choose one of the listed values."
TYPE_WORDS: dict[str, str] = {
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "object": "an object",
    "array": "a list",
    "null": "null",
}
"""JSON schema type -> how a message names it (an unknown type is named as is)."""


def wrong_type_plain(types: Sequence[str]) -> str:
    """A value of none of ``types``, e.g. "Must be a whole number or null."."""
    return "Must be " + " or ".join(TYPE_WORDS.get(t, t) for t in types) + "."


WHOLE_NUMBER_PLAIN = wrong_type_plain(["integer"])  # "Must be a whole number."
NUMBER_PLAIN = wrong_type_plain(["number"])  # "Must be a number."


def invalid_json_plain(error: str) -> str:
    """Text that does not parse, with the parser's plain reason."""
    return f"Not valid JSON: {error}"


def at_path_plain(where: str, message: str) -> str:
    """``message`` about a part inside an argument's value, e.g. ``where`` "items[2]"."""
    return f"At {where}: {message}"


def one_of_plain(shown: Sequence[str], *, more: bool) -> str:
    """A value outside an ``enum``: ``shown`` are allowed values as JSON text, ``more``
    whether some are left out."""
    return f"Must be one of: {', '.join(shown)}{', …' if more else ''}."


def const_plain(shown: str) -> str:
    """A value other than a ``const``; ``shown`` is it as JSON text."""
    return f"Must be {shown}."


def schema_keyword_plain(keyword: str, value: Any) -> str | None:
    """The message of a failed JSON schema ``keyword`` whose schema value is ``value``
    (a length, a bound, a pattern, a format), or ``None`` for a keyword not listed."""
    messages = {
        "minLength": f"Must be at least {_count(value, 'character')} long.",
        "maxLength": f"Must be at most {_count(value, 'character')} long.",
        "minimum": f"Must be at least {value}.",
        "maximum": f"Must be at most {value}.",
        "exclusiveMinimum": f"Must be greater than {value}.",
        "exclusiveMaximum": f"Must be less than {value}.",
        "multipleOf": f"Must be a multiple of {value}.",
        "pattern": f"Must match the pattern {value}.",
        "format": f"Must be a valid {value}.",
        "minItems": f"Must have at least {_count(value, 'item')}.",
        "maxItems": f"Must have at most {_count(value, 'item')}.",
        "uniqueItems": "Must not contain the same item twice.",
        "minProperties": f"Must have at least {_count(value, 'field')}.",
        "maxProperties": f"Must have at most {_count(value, 'field')}.",
    }
    return messages.get(keyword)


def missing_fields_plain(names: Sequence[str]) -> str:
    """Fields missing inside an argument's value (a missing argument is
    ``REQUIRED_PLAIN`` on its own input)."""
    return "Missing required field " + ", ".join(repr(n) for n in names) + "."


def unexpected_fields_plain(names: Sequence[str]) -> str:
    """Fields an argument's value has that its schema does not allow."""
    return "Unexpected field " + ", ".join(repr(n) for n in names) + "."


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


# Policy defaults (a policy file may replace them).
DEFAULT_DESCRIPTION_PREFIX = "Tool execution requires approval"
"""A card's description of a tool whose policy gives none (``description_prefix``)."""
DEFAULT_TIMEOUT_MESSAGE = (
    "No reviewer decided within {timeout}, so the call was not run. Do not retry it; "
    "tell the user it is waiting for approval."
)
"""The reason a time-limited request's default decision gives the model, also shown on
its decided card (``timeout_message``; ``{timeout}`` becomes e.g. "1 h")."""


# The demo (bot/demo.py), printed in the terminal.
DEMO_OWN_AGENT_HINT = (
    "Your own AGENT: nothing was sent. On the page, as alice, type /agent and a task; with "
    'MODEL=scripted a JSON task proposes exactly its calls, e.g. /agent {"tool_calls": '
    '[{"name": "send_email", "args": {"to": "grace@partner.test", "subject": "Hi", '
    '"body": "Hello"}}]} (or pass --task).'
)
DEMO_OWN_AGENT_NEEDS_TASK = (
    "--unattended with your own AGENT needs --task: the demo's own task calls the demo's "
    "tools, which your agent does not have (with MODEL=scripted, a JSON task such as "
    '{"tool_calls": [{"name": "<your tool>", "args": {...}}]} proposes exactly those calls).'
)

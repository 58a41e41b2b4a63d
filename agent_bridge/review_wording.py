"""Every sentence a Slack user reads about who may decide, start or see something.

The companion of ``agent_bridge.wording`` (same rules: mrkdwn ``*_TEXT`` for messages,
``*_PLAIN`` for modal field errors), for authorization, quorum, escalation, routing and
run starts. Mentions passed in (``mentions``) are built by ``bot.review_blocks`` from the
policy's IDs, never from agent text; tool names passed in are already escaped.
"""

from __future__ import annotations

from collections.abc import Sequence

# Why a click, a modal or a submission is refused (private answers; the card says more).
OTHER_WORKSPACE_TEXT = (
    ":no_entry: You can't decide this request: it belongs to another Slack workspace "
    "than yours. Nothing was recorded."
)
UNKNOWN_INSTALLATION_TEXT = (
    ":no_entry: Nothing was recorded: this app could not tell which workspace it is "
    "installed in. Please try again; if it persists, tell the app's admin."
)
NO_WORKSPACE_TEXT = (
    ":no_entry: Nothing was recorded: this request was stored before requests kept their "
    "Slack workspace, and its run has none, so nobody can be shown to be allowed to decide "
    "it. Tell the app's admin."
)
NOT_THIS_CARD_TEXT = (
    ":no_entry: That button does not belong to this request's current card (the card was "
    "replaced or the click was altered). Nothing was recorded; use the newest card."
)
VIEW_NOT_OPENED_PLAIN = (
    "Not recorded: this form was not opened for you on this request. Close it and click "
    "the button on the card again."
)
CALL_CHANGED_TEXT = (
    ":arrows_counterclockwise: Not recorded: the call was changed since this card was drawn. "
    "The card now shows the new version; decide on that one."
)
CALL_CHANGED_PLAIN = (
    "Not recorded: the call was changed since this form was opened. Close it and look at "
    "the card again."
)
CALL_REISSUED_NOTE = (
    "The call changed after it was decided (its arguments or tool call are not the ones "
    "reviewed), so that decision was not applied. Decide again on the call shown here."
)
DECISION_UNOFFERED_NOTE = (
    "The decision given is not one this call offers now, so it was not applied. Decide "
    "again with the buttons shown here."
)
ALREADY_APPROVED_TEXT = (
    ":ballot_box_with_check: You already approved this call; one person counts once. "
    "It still needs another approver."
)


def not_approver_text(tool_name: str) -> str:
    """A click by someone the tool's policy does not name."""
    return (
        f":no_entry: You are not an approver of {tool_name}: only the people and groups "
        "named on the card can decide it. Nothing was recorded."
    )


def four_eyes_text(tool_name: str, *, can_reject: bool) -> str:
    """The person who started the run tried to approve, edit or respond."""
    still = " You can still reject it." if can_reject else ""
    return (
        f":no_entry: You started this run, so someone else must review its {tool_name} "
        f"call (four eyes).{still} Nothing was recorded."
    )


def cannot_check_text(groups: str) -> str:
    """The approver list could not be read; it fails closed."""
    return (
        f":warning: Nothing was recorded: the approver groups ({groups}) could not be read "
        "from Slack just now, so nobody can decide this request. Please try again shortly."
    )


def approvals_unjudged_text(groups: str) -> str:
    """An approval that would count with earlier ones nobody can check now (an approver
    group could not be read); it fails closed, keeping theirs."""
    return (
        f":warning: Nothing was recorded: the approver groups ({groups}) could not be read "
        "from Slack just now, so whether the earlier approvals of this request still count "
        "cannot be checked, and yours cannot be counted with them. Please try again shortly."
    )


ADMIN_MUST_ACT = (
    "Trying again will not help: tell the app's admin (the app needs the `usergroups:read` "
    "scope and a valid token, in a Slack plan with user groups)."
)


def approvers_refused_text(groups: str) -> str:
    """Slack refuses to list an approver group (``groups``: each with Slack's error code),
    for a reason that does not pass by itself; it fails closed."""
    return (
        f":warning: Nothing was recorded: Slack refuses to list the approver groups "
        f"({groups}), so nobody can decide this request. {ADMIN_MUST_ACT}"
    )


def approvals_refused_text(groups: str) -> str:
    """``approvals_unjudged_text`` when Slack refuses to list the groups (``groups``: each
    with Slack's error code) for a reason that does not pass by itself."""
    return (
        f":warning: Nothing was recorded: Slack refuses to list the approver groups "
        f"({groups}), so whether the earlier approvals of this request still count cannot "
        f"be checked, and yours cannot be counted with them. {ADMIN_MUST_ACT}"
    )


def requesters_refused_text(groups: str) -> str:
    """Slack refuses to list a requester group (``groups``: each with Slack's error code)
    for a reason that does not pass by itself; it fails closed."""
    return (
        f":warning: Nothing was queued: Slack refuses to list the groups allowed to start "
        f"runs ({groups}). {ADMIN_MUST_ACT}"
    )


MENTION_IN_THREAD_TEXT = (
    "A mention in a thread does not start a run (nor answer this one). To start a run, "
    "mention me in a new message or use `/agent <task>`; to decide, use the card's buttons."
)


def unknown_groups_text(groups: str) -> str:
    """The policy names user groups Slack does not know; it fails closed."""
    return (
        f":warning: Nothing was recorded: the policy names approver groups Slack does not "
        f"know ({groups}), so nobody can decide this request. Tell the app's admin to fix "
        "the policy's `approvers`."
    )


def plain(text: str) -> str:
    """A refusal sentence for a modal field error (no mrkdwn, no emoji code)."""
    words = text.split(" ", 1)
    body = words[1] if len(words) == 2 and words[0].startswith(":") else text
    return body.replace("*", "")


# Quorum and escalation on the card (mrkdwn context lines).
def approvers_line(mentions: str) -> str:
    """Who may decide, mentioned (the only live mentions the product sends)."""
    return f"Approvers: {mentions}"


def quorum_line(approved: str, needed: int, required: int) -> str:
    """How many approvals the call has and needs; ``approved`` lists who (names)."""
    if not approved:
        return f"Needs {required} approvals from different people."
    more = "1 more approval" if needed == 1 else f"{needed} more approvals"
    return f"Approved by {approved} · {more} needed (of {required})."


def time_limit_line(when: str, outcome: str, *, reminded: bool) -> str:
    """The card's review time limit: ``when`` a Slack date, ``outcome`` e.g. "rejected"."""
    lead = ":alarm_clock: Reminder sent. " if reminded else ":stopwatch: "
    return f"{lead}If no one decides by {when}, it will be {outcome} automatically."


def escalated_line(mentions: str) -> str:
    """The card after escalation: the backup approvers may decide too."""
    return f":arrow_double_up: Escalated to {mentions}: they may decide too."


def escalation_text(tool_name: str, mentions: str, waited: str) -> str:
    """Posted under the card (and notifying the backup) when it is escalated."""
    return (
        f":arrow_double_up: {mentions}: {tool_name} has waited {waited} for a decision; "
        "you may decide it now."
    )


def edit_pending_line(editor: str) -> str:
    """An edit waiting for more approvals: the card shows the edited arguments."""
    return f":pencil2: Edited by {editor}; the arguments below are the edited ones."


_EDIT_WITHHELD = {
    "no_call_id": (
        "the model gave this call an empty ID, and the agent answers calls by ID: an edit "
        "would be dropped and the call run as the model asked",
        "would answer every call of the turn with an empty ID",
    ),
    "shared_call_id": (
        "the model gave this call's ID to other calls of the same turn too, and the agent "
        "answers calls by ID: an edit would run in place of all of them",
        "would answer all of them",
    ),
    "ambiguous_call": (
        "the model made this same call more than once in this turn, not every time with "
        "an ID of its own, so an edit might not run for the call reviewed",
        None,
    ),
    "unknown_call": (
        "this call is not among the messages the bridge can read (a tool's own agent "
        "asked for it), so whether an edit would run for it alone cannot be told",
        None,
    ),
}
_ANSWERS = {"reject": "a rejection", "respond": "a response"}


def edit_withheld_line(why: str, offered: Sequence[str]) -> str:
    """Why a batched card offers no Edit (``models.EditWithheld``), on the card, with
    what a rejection or a response of it would do, if the card ``offered`` them."""
    lead, answers = _EDIT_WITHHELD[why]
    answering = " or ".join(_ANSWERS[d] for d in ("reject", "respond") if d in offered)
    also = f", and {answering} {answers}" if answers and answering else ""
    return f":information_source: No Edit here: {lead}{also}."


def approvals_list(approvers: str) -> str:
    """A decided card's approvers (quorum), e.g. "Approved by A and B"."""
    return f"Approvals: {approvers}"


# The run's own Slack thread: a pointer to a card posted elsewhere, later its outcome.
def pointer_text(tool_name: str, channel: str, link: str | None) -> str:
    """One line in the run's thread: where its card waits (``link``: its permalink)."""
    card = f": <{link}|open the card>" if link else ""
    return f":hourglass: {tool_name} waits for approval in {channel}{card}"


def pointer_reminded_text(tool_name: str, channel: str, link: str | None, deadline: str) -> str:
    """The pointer once a reminder went out: ``deadline`` says by when and what then."""
    card = f": <{link}|open the card>" if link else ""
    return f":alarm_clock: {tool_name} still waits for approval in {channel}{card}. {deadline}"


def expired_outcome(outcome: str) -> str:
    """A pointer's outcome when no one decided in time: ``outcome`` e.g. "❌ Rejected"."""
    return f"{outcome} automatically (no one decided in time)"


def pointer_escalated_text(tool_name: str, channel: str, link: str | None) -> str:
    """The pointer once the card is escalated to its backup approvers."""
    card = f": <{link}|open the card>" if link else ""
    return f":arrow_double_up: {tool_name} was escalated and still waits in {channel}{card}"


def pointer_outcome_text(outcome: str, tool_name: str, channel: str, link: str | None) -> str:
    """The pointer once the card is decided: ``outcome`` is e.g. "✅ Approved"."""
    card = f" (<{link}|the card>)" if link else ""
    return f"{outcome}: {tool_name} in {channel}{card}"


def decided_by_text(who: str) -> str:
    """After the pointer's outcome: who decided (``who`` a mention of the reviewer)."""
    return f"by {who}"


def cannot_post_text(tool_name: str, channel: str, code: str) -> str:
    """Told privately to the person who started the run when its card cannot be posted."""
    return (
        f":warning: Your run is waiting: I can't post the approval card for {tool_name} in "
        f"{channel} (Slack says `{code}`). Invite me there (`/invite @agent` in that "
        "channel) or ask an admin to fix the policy's `channel`; I'll keep trying."
    )


# Starting runs.
NOT_A_REQUESTER_TEXT = (
    ":no_entry: You can't start runs of this agent: its policy names who may "
    "(`requesters`). Nothing was queued."
)
BOT_NEVER_STARTS = "messages from bots never start runs"
NO_WORKER_TEXT = (
    ":warning: Nothing was queued: no worker has started for this agent yet, so I can't "
    "tell who may use it. Try again in a minute, or ask the app's admin."
)


def requesters_unknown_text(groups: str) -> str:
    """The policy names requester groups Slack does not know; it fails closed."""
    return (
        f":warning: Nothing was queued: the policy names groups Slack does not know "
        f"({groups}) as `requesters`. Tell the app's admin to fix the policy."
    )


def requesters_unresolved_text(groups: str) -> str:
    """The requester groups could not be read; it fails closed."""
    return (
        f":warning: Nothing was queued: the groups allowed to start runs ({groups}) could "
        "not be read from Slack just now. Please try again shortly."
    )


def too_many_runs_text(limit: int) -> str:
    """The person is at the policy's ``max_active_runs_per_user``."""
    runs = "1 run" if limit == 1 else f"{limit} runs"
    return (
        f":no_entry: Nothing was queued: you already have {runs} queued, running or "
        "waiting for approval (the most this agent allows). Finish or reject one first."
    )

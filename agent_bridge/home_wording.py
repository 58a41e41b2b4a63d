"""The sentences of the App Home inbox and of answers given in a run's Slack thread.

Plain mrkdwn of the product's own words; agent text is framed by the renderers
(``bot.home_blocks``), never here.
"""

from __future__ import annotations

HOME_TITLE = "Waiting for you"
HOME_EMPTY = "Nothing waits for your decision. :sparkles:"
RECENT_TITLE = "Your recent decisions"
RECENT_EMPTY = "You have decided nothing in the last two weeks."
HOME_SHORTENED = "Showing the newest {shown} of {total}; older ones are on their cards."
OPEN_CARD = "Open the card"
HOME_UNAVAILABLE = (
    ":warning: Your inbox cannot be read right now (the database is unreachable). "
    "Open the Home tab again in a moment."
)

DECIDED_VERBS = {
    "approve": "Approved",
    "edit": "Edited",
    "reject": "Rejected",
    "respond": "Answered",
    "ignore": "Ignored",
}

SEVERAL_QUESTIONS_TEXT = (
    ":point_up: This run waits on several answers; use the *Respond* button on the card "
    "you mean to answer. Nothing was recorded from your reply."
)
ANSWER_RECORDED_FALLBACK = "Answer recorded"


def waiting_line(age: str, since: str, link: str | None) -> str:
    """``waiting 5 min (since <date>) · <link|Open the card>``."""
    line = f"waiting {age} (since {since})"
    return f"{line} · <{link}|{OPEN_CARD}>" if link else line


def decided_line(verb: str, tool: str, when: str) -> str:
    """``Approved `tool` <date>``."""
    return f"{verb} {tool} {when}"


def age_text(seconds: float) -> str:
    """``42 s``, ``5 min``, ``3 h``, ``2 d``: how long a request has waited."""
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit}"
    return f"{int(seconds)} s"

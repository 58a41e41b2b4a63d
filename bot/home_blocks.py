"""The App Home tab: a reviewer's inbox, drawn as a Block Kit ``home`` view.

A pure function of data (no client, no I/O), like the cards (``bot.blocks``): the
requests the viewer may decide, newest first (tool, short arguments, a SQL statement's
risk as its card shows it, how long it has waited, a link to its card, and the card's
own decision buttons: an Approve here is the card's), then the viewer's
recent decisions. Agent text is in the cards' frames (``bot.mrkdwn``: names and values
as escaped inline code, every text object verbatim), drawn from ``redacted()``
requests. The view's ``private_metadata`` names whose inbox it is (``ids.home_metadata``),
which is how a click in it is authorized (``bot.authorization``).

Limits (https://docs.slack.dev/surfaces/app-home, https://docs.slack.dev/reference/block-kit/blocks):
100 blocks per view, 3,000 characters per section text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent_bridge import home_wording
from agent_bridge.models import ApprovalRequest
from bot import ids
from bot.arg_blocks import arg_text
from bot.blocks import decision_actions
from bot.mrkdwn import inline_code, slack_date, text_object
from bot.review_blocks import edit_withheld_line
from bot.risk_blocks import risk_section

HOME_REQUESTS_MAX = 20
"""Requests shown (four blocks at most each, with a SQL risk section: 80 of the view's
100)."""
TOOL_NAME_MAX_CHARS = 100
ARG_NAME_MAX_CHARS = 40
ARG_VALUE_MAX_CHARS = 80
ARGS_SHOWN_MAX = 3
"""Arguments shown per request; the card has them all."""
_LINK_FORBIDDEN = frozenset("<>| \n")


@dataclass(frozen=True)
class InboxItem:
    """One pending request the viewer may decide, and its card's permalink (if known)."""

    request: ApprovalRequest
    link: str | None = None


def render_home(
    user_id: str,
    *,
    pending: Sequence[InboxItem],
    decided: Sequence[ApprovalRequest],
    now: float,
) -> dict[str, Any]:
    """Render ``user_id``'s Home view.

    Args:
        user_id: The viewer (named in ``private_metadata``).
        pending: Requests they may decide, newest first (more than
            ``HOME_REQUESTS_MAX`` are counted, not shown).
        decided: Their recent decisions, newest first.
        now: Unix time in seconds (the requests' ages).

    Returns:
        The view object for ``views.publish``.
    """
    shown = list(pending)[:HOME_REQUESTS_MAX]
    blocks: list[dict[str, Any]] = [_header(home_wording.HOME_TITLE)]
    if not shown:
        blocks.append(_section(home_wording.HOME_EMPTY))
    for item in shown:
        blocks.extend(_pending(item, now))
    if len(pending) > len(shown):
        text = home_wording.HOME_SHORTENED.format(shown=len(shown), total=len(pending))
        blocks.append(_context(text))
    blocks.append({"type": "divider"})
    blocks.append(_header(home_wording.RECENT_TITLE))
    lines = [_decided_line(r) for r in decided if r.decision is not None]
    blocks.append(_section("\n".join(lines) if lines else home_wording.RECENT_EMPTY))
    return {
        "type": "home",
        "callback_id": ids.HOME_CALLBACK,
        "private_metadata": ids.home_metadata(user_id),
        "blocks": blocks,
    }


def short_args(args: dict[str, Any]) -> str:
    """The first ``ARGS_SHOWN_MAX`` arguments on one line: ``name`` ``value`` pairs in
    escaped inline code (a line break is ``⏎``), then ``…`` when some are left out."""
    parts = [
        f"{inline_code(str(name), ARG_NAME_MAX_CHARS)} "
        f"{inline_code(arg_text(value), ARG_VALUE_MAX_CHARS)}"
        for name, value in list(args.items())[:ARGS_SHOWN_MAX]
    ]
    if len(args) > ARGS_SHOWN_MAX:
        parts.append("…")
    return " · ".join(parts)


def safe_link(link: str | None) -> str | None:
    """``link`` if it is an ``http(s)`` URL that cannot leave a ``<url|label>`` link."""
    if link is None or not link.startswith(("https://", "http://")):
        return None
    return None if any(c in _LINK_FORBIDDEN for c in link) else link


def _pending(item: InboxItem, now: float) -> list[dict[str, Any]]:
    request = item.request.redacted()
    tool = inline_code(request.tool_name, TOOL_NAME_MAX_CHARS)
    args = short_args(request.current_args)
    age = home_wording.age_text(now - request.created_at)
    waiting = home_wording.waiting_line(age, slack_date(request.created_at), safe_link(item.link))
    withheld = edit_withheld_line(request)  # why its buttons lack Edit, as on its card
    if withheld is not None:
        waiting += "\n" + withheld
    risk, _ = risk_section(request)  # what a SQL statement would do, as on its card
    return [
        _section(f"*{tool}*\n{args}" if args else f"*{tool}*"),
        *risk,
        _context(waiting),
        *decision_actions(request),
    ]


def _decided_line(request: ApprovalRequest) -> str:
    assert request.decision is not None
    verb = home_wording.DECIDED_VERBS.get(request.decision.type, request.decision.type)
    tool = inline_code(request.tool_name, TOOL_NAME_MAX_CHARS)
    when = slack_date(request.decided_at or request.created_at)
    return home_wording.decided_line(verb, tool, when)


def _header(text: str) -> dict[str, Any]:
    return {"type": "header", "text": {"type": "plain_text", "text": text}}


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": text_object(text)}


def _context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [text_object(text)]}

"""The SQL risk of a call as Block Kit: what its whole statement would do (pure).

One section, placed right under a card's heading (``bot.blocks``) and in the
full-arguments modal (``bot.modals``), so a DBA reads it before the statement: the risk
level with the statement kinds, the tables touched, each warning, and the affected rows
with how they were found (``agent_bridge.sql_risk``; the sentences are in
``agent_bridge.risk_wording``). It comes from the stored ``ApprovalRequest.risk``,
computed from the whole statement however much of the statement the card shows.

When the call shown is an edit (pending more approvals, or decided), the risk is read
again from the edited statement, in the same dialect; its rows are not estimated (the
web process has no estimate database).

Tables, functions and statement kinds are agent text: each is escaped as inline code
(``bot.mrkdwn``) with line breaks and other control characters shown as ``[U+000A]``,
so a table named ``<!channel>`` or holding a backtick and a line break stays inside its
code span.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from agent_bridge import risk_wording
from agent_bridge.models import ApprovalRequest
from agent_bridge.sql_risk import RiskWarning, SqlRisk, analyse
from bot.mrkdwn import escape, inline_code

RISK_MAX_CHARS = 1500
"""Characters of the risk section (of a card's ~12,000; ``bot.blocks``' budgets)."""
NAME_MAX_CHARS = 80
"""Characters of one table or function name shown (as inline code)."""
TABLES_SHOWN_MAX = 8
NAMES_SHOWN_MAX = 5
"""Names one warning shows; the rest are counted."""
WARNINGS_SHOWN_MAX = 8
_CONTROL_CATEGORIES = frozenset({"Cc", "Zl", "Zp"})


def risk_blocks(request: ApprovalRequest) -> list[dict[str, Any]]:
    """The risk section of ``request``'s card or modal; ``[]`` for a tool without ``sql``.

    Returns:
        One mrkdwn section of at most ``RISK_MAX_CHARS`` characters.
    """
    risk = shown_risk(request)
    if risk is None:
        return []
    lines = [
        risk_wording.level_line(risk.level, escape(", ".join(_one_line(k) for k in risk.kinds)))
    ]
    lines.append(f"{risk_wording.TABLES_LEAD} {_names(risk.tables, TABLES_SHOWN_MAX)}")
    for warning in risk.warnings[:WARNINGS_SHOWN_MAX]:
        lines.append(f"• {_warning(warning)}")
    if len(risk.warnings) > WARNINGS_SHOWN_MAX:
        lines.append(f"• +{len(risk.warnings) - WARNINGS_SHOWN_MAX}")
    if risk.rows is not None:
        lines.append(risk_wording.rows_text(risk.rows.rows, risk.rows.method, risk.rows.reason))
    elif _edited_args(request) is not None and request.risk and request.risk.rows:
        lines.append(f"{risk_wording.ROWS_LEAD} {risk_wording.EDIT_NOT_ESTIMATED}")
    text = "\n".join(lines)
    if len(text) > RISK_MAX_CHARS:  # only names can make it long; they are escaped already
        text = text[: RISK_MAX_CHARS - 1].rsplit("\n", 1)[0] + "\n…"
    return [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]


def shown_risk(request: ApprovalRequest) -> SqlRisk | None:
    """The risk of the call the card shows: the stored one, or the edit's, read again."""
    risk = request.risk
    edited = _edited_args(request)
    if risk is None or edited is None:
        return risk
    return analyse(edited.get(risk.argument), dialect=risk.dialect, argument=risk.argument)


def _edited_args(request: ApprovalRequest) -> dict[str, Any] | None:
    edit = request.pending_edit or request.decision
    if edit is None or edit.type != "edit":
        return None
    return dict(edit.edited_args or {})


def _warning(warning: RiskWarning) -> str:
    names = _names(warning.names, NAMES_SHOWN_MAX) if warning.names else ""
    return f":warning: {risk_wording.warning_text(warning.code, names)}"


def _names(names: tuple[str, ...], most: int) -> str:
    """Names as escaped inline code, ``most`` of them, then how many more."""
    if not names:
        return risk_wording.NO_TABLES
    shown = ", ".join(inline_code(_one_line(n), NAME_MAX_CHARS) for n in names[:most])
    return shown + (f" +{len(names) - most}" if len(names) > most else "")


def _one_line(name: str) -> str:
    """``name`` with line breaks and control characters shown as ``[U+000A]``."""
    return "".join(
        f"[U+{ord(c):04X}]" if unicodedata.category(c) in _CONTROL_CATEGORIES else c for c in name
    )

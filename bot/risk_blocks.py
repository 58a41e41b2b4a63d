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

Tables, functions and statement kinds are agent text: each table and function is escaped
as inline code and the kinds on one line (``bot.mrkdwn``: a line break shows as ``⏎``, a
backtick and other invisible characters as ``[U+XXXX]``), so a table named ``<!channel>``
or holding a backtick and a line break stays inside its code span.
"""

from __future__ import annotations

from typing import Any

from agent_bridge import risk_wording
from agent_bridge.models import ApprovalRequest
from agent_bridge.sql_risk import RiskWarning, SqlRisk, analyse
from bot.mrkdwn import inline_code, one_line, split_escaped, text_object

SECTION_TEXT_MAX_CHARS = 3000
RISK_MAX_CHARS = 1500
"""Characters of the risk section (of a card's ~12,000; ``bot.blocks``' budgets)."""
NAME_MAX_CHARS = 80
"""Characters of one table or function name shown (as inline code)."""
TABLES_SHOWN_MAX = 8
NAMES_SHOWN_MAX = 5
"""Names one warning shows; the rest are counted."""
WARNINGS_SHOWN_MAX = 8
ALWAYS_SHOWN = (
    "several_statements",
    "executable_comment",
    "no_where",
    "constant_where",
    "merge_every_row",
    "replace_table",
    "truncate",
    "copy_program",
    "drop_in_alter",
    "rename_in_alter",
    "unparseable",
    "opaque_command",
    "too_long",
    "not_text",
    "ddl",
)
"""Warnings listed first, in this order, and never counted away however many others
there are: that the call is several statements (a harmless first one must not explain
away a later one), then what makes a statement destructive or not understood."""
KINDS_MAX_CHARS = 200


def risk_blocks(request: ApprovalRequest, *, whole: bool = False) -> list[dict[str, Any]]:
    """The risk section of ``request``'s card or modal; ``[]`` for a tool without ``sql``.

    Args:
        request: The request.
        whole: Every table, warning and name in full, over as many sections as it takes
            (the full-arguments modal); else one section of at most ``RISK_MAX_CHARS``,
            the rest counted (``risk_section`` says whether anything was).
    """
    if not whole:
        return risk_section(request)[0]
    lines, _ = _lines(request, whole=True)
    pieces = split_escaped("\n".join(lines), SECTION_TEXT_MAX_CHARS) if lines else []
    return [{"type": "section", "text": text_object(piece)} for piece in pieces]


def risk_section(request: ApprovalRequest) -> tuple[list[dict[str, Any]], bool]:
    """The card's risk section (as ``risk_blocks``), and whether it leaves anything out
    (a table, a warning, a name cut, or the section's length): the card then offers the
    full-arguments modal, which shows it whole."""
    lines, omitted = _lines(request, whole=False)
    if not lines:
        return [], False
    text = "\n".join(lines)
    if len(text) > RISK_MAX_CHARS:  # only names can make it long; they are escaped already
        text = text[: RISK_MAX_CHARS - 1].rsplit("\n", 1)[0] + "\n…"
        omitted = True
    return [{"type": "section", "text": text_object(text)}], omitted


def _lines(request: ApprovalRequest, *, whole: bool) -> tuple[list[str], bool]:
    """The risk section's lines, and whether a cap left something out."""
    risk = shown_risk(request)
    if risk is None:
        return [], False
    name_chars = SECTION_TEXT_MAX_CHARS // 2 if whole else NAME_MAX_CHARS
    most_tables = len(risk.tables) if whole else TABLES_SHOWN_MAX
    most_names = None if whole else NAMES_SHOWN_MAX
    lines = [
        risk_wording.level_line(risk.level, one_line(", ".join(risk.kinds), KINDS_MAX_CHARS)[0])
    ]
    lines.append(f"{risk_wording.TABLES_LEAD} {_names(risk.tables, most_tables, name_chars)}")
    warnings = sorted(risk.warnings, key=_priority)
    shown = [
        w
        for i, w in enumerate(warnings)
        if whole or i < WARNINGS_SHOWN_MAX or w.code in ALWAYS_SHOWN
    ]
    lines.extend(f"• {_warning(warning, most_names, name_chars)}" for warning in shown)
    if len(warnings) > len(shown):
        lines.append(f"• +{len(warnings) - len(shown)}")
    if risk.rows is not None:
        lines.append(risk_wording.rows_text(risk.rows.rows, risk.rows.method, risk.rows.reason))
        for text, changed in (
            (risk_wording.CASCADES_TEXT, risk.rows.cascades),
            (risk_wording.TRIGGERS_TEXT, risk.rows.triggers),
        ):
            if changed:
                lines.append(text.format(names=_names(changed, most_tables, name_chars)))
    elif _edited_args(request) is not None and request.risk and request.risk.rows:
        lines.append(f"{risk_wording.ROWS_LEAD} {risk_wording.EDIT_NOT_ESTIMATED}")
    also = (*risk.rows.cascades, *risk.rows.triggers) if risk.rows is not None else ()
    names = [*risk.tables, *also, *(n for w in risk.warnings for n in w.names)]
    omitted = (
        len(warnings) > len(shown)
        or len(risk.tables) > most_tables
        or (risk.rows is not None and len(risk.rows.cascades) > most_tables)
        or (risk.rows is not None and len(risk.rows.triggers) > most_tables)
        or any(len(w.names) > NAMES_SHOWN_MAX for w in risk.warnings)
        or any(len(inline_code(n, 10**6)) > name_chars for n in names)
    )
    return lines, omitted and not whole


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


def _priority(warning: RiskWarning) -> int:
    """Where ``warning`` goes in the list (``ALWAYS_SHOWN`` first, in its order)."""
    code = warning.code
    return ALWAYS_SHOWN.index(code) if code in ALWAYS_SHOWN else len(ALWAYS_SHOWN)


def _warning(warning: RiskWarning, most: int | None, name_chars: int) -> str:
    names = ""
    if warning.names:
        names = _names(warning.names, most or len(warning.names), name_chars)
    return f":warning: {risk_wording.warning_text(warning.code, names)}"


def _names(names: tuple[str, ...], most: int, name_chars: int) -> str:
    """Names as escaped inline code, ``most`` of them, then how many more."""
    if not names:
        return risk_wording.NO_TABLES
    shown = ", ".join(inline_code(n, name_chars) for n in names[:most])
    return shown + (f" +{len(names) - most}" if len(names) > most else "")

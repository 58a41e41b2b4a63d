"""The sentences about a SQL statement's risk and affected rows (with ``wording.py`` and
``review_wording.py``, every sentence a Slack user reads).

Names the statement holds (tables, functions, statement kinds) are agent text: the
functions here take them already rendered (``names``), so the Slack side passes
escaped inline code and the plain-text side (logs, the audit trail) the raw names.
"""

from __future__ import annotations

from collections.abc import Mapping

LEVEL_LABELS: Mapping[str, tuple[str, str]] = {
    "read_only": (":large_green_circle:", "Read-only"),
    "write": (":large_orange_circle:", "Writes data"),
    "destructive": (":red_circle:", "Destructive"),
    "unparseable": (":black_circle:", "Not understood"),
}
"""Risk level -> (emoji, label) on the card's risk line."""

WARNINGS: Mapping[str, str] = {
    "no_where": "{names} without WHERE: every row of the table",
    "constant_where": "{names} with a WHERE that names no column: every row of the table",
    "rename_in_alter": "ALTER ... RENAME renames {names}: what uses its old name breaks",
    "merge_every_row": "MERGE into {names} ON a condition that matches every row",
    "replace_table": "CREATE OR REPLACE replaces {names}: what it held is gone",
    "executable_comment": "Holds a MySQL {names} … */ comment, which MySQL runs: not analysed",
    "ddl": "Changes the schema ({names})",
    "truncate": "TRUNCATE empties {names}",
    "drop_in_alter": "ALTER ... DROP removes part of {names}",
    "several_statements": "{names} statements in one call",
    "unparseable": "Could not be read as {names} SQL; nothing about it is known",
    "opaque_command": "{names} is not analysed (an opaque command): treated as not understood",
    "cte_write": "A write hidden inside the statement ({names} in a WITH or subquery)",
    "select_into": "SELECT ... INTO creates {names}",
    "copy": "COPY moves data between {names} and a file or program",
    "copy_program": "COPY ... PROGRAM runs a shell command on the database server ({names})",
    "lock": "Takes locks ({names})",
    "unsafe_function": "Calls {names}, not on the known-safe list: may write",
    "too_long": "Too long to analyse ({names} characters): treated as not understood",
    "not_text": "The {names} argument is missing or not text",
}
"""Warning code -> sentence; ``{names}`` is filled by the caller (escaped on Slack)."""

RISK_LEAD = "*SQL risk:*"
TABLES_LEAD = "Tables:"
NO_TABLES = "no tables"
ROWS_LEAD = "Affected rows:"
EDIT_NOT_ESTIMATED = "not estimated for an edit"

ROW_METHODS: Mapping[str, str] = {
    "exact_count": "exact count",
    "planner_estimate": "planner estimate: the count took too long, and it can be far off",
}

UNAVAILABLE_REASONS: Mapping[str, str] = {
    "timeout": "the count and the planner's estimate took too long",
    "error": "the estimate query failed (details in the worker's logs)",
    "unsupported": "only a single UPDATE or DELETE of one table is estimated",
    "unreachable": "the estimate database could not be reached",
    "varies": (
        "its WHERE depends on who runs it or when (now(), current_user, random()...): "
        "a count now would not say what it does once approved"
    ),
    "unresolved": (
        "its WHERE reads a name that is no column of its tables, which PostgreSQL may "
        "read as a call of a function"
    ),
}
"""Why no affected-rows number is shown; never the raw error (it stays in the logs)."""


def warning_text(code: str, names: str) -> str:
    """One warning as a sentence, ``names`` already rendered for where it is shown."""
    return WARNINGS[code].format(names=names)


def level_line(level: str, kinds: str) -> str:
    """``:red_circle: *SQL risk:* Destructive · DELETE`` (``kinds`` already rendered)."""
    emoji, label = LEVEL_LABELS[level]
    return f"{emoji} {RISK_LEAD} {label}" + (f" · {kinds}" if kinds else "")


CASCADES_TEXT = (
    ":warning: Also changes rows of {names} (their foreign keys' CASCADE, SET NULL or "
    "SET DEFAULT): not counted"
)
TRIGGERS_TEXT = (
    ":warning: Fires {names} (triggers or rules on the table): what they do is not counted"
)
"""Said under the affected rows, names already rendered (``RowEstimate.cascades``,
``triggers``)."""


def rows_text(rows: int | None, method: str, reason: str | None) -> str:
    """``Affected rows: 1,204 (exact count)`` or why the number is unavailable."""
    if rows is None or method == "unavailable":
        why = UNAVAILABLE_REASONS.get(reason or "", UNAVAILABLE_REASONS["error"])
        return f"{ROWS_LEAD} unavailable ({why})"
    prefix = "about " if method == "planner_estimate" else ""
    return f"{ROWS_LEAD} {prefix}{rows:,} ({ROW_METHODS[method]})"

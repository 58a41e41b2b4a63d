"""Ready-made ``when`` predicates for the policy: review only the risky calls.

A predicate gets the middleware's ``ToolCallRequest`` and returns ``True`` to ask a
person, ``False`` to let the call run (the run's Slack thread notes it ran without review).
Both are pure functions of the call's arguments, so they give the same answer when the
run resumes, as ``HumanInTheLoopMiddleware`` requires. These are the two examples of
the LangChain HITL documentation::

    tools:
      write_file:
        when: agent_bridge.predicates:writes_outside_workspace
      execute_sql:
        when: agent_bridge.predicates:sql_is_not_read_only
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

SQL_DIALECTS = ("sqlite", "postgres", "mysql", "")
"""Dialects a query must read as read-only in ("" is sqlglot's default); include the
dialect of the database your tool runs SQL on."""
PATH_ARG = "path"
SQL_ARG = "query"
READ_ONLY_ROOTS = (exp.Select, exp.Union, exp.Intersect, exp.Except)
WRITING_NODES = (
    exp.Insert,
    exp.Update,
    exp.Delete,
    exp.Merge,
    exp.Create,
    exp.Drop,
    exp.Alter,
    exp.Into,
    exp.Command,
    exp.TruncateTable,
)


def writes_outside_workspace(request: Any) -> bool:
    """Review a write whose ``path`` is absolute or climbs out with ``..``.

    A relative path that stays inside the workspace runs without review.
    """
    path = str(request.tool_call["args"].get(PATH_ARG, ""))
    parts = PurePosixPath(path.replace("\\", "/")).parts
    depth = 0
    for part in parts:
        depth += -1 if part == ".." else 0 if part in (".", "") else 1
        if depth < 0:
            return True
    return not path or PurePosixPath(path).is_absolute() or path.startswith(("~", "\\"))


def sql_is_not_read_only(request: Any) -> bool:
    """Review SQL unless every statement is a plain read (``SELECT``, set operations).

    Parsed with sqlglot in each of ``SQL_DIALECTS``: dialects disagree on details such
    as nested ``/* */`` comments, so a statement counts as read-only only if every one
    of them reads it so. Anything unparsable is reviewed, as are ``SELECT ... INTO``
    and writes hidden in a CTE.
    """
    query = str(request.tool_call["args"].get(SQL_ARG, ""))
    return not all(_reads_only(query, dialect) for dialect in SQL_DIALECTS)


def _reads_only(query: str, dialect: str) -> bool:
    """Whether sqlglot's ``dialect`` parses ``query`` as reads only."""
    try:
        statements = [s for s in sqlglot.parse(query, read=dialect or None) if s is not None]
    except SqlglotError:
        return False
    return bool(statements) and all(
        isinstance(s, READ_ONLY_ROOTS) and s.find(*WRITING_NODES) is None for s in statements
    )

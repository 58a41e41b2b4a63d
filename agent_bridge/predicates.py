"""Ready-made ``when`` predicates for the policy: review only the risky calls.

A predicate gets the middleware's ``ToolCallRequest`` and returns ``True`` to ask a
person, ``False`` to let the call run (the run's Slack thread notes it ran without review).
Each is a pure function of the call's arguments, so it gives the same answer when the
run resumes, as ``HumanInTheLoopMiddleware`` requires. The first two are the examples of
the LangChain HITL documentation; the SQL ones gate by the statement's risk level
(``agent_bridge.sql_risk``), so a ``SELECT`` of a function that writes is never
"read-only"::

    tools:
      write_file:
        when: agent_bridge.predicates:writes_outside_workspace
      execute_sql:
        when: agent_bridge.predicates:sql_is_not_read_only   # or sql_is_destructive
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from agent_bridge.sql_risk import RiskLevel, analyse

SQL_DIALECTS = ("sqlite", "postgres", "mysql", "")
"""Dialects a query must read as read-only in ("" is sqlglot's default); include the
dialect of the database your tool runs SQL on."""
PATH_ARG = "path"
SQL_ARG = "query"


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
    """Review SQL unless its risk level is ``read_only`` (``agent_bridge.sql_risk``).

    Read in each of ``SQL_DIALECTS``: dialects disagree on details such as nested
    ``/* */`` comments, so a statement counts as read-only only if every one of them
    reads it so. Unparsable text is reviewed, as are ``SELECT ... INTO``, writes hidden
    in a CTE, lock clauses and a call of any function outside
    ``sql_risk.SAFE_FUNCTIONS`` (``SELECT dblink_exec(...)``, ``setval``, ``lo_unlink``,
    a user's function: each may write).
    """
    return _at_least(request, "write")


def sql_is_destructive(request: Any) -> bool:
    """Review only SQL whose risk level is ``destructive`` or ``unparseable`` in any of
    ``SQL_DIALECTS`` (``UPDATE``/``DELETE`` without ``WHERE``, ``DROP``, ``TRUNCATE``,
    ``ALTER ... DROP``, what cannot be read); other writes run without review."""
    return _at_least(request, "destructive")


def _at_least(request: Any, level: RiskLevel) -> bool:
    query = request.tool_call["args"].get(SQL_ARG, "")
    return any(
        analyse(query, dialect=dialect, argument=SQL_ARG).at_least(level)
        for dialect in SQL_DIALECTS
    )

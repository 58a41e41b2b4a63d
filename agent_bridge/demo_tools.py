"""The demo agent's tools: the three tools of the LangChain HITL documentation, doing real work.

- ``write_file(path, content)`` writes under a workspace folder; a path that escapes it
  is refused with a tool error.
- ``execute_sql(query)`` runs against a demo SQLite database seeded with ``orders``.
- ``read_data(table)`` reads rows from a table of that database.
- ``ask_user(question)`` is answered by a person: the policy allows only ``respond``,
  so the tool itself never runs and the reviewer's answer is its result.

``make_tools(settings)`` is the demo's ``AGENT`` (``agent_bridge.demo_tools:make_tools``).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool, ToolException

if TYPE_CHECKING:
    from agent_bridge.settings import WorkerConfig

READ_ROWS_LIMIT = 20
"""Most rows ``read_data`` and a SELECT return, so a result fits a Slack message."""

NO_ANSWER = "No one answered: ask_user is meant to be answered with Respond."

SEED_ORDERS: tuple[tuple[int, str, float, str], ...] = (
    (1, "Ada", 120.00, "2023-01-15"),
    (2, "Grace", 75.50, "2023-03-02"),
    (3, "Linus", 310.25, "2024-02-11"),
    (4, "Barbara", 42.00, "2024-06-30"),
    (5, "Ken", 99.99, "2025-01-05"),
)

EXECUTED_CALLS_SQL = (
    "CREATE TABLE IF NOT EXISTS executed_statements (call_key TEXT PRIMARY KEY, result TEXT)"
)
SCHEMA_SQL = (
    "CREATE TABLE IF NOT EXISTS orders ("
    "id INTEGER PRIMARY KEY, customer TEXT NOT NULL, total REAL NOT NULL, created_at TEXT NOT NULL)"
)


class DemoWorkspace:
    """A folder the agent may write into and the SQLite database it may query.

    Args:
        root: Folder ``write_file`` writes under (created if missing).
        database: Path of the SQLite file; seeded with ``orders`` if it has none.
    """

    def __init__(self, root: Path, database: Path) -> None:
        self.root = root.resolve()
        self.database = database
        self.root.mkdir(parents=True, exist_ok=True)
        database.parent.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(database) as conn:
            conn.execute(SCHEMA_SQL)
            if conn.execute("SELECT COUNT(*) FROM orders").fetchone()[0] == 0:
                conn.executemany("INSERT INTO orders VALUES (?, ?, ?, ?)", SEED_ORDERS)

    def write_file(self, path: str, content: str) -> str:
        """Write ``content`` to ``path`` inside the workspace.

        Raises:
            ToolException: If ``path`` is blank or resolves outside the workspace.
        """
        if not path.strip():
            raise ToolException("Refused: the path is empty. Name a file inside the workspace.")
        target = (self.root / path).resolve()
        if not target.is_relative_to(self.root) or target == self.root:
            raise ToolException(
                f"Refused: {path!r} is outside the workspace {self.root}. "
                "Write to a relative path inside it."
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return f"Wrote {len(content)} characters to {path}"

    def execute_sql(self, query: str, call_key: str | None = None) -> str:
        """Run one SQL statement; return rows as JSON or the number of rows affected.

        Idempotent per tool call: the statement and a record of ``call_key`` (``call_key``
        below: what names this call of the graph's) commit in one transaction, so if the
        worker dies after the commit and LangGraph runs the tool again (its node re-runs
        from the last checkpoint: at least once), the statement is not repeated and the
        first result is returned.

        Raises:
            ToolException: If SQLite refuses the statement.
        """
        try:
            with sqlite3.connect(self.database) as conn:
                conn.execute(EXECUTED_CALLS_SQL)
                if call_key:
                    done = conn.execute(
                        "SELECT result FROM executed_statements WHERE call_key = ?", (call_key,)
                    ).fetchone()
                    if done:
                        return str(done[0])
                cursor = conn.execute(query)
                if cursor.description is None:
                    result = f"{cursor.rowcount} rows affected"
                else:
                    columns = [d[0] for d in cursor.description]
                    rows = cursor.fetchmany(READ_ROWS_LIMIT)
                    result = json.dumps([dict(zip(columns, r, strict=True)) for r in rows])
                if call_key:
                    conn.execute(
                        "INSERT INTO executed_statements VALUES (?, ?)", (call_key, result)
                    )
        except sqlite3.Error as exc:
            raise ToolException(f"SQL error: {exc}") from exc
        return result

    def read_data(self, table: str) -> str:
        """Return up to ``READ_ROWS_LIMIT`` rows of ``table`` as JSON.

        Raises:
            ToolException: If there is no such table.
        """
        with sqlite3.connect(self.database) as conn:
            known = {
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            if table not in known:
                raise ToolException(f"No table {table!r}; tables: {', '.join(sorted(known))}")
            cursor = conn.execute(f'SELECT * FROM "{table}" LIMIT ?', (READ_ROWS_LIMIT,))
            columns = [d[0] for d in cursor.description]
            rows = cursor.fetchall()
        return json.dumps([dict(zip(columns, row, strict=True)) for row in rows])

    def tools(self) -> list[BaseTool]:
        """Return the demo's tools bound to this workspace."""

        def write_file(path: str, content: str) -> str:
            """Write text content to a file at a path relative to the workspace."""
            return self.write_file(path, content)

        def execute_sql(
            query: str, tool_call_id: Annotated[str, InjectedToolCallId], config: RunnableConfig
        ) -> str:
            """Execute one SQL statement against the orders database."""
            return self.execute_sql(query, call_key(tool_call_id, config))

        def read_data(table: str) -> str:
            """Read rows from a table of the orders database."""
            return self.read_data(table)

        def ask_user(question: str) -> str:
            """Ask the user a question; a person answers it (the Respond decision)."""
            return NO_ANSWER

        return [
            StructuredTool.from_function(fn, handle_tool_error=True)
            for fn in (write_file, execute_sql, read_data, ask_user)
        ]


def call_key(tool_call_id: str, config: RunnableConfig) -> str:
    """What names one call of the graph's, the same when LangGraph runs it again: its
    ``thread_id``, the task running it (``checkpoint_ns``, ``<node>:<task ID>``: LangGraph
    gives a task the same ID when it runs again from its checkpoint) and its tool call ID.
    The ID alone is not enough: some model servers number each turn's calls afresh
    (``call_0`` in every turn), and every run's first call would be taken for done."""
    configurable = config.get("configurable") or {}
    return "/".join(
        (
            str(configurable.get("thread_id", "")),
            str(configurable.get("checkpoint_ns", "")),
            tool_call_id,
        )
    )


def make_tools(settings: WorkerConfig) -> list[BaseTool]:
    """The demo's ``AGENT``: files in ``WORKSPACE_DIR/files``, SQL in ``orders.db`` beside."""
    workspace = DemoWorkspace(
        settings.workspace_dir / "files", settings.workspace_dir / "orders.db"
    )
    return workspace.tools()

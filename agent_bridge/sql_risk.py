"""What a SQL statement would do, read from the whole statement (pure; no database).

For a tool whose policy names its SQL argument and dialect (``ToolPolicy.sql``), the
statement is parsed with sqlglot in that dialect (a statement sqlglot cannot read in
it is *unparseable*, whatever another dialect makes of it) and summed up as a
``SqlRisk``: the statement kinds, the tables touched (qualified and quoted as written),
warnings, and a level:

- ``read_only``: only plain reads (``SELECT`` and set operations) calling only functions
  of ``SAFE_FUNCTIONS``, and nothing else below;
- ``write``: any other write (``INSERT``, ``UPDATE``/``DELETE`` with ``WHERE``,
  ``MERGE``, ``CREATE``, ``SELECT ... INTO``, ``COPY``, locks) or a call of a function
  outside ``SAFE_FUNCTIONS`` (``SELECT dblink_exec(...)``, ``setval``, ``lo_unlink``,
  a user's function: any of them may write);
- ``destructive``: ``UPDATE``/``DELETE`` without ``WHERE`` (anywhere in the statement,
  a CTE included), ``DROP``, ``TRUNCATE``, ``ALTER ... DROP``, ``COPY ... PROGRAM``;
- ``unparseable``: sqlglot cannot read it in the dialect, reads a part only as an
  opaque command (``DO``, ``CALL``, ``VACUUM``), or reads a statement it does not know
  as a mere expression (``CLUSTER orders``): nothing about it is known, so it ranks
  above ``destructive``.

The analysis always covers the whole text, however much of it a card shows. The card
shows it (``bot/risk_blocks.py``), the ready-made ``when`` predicates gate by the level
(``agent_bridge/predicates.py``) and the policy can ask for more approvals by level
(``ToolPolicy.required_approvals``). ``agent_bridge/sql_count.py`` builds, from the
parsed statement, the ``SELECT count(*)`` that ``agent_bridge/row_estimate.py`` runs
instead of the statement itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

import sqlglot
from pydantic import BaseModel, ConfigDict
from sqlglot import TokenType, exp
from sqlglot.optimizer.simplify import simplify

from agent_bridge import risk_wording

RiskLevel = Literal["read_only", "write", "destructive", "unparseable"]
RISK_LEVELS: tuple[RiskLevel, ...] = ("read_only", "write", "destructive", "unparseable")
"""From least to most risky; a statement's level is the highest of its parts."""

WarningCode = Literal[
    "no_where",
    "constant_where",
    "rename_in_alter",
    "merge_every_row",
    "replace_table",
    "executable_comment",
    "ddl",
    "truncate",
    "drop_in_alter",
    "several_statements",
    "unparseable",
    "opaque_command",
    "cte_write",
    "select_into",
    "copy",
    "copy_program",
    "lock",
    "unsafe_function",
    "too_long",
    "not_text",
]

RowMethod = Literal["exact_count", "planner_estimate", "unavailable"]
UnavailableReason = Literal[
    "timeout", "error", "unsupported", "unreachable", "varies", "unresolved"
]

EXECUTABLE_COMMENT = "/*!"
"""MySQL runs the text of a ``/*! … */`` comment (https://dev.mysql.com/doc/refman/8.0/en/comments.html);
sqlglot drops it as a comment, so a statement holding one is not understood."""
SQL_ANALYSIS_MAX_CHARS = 100_000
"""Longer statements are not parsed: *unparseable*. sqlglot takes about a second for
100,000 characters of real SQL on the development machine, on the worker's event loop
(and the predicates read it in four dialects), so longer ones would hold up lease
renewals."""

UNKNOWN_KIND_MAX_CHARS = 40
"""Of a statement sqlglot did not know, the first word kept as its kind (agent text)."""

SAFE_FUNCTIONS: frozenset[str] = frozenset(
    {
        # aggregates and window functions
        *("count", "sum", "avg", "min", "max", "total", "any_value", "median", "mode"),
        *("every", "logical_and", "logical_or", "bool_and", "bool_or", "group_concat"),
        *("string_agg", "array_agg", "json_agg", "jsonb_agg", "xmlagg", "stddev"),
        *("stddev_pop", "stddev_samp", "variance", "variance_pop", "var_samp", "corr"),
        *("covar_pop", "covar_samp", "regr_slope", "percentile_cont", "percentile_disc"),
        *("row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile"),
        *("lag", "lead", "first_value", "last_value", "nth_value"),
        # conditionals and conversions
        *("coalesce", "nullif", "ifnull", "nvl", "if", "iif", "greatest", "least"),
        *("cast", "try_cast", "typeof", "zeroifnull"),
        # numbers
        *("abs", "pow", "round", "floor", "ceil", "ceiling", "trunc", "sign", "sqrt", "exp"),
        *("power",),
        *("ln", "log", "mod", "pi", "sin", "cos", "degrees", "radians", "width_bucket"),
        *("rand", "random"),
        # text
        *("lower", "upper", "length", "char_length", "octet_length", "bit_length"),
        *("substring", "substr", "trim", "btrim", "ltrim", "rtrim", "replace", "concat"),
        *("concat_ws", "left", "right", "pad", "lpad", "rpad", "repeat", "reverse"),
        *("initcap", "translate", "split_part", "str_position", "strpos", "instr"),
        *("position",),
        *("starts_with", "regexp_replace", "regexp_matches", "regexp_like"),
        *("regexp_split_to_array", "string_to_array", "array_to_string", "format"),
        *("printf", "quote", "hex", "md5", "ascii", "chr", "encode", "decode"),
        *("decode_case",),
        # dates and times
        *("now", "current_date", "current_time", "current_timestamp", "localtime"),
        *("localtimestamp", "clock_timestamp", "statement_timestamp"),
        *("transaction_timestamp", "date", "datetime", "julianday", "unixepoch"),
        *("strftime", "date_trunc", "timestamp_trunc", "date_part", "extract", "age"),
        *("to_char", "to_date", "to_timestamp", "str_to_date", "time_to_str"),
        *("number_to_str", "unix_to_time", "ts_or_ds_to_date", "ts_or_ds_to_timestamp"),
        *("date_add", "date_sub", "datediff", "timezone", "make_date", "isfinite"),
        *("justify_days",),
        # JSON and arrays
        *("json_extract", "json_extract_scalar", "jsonb_extract_path", "json_typeof"),
        *("json_array_length", "jsonb_array_length", "json_each", "jsonb_each"),
        *("json_object_keys", "jsonb_object_keys", "json_build_object"),
        *("jsonb_build_object", "jsonb_set", "to_json", "to_jsonb", "row_to_json"),
        *("j_s_o_n_array_agg", "array_size", "array_length", "cardinality", "unnest"),
        *("explode", "array_append", "array_concat", "array_position", "array_remove"),
        *("generate_series", "exploding_generate_series"),
        # syntax sqlglot models as functions
        *("case", "exists", "array", "row", "any", "all", "collate", "overlay"),
        *("jsonb_extract", "array_contains_all", "likelihood", "unicode", "zeroblob"),
        # who and where
        *("current_user", "session_user", "current_database", "current_version"),
        *("version", "uuid", "last_insert_id", "found_rows", "unix_timestamp"),
    }
)
"""Functions that only compute a value (reviewed: no writes, no locks, no I/O outside
the query), by sqlglot's name for a function it knows (``now()`` is
``current_timestamp``, ``date_trunc`` on PostgreSQL is ``timestamp_trunc``) or, for one
it does not, the name as written. Any other call (``nextval``, ``setval``,
``dblink_exec``, ``lo_*``, ``pg_*``, ``pg_sleep``, a user's function) makes a statement
a possible write. A schema-qualified call is safe only under ``pg_catalog``."""

POSTGRES_NOT_BUILT_IN: frozenset[str] = frozenset(
    {
        *("any_value", "array_concat", "array_contains_all", "array_size"),
        *("current_version", "date_add", "date_sub", "datediff", "datetime"),
        *("decode_case", "explode", "exploding_generate_series", "found_rows"),
        *("group_concat", "hex", "if", "ifnull", "iif", "instr", "j_s_o_n_array_agg"),
        *("json_extract", "json_extract_scalar", "jsonb_extract", "julianday"),
        *("last_insert_id", "likelihood", "logical_and", "logical_or", "median"),
        *("number_to_str", "nvl", "pad", "printf", "quote", "rand", "str_position"),
        *("str_to_date", "strftime", "time_to_str", "timestamp_trunc", "total"),
        *("try_cast", "ts_or_ds_to_date", "ts_or_ds_to_timestamp", "typeof", "unicode"),
        *("unix_timestamp", "unix_to_time", "unixepoch", "uuid", "variance_pop"),
        *("zeroblob", "zeroifnull"),
    }
)
"""Names on ``SAFE_FUNCTIONS`` that are no function of PostgreSQL's ``pg_catalog`` nor
its own syntax (``coalesce``, ``greatest``, ``cast``...): written as a call in a
PostgreSQL statement, such a name calls whatever function of that name the database
has, a user's own (``CREATE FUNCTION median(...)`` that deletes), whatever sqlglot
reads it as (``nvl`` as ``COALESCE``). Checked against a live server's ``pg_catalog``
by the tests."""

GRAMMAR_BEFORE_PAREN = frozenset(
    {
        *("in", "values", "over", "filter", "exists", "any", "all", "some", "row", "as"),
        *("using", "lateral", "cube", "rollup", "sets", "on", "where", "and", "or", "not"),
        *("select", "distinct", "by", "is", "when", "then", "else", "case", "join", "from"),
        *("with", "into", "table", "array", "interval", "returning", "set", "union"),
        *("intersect", "except", "limit", "offset", "group", "having", "window", "between"),
        *("like", "ilike", "similar", "to", "of", "for", "recursive", "materialized"),
        *("only", "conflict", "do", "partition", "rows", "range", "groups", "escape"),
        *("at", "zone", "tablesample", "repeatable", "ordinality", "returning", "check"),
        *("references", "unique", "key", "default", "constraint", "include", "lock"),
    }
)
"""Words PostgreSQL's grammar writes before a ``(`` that call nothing (``IN (…)``,
``OVER (…)``, ``WITHIN GROUP (…)``): not function names, whatever the tokenizer calls
them."""
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
POSTGRES_CALLABLE = SAFE_FUNCTIONS - POSTGRES_NOT_BUILT_IN
"""The names a PostgreSQL statement may call, as written, and stay read-only: a name not
here may be a user's function, whatever sqlglot reads it as (``len`` as ``LENGTH``)."""

_READ_ROOTS = (exp.Select, exp.SetOperation)
_WRITES = (exp.Insert, exp.Update, exp.Delete, exp.Merge)
_DDL = (exp.Create, exp.Drop, exp.Alter, exp.Grant, exp.Revoke)
_ANONYMOUS = (exp.Anonymous, exp.AnonymousAggFunc)
_STATEMENTS = (
    *_READ_ROOTS,
    *_WRITES,
    *_DDL,
    exp.Subquery,
    exp.Values,
    exp.TruncateTable,
    exp.Copy,
    exp.Command,
    exp.Transaction,
    exp.Commit,
    exp.Rollback,
    exp.Set,
    exp.Describe,
    exp.Use,
    exp.Pragma,
    exp.Analyze,
    exp.Semicolon,  # an empty statement, holding a comment
)
"""What sqlglot makes of a statement it reads. Anything else at a statement's root is
a statement it did not know, read as an expression (PostgreSQL's ``CLUSTER orders`` as
an alias, ``CHECKPOINT`` as a column): nothing about it is known."""
_PROGRAM = "PROGRAM"
"""``COPY ... TO/FROM PROGRAM 'command'`` (PostgreSQL) runs a shell command on the
database server (https://www.postgresql.org/docs/current/sql-copy.html)."""
_SAFE_SCHEMA = "pg_catalog"


class RiskWarning(BaseModel):
    """One thing a reviewer should know about the statement.

    Attributes:
        code: What it is (``no_where``, ``unsafe_function``...; the sentences are in
            ``agent_bridge/risk_wording.py``).
        names: The statement's own words it is about (tables, functions, statement
            kinds): agent text, escaped wherever it is shown.
    """

    model_config = ConfigDict(frozen=True)

    code: WarningCode
    names: tuple[str, ...] = ()

    def text(self) -> str:
        """The warning in plain words, names unescaped (logs, the audit trail)."""
        return risk_wording.warning_text(self.code, ", ".join(self.names))


class RowEstimate(BaseModel):
    """How many rows an ``UPDATE`` or ``DELETE`` would touch, and how that is known.

    Attributes:
        method: ``exact_count`` (a ``SELECT count(*)``), ``planner_estimate`` (the
            planner's ``Plan Rows`` of ``EXPLAIN``, when the count was too slow), or
            ``unavailable``.
        rows: The number; ``None`` when unavailable.
        reason: Why it is unavailable (the error itself stays in the worker's logs).
        cascades: Other tables whose rows the statement changes too, by their foreign
            keys' ``ON DELETE``/``ON UPDATE`` ``CASCADE``, ``SET NULL`` or ``SET DEFAULT``
            (PostgreSQL's catalog): not in ``rows``.
        triggers: Triggers and rules on the table that fire on the statement: what they
            do is not in ``rows`` either.
    """

    model_config = ConfigDict(frozen=True)

    method: RowMethod
    rows: int | None = None
    reason: UnavailableReason | None = None
    cascades: tuple[str, ...] = ()
    triggers: tuple[str, ...] = ()


class SqlRisk(BaseModel):
    """What one tool call's SQL would do, from its whole text; stored with the request
    (``ApprovalRequest.risk``) so the web process shows it without the policy.

    Attributes:
        level: ``read_only``, ``write``, ``destructive`` or ``unparseable``.
        kinds: Statement kinds in order (``SELECT``, ``DELETE``...; a write inside a
            CTE counts).
        tables: Tables touched, qualified and quoted as written (agent text).
        warnings: What a reviewer should know, in order found.
        argument: The tool argument the SQL came from.
        dialect: The sqlglot dialect it was read in.
        rows: Affected rows, when the policy has an ``estimate_url`` and the statement
            is an ``UPDATE`` or ``DELETE`` (set by the worker before the card is posted).
    """

    model_config = ConfigDict(frozen=True)

    level: RiskLevel
    kinds: tuple[str, ...] = ()
    tables: tuple[str, ...] = ()
    warnings: tuple[RiskWarning, ...] = ()
    argument: str
    dialect: str
    rows: RowEstimate | None = None

    def at_least(self, level: RiskLevel) -> bool:
        """Whether this statement is ``level`` or riskier (``RISK_LEVELS`` order)."""
        return RISK_LEVELS.index(self.level) >= RISK_LEVELS.index(level)


def analyse(sql: object, *, dialect: str, argument: str) -> SqlRisk:
    """Read the whole of ``sql`` in ``dialect`` and say what it would do.

    Args:
        sql: The tool argument's value (anything but a string is *unparseable*).
        dialect: A sqlglot dialect name (``postgres``, ``sqlite``, ``mysql``...).
        argument: The argument's name, kept with the result.

    Returns:
        A ``SqlRisk``; never raises on any input.
    """
    found = _Findings(dialect)
    if not isinstance(sql, str):
        found.warn("unparseable", "not_text", argument)
    elif len(sql) > SQL_ANALYSIS_MAX_CHARS:
        found.warn("unparseable", "too_long", f"{len(sql):,}")
    elif EXECUTABLE_COMMENT in sql:  # MySQL runs what sqlglot reads as a comment
        found.warn("unparseable", "executable_comment", EXECUTABLE_COMMENT)
    else:
        statements = parse(sql, dialect)
        if not statements:
            found.warn("unparseable", "unparseable", dialect or "generic")
        try:
            for statement in statements or ():
                found.statement(statement)
        except Exception:  # sqlglot's own bug on a tree it built: nothing is known
            found.warn("unparseable", "unparseable", dialect or "generic")
        if statements and len(statements) > 1:
            found.warn("write", "several_statements", str(len(statements)))
        if statements and dialect == "postgres":
            named = {folded(a.this) for s in statements for a in s.find_all(exp.TableAlias)}
            for name in _called_names(sql, dialect):
                if name not in named and name not in POSTGRES_CALLABLE:
                    found.warn("write", "unsafe_function", name)
    return SqlRisk(
        level=found.level,
        kinds=tuple(dict.fromkeys(found.kinds)),
        tables=tuple(dict.fromkeys(found.tables)),
        warnings=tuple(dict.fromkeys(found.warnings)),
        argument=argument,
        dialect=dialect,
    )


def every_row(condition: exp.Expr | None) -> bool:
    """Whether a ``WHERE`` (or ``MERGE ... ON``) condition holds for every row by its text
    alone: none, one naming no column (``WHERE true``, ``WHERE 1 = 1``), or one that
    sqlglot's simplifier reduces to ``TRUE`` once a column compared to itself counts as
    true (``id = id``, ``id = 5 OR 1 = 1``, ``x IS NOT NULL OR true``). A condition true
    for every row only by the data (``id > -1``) is not seen here: the affected-rows
    estimate shows it."""
    if condition is None or condition.find(exp.Column) is None:
        return True
    probe = exp.Paren(this=condition.copy())  # a parent, so the condition itself can go
    for node in list(probe.find_all(exp.EQ, exp.GTE, exp.LTE)):
        if node.left == node.right:
            node.replace(exp.true())
    try:
        return bool(simplify(probe) == exp.true())
    except Exception:  # the simplifier's own failure: say nothing more
        return False


def parse(sql: str, dialect: str) -> list[exp.Expr] | None:
    """The statements of ``sql`` in ``dialect``; ``None`` if sqlglot cannot read it."""
    try:
        return [s for s in sqlglot.parse(sql, read=dialect or None) if s is not None]
    except Exception:  # SqlglotError, RecursionError, and sqlglot's own bugs
        # (``SELECT date_add(x,`` in MySQL raised AttributeError): the text is agent
        # input, so no exception may escape; nothing is known about it
        return None


class _Findings:
    """What the statements of one call add up to, as they are walked."""

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        self.level: RiskLevel = "read_only"
        self.kinds: list[str] = []
        self.tables: list[str] = []
        self.warnings: list[RiskWarning] = []

    def raise_to(self, level: RiskLevel) -> None:
        if RISK_LEVELS.index(level) > RISK_LEVELS.index(self.level):
            self.level = level

    def warn(self, level: RiskLevel, code: WarningCode, *names: str) -> None:
        self.raise_to(level)
        self.warnings.append(RiskWarning(code=code, names=names))

    def statement(self, root: exp.Expr) -> None:
        """Add one parsed statement."""
        if not isinstance(root, _STATEMENTS):
            words = root.sql(dialect=self.dialect).split()
            self.kinds.append(words[0][:UNKNOWN_KIND_MAX_CHARS].upper() if words else "")
            self.warn("unparseable", "opaque_command", self.kinds[-1])
            return
        self.kinds.append(_kind(root))
        if isinstance(root, exp.Command):
            self._command(root)
            return
        if not isinstance(root, _READ_ROOTS):
            self.raise_to("write")
        self.tables.extend(_tables(root, self.dialect))
        for node in root.walk():
            self._node(root, node)

    def _command(self, root: exp.Command) -> None:
        """A statement sqlglot keeps only as text (``LOCK``, ``DO``, ``CALL``...)."""
        if str(root.this).upper() == "LOCK":
            self.warn("write", "lock", "LOCK TABLE")
        else:
            self.warn("unparseable", "opaque_command", _kind(root))

    def _node(self, root: exp.Expr, node: exp.Expr) -> None:
        if isinstance(node, exp.Update | exp.Delete) and node.find_ancestor(exp.Merge) is None:
            where = node.args.get("where")
            target = f"{_kind(node)} {_table_of(node, self.dialect)}"
            if not where:
                self.warn("destructive", "no_where", target)
            elif every_row(where.this):
                self.warn("destructive", "constant_where", target)
        if isinstance(node, exp.Merge) and every_row(node.args.get("on")):
            self.warn("destructive", "merge_every_row", _table_of(node, self.dialect))
        if isinstance(node, exp.Create) and node.args.get("replace"):
            self.warn("destructive", "replace_table", _table_of(node, self.dialect))
        if isinstance(node, _WRITES) and node is not root:
            self.kinds.append(_kind(node))
            self.warn("write", "cte_write", _kind(node))
        if isinstance(node, exp.TruncateTable):
            self.warn("destructive", "truncate", *_tables(node, self.dialect))
        elif isinstance(node, exp.Drop):
            if not isinstance(node.parent, exp.Alter):  # ALTER ... DROP: below
                self.warn("destructive", "ddl", f"DROP {_table_of(node, self.dialect)}".strip())
        elif isinstance(node, exp.Alter):
            self.warn("write", "ddl", f"ALTER {_table_of(node, self.dialect)}")
            actions = node.args.get("actions") or ()
            if any(isinstance(a, exp.Drop) for a in actions):
                self.warn("destructive", "drop_in_alter", _table_of(node, self.dialect))
            if any(isinstance(a, exp.AlterRename | exp.RenameColumn) for a in actions):
                self.warn("destructive", "rename_in_alter", _table_of(node, self.dialect))
        elif isinstance(node, _DDL):
            self.warn("write", "ddl", _kind(node))
        if isinstance(node, exp.Select) and node.args.get("into"):
            into = node.args["into"].this
            self.warn("write", "select_into", _name(into, self.dialect))
        if isinstance(node, exp.Copy):
            if any(_is_program(f) for f in node.args.get("files") or ()):
                self.warn("destructive", "copy_program", _table_of(node, self.dialect))
            else:
                self.warn("write", "copy", _table_of(node, self.dialect))
        if isinstance(node, exp.Lock):
            self.warn("write", "lock", node.sql(dialect=self.dialect).strip())
        if isinstance(node, exp.Func) and not _safe(node):
            self.warn("write", "unsafe_function", _function_name(node))


def _is_program(target: exp.Expr) -> bool:
    """Whether a ``COPY`` target is ``PROGRAM`` (a shell command), not a file."""
    return isinstance(target, exp.Identifier | exp.Var) and (
        not target.args.get("quoted") and str(target.this).upper() == _PROGRAM
    )


def _called_names(sql: str, dialect: str) -> list[str]:
    """The names ``sql`` calls as functions, as the database reads them (an unquoted
    name in lower case, a quoted one as written): every name token right before a
    ``(`` and not after a ``.`` (a qualified call is judged on the tree, ``_safe``).
    Read from the tokens, not sqlglot's tree, whose functions lose the name written
    (``nvl`` becomes ``COALESCE``). A table or CTE column list (``WITH total(n) AS``)
    reads as a call too: a warning more, never one less."""
    try:
        tokens = sqlglot.tokenize(sql, read=dialect)
    except Exception:  # the parse before it read the text: not expected, nothing more
        return []
    names: dict[str, None] = {}  # in the order written, each once
    for i, token in enumerate(tokens[:-1]):
        if tokens[i + 1].token_type != TokenType.L_PAREN:
            continue
        if i and tokens[i - 1].token_type == TokenType.DOT:
            continue
        quoted = token.token_type == TokenType.IDENTIFIER
        if not quoted and (
            not _WORD.fullmatch(token.text) or token.text.lower() in GRAMMAR_BEFORE_PAREN
        ):
            continue  # a symbol, or a word of the grammar (IN, VALUES, OVER...)
        names[token.text if quoted else token.text.lower()] = None
    return list(names)


def folded(identifier: exp.Expr | None) -> str:
    """An identifier as PostgreSQL names it: an unquoted one in lower case, a quoted one
    as written (``""`` for anything else): a CTE's or a table alias's name before its
    column list (``WITH recent(n) AS``, which reads as a call), a count's tables and
    columns (``sql_count``)."""
    if not isinstance(identifier, exp.Identifier):
        return ""
    return str(identifier.this) if identifier.quoted else str(identifier.this).lower()


def _kind(node: exp.Expr) -> str:
    """``SELECT``, ``DELETE``, ``CREATE``... (a command's own keyword, ``CALL``)."""
    if isinstance(node, exp.SetOperation):
        return "SELECT"
    if isinstance(node, exp.Command):
        return str(node.this).upper()
    if isinstance(node, exp.TruncateTable):
        return "TRUNCATE"
    return node.key.upper()


def _tables(root: exp.Expr, dialect: str) -> Iterable[str]:
    """Tables ``root`` names, as written, leaving out its CTEs' own names."""
    ctes = {cte.alias_or_name.lower() for cte in root.find_all(exp.CTE)}
    for table in root.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            continue  # a table function, e.g. generate_series(...)
        if not table.args.get("db") and table.name.lower() in ctes:
            continue
        yield _name(table, dialect)


def _name(node: exp.Expr, dialect: str) -> str:
    """A table's qualified name as written (quoted identifiers stay quoted)."""
    if isinstance(node, exp.Table):
        return ".".join(part.sql(dialect=dialect) for part in node.parts)
    return node.sql(dialect=dialect)


def _table_of(node: exp.Expr, dialect: str) -> str:
    """The table a statement acts on, as written (``""`` if it names none)."""
    listed = node.args.get("tables")
    if listed:
        return ", ".join(_name(t, dialect) for t in listed)
    target = node.this if isinstance(node.this, exp.Expr) else None
    if isinstance(target, exp.Schema):
        target = target.this
    return _name(target, dialect) if isinstance(target, exp.Expr) else ""


def _function_name(func: exp.Func) -> str:
    """The name a reviewer recognises: as written for an unknown function (schema
    included), sqlglot's name for a known one."""
    if isinstance(func, _ANONYMOUS):
        parent = func.parent
        if isinstance(parent, exp.Dot) and parent.expression is func:
            return f"{parent.this.sql()}.{func.name}"
        return str(func.name)
    return func.sql_name().lower()


def _safe(func: exp.Func) -> bool:
    """Whether ``func`` is on ``SAFE_FUNCTIONS`` (a qualified one only in pg_catalog);
    ``AND``, ``OR`` and ``XOR`` are operators sqlglot models as functions."""
    if isinstance(func, exp.Connector):
        return True
    if isinstance(func, _ANONYMOUS):
        parent = func.parent
        if isinstance(parent, exp.Dot) and parent.expression is func:
            if parent.this.sql().lower() != _SAFE_SCHEMA:
                return False
        return str(func.name).lower() in SAFE_FUNCTIONS
    return func.sql_name().lower() in SAFE_FUNCTIONS

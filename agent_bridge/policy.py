"""The approval policy: which tools are gated, with which decisions, and how they read.

A YAML file (``POLICY``) parsed into ``Policy`` and turned into the keyword arguments of
LangChain's ``HumanInTheLoopMiddleware`` (``interrupt_on``, ``description_prefix``,
``edit_notice``, ``interrupt_mode``), following
``langchain/agents/middleware/human_in_the_loop.py``. Example::

    interrupt_mode: batched          # or per_call
    description_prefix: Tool execution requires approval
    tools:
      write_file: {allowed_decisions: [approve, edit, reject, respond]}
      execute_sql:
        allowed_decisions: [approve, reject]
        description: "🚨 SQL execution requires DBA approval"
      read_data: false               # not gated

Who decides (docs/architecture.md, "Who decides"), per tool: ``channel`` (where its
cards go), ``approvers`` (Slack user and user-group IDs; unset: anyone in the
workspace), ``required_approvals``, ``requester_may_approve``, ``escalate_to`` with
``escalate_after_s``; policy-wide: ``requesters`` and ``max_active_runs_per_user``.
What people see: ``redact`` (argument keys whose values are masked everywhere,
``agent_bridge.redaction``; policy-wide, extended per tool) and ``post_results``
(``all | reviewed | none``: whose output goes to the run's Slack thread; policy-wide
default, per tool). A tool that is not reviewed but has such keys says ``gated: false``::

    redact: [password, passwd, secret, token, api_key, authorization, dsn]
    post_results: reviewed           # the default
    tools:
      read_data: {gated: false, post_results: none}
The same models are the Python API: ``Policy(tools={"execute_sql": ToolPolicy(...)})``.

SQL risk (docs/architecture.md, "SQL risk"), per tool: ``sql`` names the argument holding
the statement and its sqlglot dialect; the card then shows what the whole statement
would do (``agent_bridge/sql_risk.py``), and with ``estimate_url`` (a read-only
connection) how many rows an ``UPDATE``/``DELETE`` would touch
(``agent_bridge/row_estimate.py``). The quorum can depend on both::

    execute_sql:
      sql: {argument: query, dialect: postgres, estimate_url: "postgresql://ro@db/app",
            estimate_timeout_s: 2}
      required_approvals: {read_only: 1, write: 1, destructive: 2, unparseable: 2}
      approvals_above_rows: {1000: 2, 100000: 3}   # more than 1,000 rows: 2 people

The number a request needs is the larger of its level's and that of the highest row
threshold it passes; a write whose affected rows are not known (no estimate possible,
or it failed) counts as above every threshold. ``{workspace_dir}`` in ``estimate_url``
is the worker's ``WORKSPACE_DIR`` (the demo's database lives there).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Annotated, Any, Literal

import sqlglot
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    SecretStr,
    Tag,
    field_validator,
    model_validator,
)

from agent_bridge import wording
from agent_bridge.errors import ConfigurationError
from agent_bridge.imports import import_object
from agent_bridge.models import (
    DECISION_TYPES,
    Decision,
    MiddlewareDecisionType,
    MiddlewareMode,
    ReviewRules,
    StartRules,
)
from agent_bridge.redaction import DEFAULT_REDACT
from agent_bridge.sql_risk import RISK_LEVELS, RiskLevel, SqlRisk

DEFAULT_MAX_ACTIVE_RUNS_PER_USER = 10
"""Runs one person may have queued, running or waiting at once, unless the policy says."""
REQUIRED_APPROVALS_MAX = 10
ESTIMATE_TIMEOUT_S = 2.0
"""Default statement timeout of an affected-rows count, seconds (then the planner's)."""
ESTIMATE_TIMEOUT_MAX_S = 30.0

_PRINCIPAL = re.compile(r"[UWS][A-Z0-9]{2,20}")
_CHANNEL = re.compile(r"[CGD][A-Z0-9]{2,20}")


def _principal(value: str) -> str:
    if not _PRINCIPAL.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a Slack user ID (U…, W…) or user group ID (S…); use the "
            "ID (a member's profile: Copy member ID), not a name"
        )
    return value


def _channel(value: str) -> str:
    if not _CHANNEL.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a Slack channel ID (C…, G…, D…); use the ID from the "
            "channel's details, not its name"
        )
    return value


Principal = Annotated[str, AfterValidator(_principal)]
"""A Slack user (``U…``/``W…``) or user group (``S…``) ID; never a name (names change
and can be reused)."""
ChannelId = Annotated[str, AfterValidator(_channel)]
"""A Slack channel ID (``C…`` public, ``G…`` private, ``D…`` a DM)."""


def _one_or_many(value: Any) -> Any:
    """Accept a single ID where a list is expected (``escalate_to: S0BACKUP``)."""
    return [value] if isinstance(value, str) else value


def _not_empty(value: list[str] | None) -> list[str] | None:
    if value is not None and not value:
        raise ValueError("must name at least one user or group (leave it out for anyone)")
    return value


Principals = Annotated[
    list[Principal] | None, BeforeValidator(_one_or_many), AfterValidator(_not_empty)
]

PostResults = Literal["all", "reviewed", "none"]
"""Whose tool output is posted in the run's Slack thread: every call's (``all``), only
calls a person decided (``reviewed``, the default: an ungated tool's output, such as
customer rows, and a call its ``when`` let through stay out of the channel), or none.
A call whose output is not posted gets a one-line note that it ran (or failed)."""

KEEP_MIDDLEWARE_DEFAULT = "default"
"""``edit_notice: default`` keeps the middleware's own notice; ``null`` adds none."""


ApprovalCount = Annotated[int, Field(ge=1, le=REQUIRED_APPROVALS_MAX, strict=True)]
"""Distinct people who must approve (1 to ``REQUIRED_APPROVALS_MAX``)."""


class ApprovalsByRisk(BaseModel):
    """``required_approvals`` by the statement's risk level: every level named, each
    at least as strict as the one below (``read_only`` ≤ ``write`` ≤ ``destructive``;
    ``unparseable`` ≥ ``write``: a statement nobody could read is no easier)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    read_only: ApprovalCount
    write: ApprovalCount
    destructive: ApprovalCount
    unparseable: ApprovalCount

    @model_validator(mode="after")
    def _stricter_with_risk(self) -> ApprovalsByRisk:
        steps = (("read_only", "write"), ("write", "destructive"), ("write", "unparseable"))
        for lower, higher in steps:
            if getattr(self, higher) < getattr(self, lower):
                raise ValueError(
                    f"{higher} ({getattr(self, higher)}) needs fewer approvals than {lower} "
                    f"({getattr(self, lower)}): a riskier statement must not be easier to run"
                )
        return self

    def of(self, level: RiskLevel) -> int:
        """The approvals a statement of ``level`` needs."""
        return int(getattr(self, level))


def _approvals_shape(value: Any) -> str:
    """Which form of ``required_approvals`` a value is: a mapping is by risk level."""
    return "by_risk" if isinstance(value, dict | ApprovalsByRisk) else "count"


RequiredApprovals = Annotated[
    Annotated[int, Field(ge=1, le=REQUIRED_APPROVALS_MAX, strict=True), Tag("count")]
    | Annotated[ApprovalsByRisk, Tag("by_risk")],
    Discriminator(_approvals_shape),
]
"""``required_approvals``: one number, or one per risk level (``ApprovalsByRisk``)."""


def _dialect(value: str) -> str:
    try:
        sqlglot.Dialect.get_or_raise(value)
    except ValueError:
        raise ValueError(
            f"{value!r} is not a sqlglot dialect (e.g. postgres, sqlite, mysql, snowflake)"
        ) from None
    return value


class SqlPolicy(BaseModel):
    """The ``sql:`` block of a tool that runs SQL: where its statement is and how to
    read it.

    Attributes:
        argument: The tool argument holding the statement.
        dialect: The sqlglot dialect of the database it runs on; a statement sqlglot
            cannot read in it is *unparseable*.
        estimate_url: A **read-only** connection for affected-rows estimates
            (``postgresql://...``, or ``sqlite:///path.db``, opened ``mode=ro``); a
            secret: never shown, logged or sent to Slack. Unset: no estimate.
        estimate_timeout_s: Statement timeout of the count (then of the planner's
            estimate, on PostgreSQL), seconds.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    argument: str = Field(min_length=1)
    dialect: Annotated[str, AfterValidator(_dialect)]
    estimate_url: SecretStr | None = None
    estimate_timeout_s: float = Field(default=ESTIMATE_TIMEOUT_S, gt=0, le=ESTIMATE_TIMEOUT_MAX_S)

    @field_validator("estimate_url")
    @classmethod
    def _known_scheme(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().startswith(
            ("postgresql://", "postgres://", "sqlite:///")
        ):
            raise ValueError("must be a postgresql://... or sqlite:///... URL")
        fields = set(_FIELD.findall(value.get_secret_value())) if value is not None else set()
        if fields - {"workspace_dir"}:
            unknown = ", ".join(f"{{{f}}}" for f in sorted(fields - {"workspace_dir"}))
            raise ValueError(f"{unknown} is not known here; the one field is {{workspace_dir}}")
        return value


_FIELD = re.compile(r"\{([^{}]*)\}")
"""A ``{field}`` in ``estimate_url`` (only ``{workspace_dir}`` is filled in)."""
_REVIEW_KEYS = (
    "allowed_decisions",
    "description",
    "description_callable",
    "when",
    "review_timeout_s",
    "on_timeout",
    "timeout_message",
    "channel",
    "approvers",
    "required_approvals",
    "requester_may_approve",
    "escalate_to",
    "escalate_after_s",
    "sql",
    "approvals_above_rows",
)
"""``ToolPolicy`` keys about reviewing a call: meaningless with ``gated: false``."""
_GATING_KEYS = ("allowed_decisions", "description", "description_callable", "when", "gated")
"""``ToolPolicy`` keys the middleware reads (which calls it stops, with what buttons and
words): meaningless under ``interrupts:``, whose graph raised the interrupt itself with its
own decisions and description."""


def duration_text(seconds: float) -> str:
    """``3600`` -> ``1 h``, ``90`` -> ``90 s``: a timeout as people say it."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)} {unit}"
    return f"{seconds:g} s"


class ToolPolicy(BaseModel):
    """How one tool is reviewed.

    Attributes:
        allowed_decisions: Buttons the reviewer gets (non-empty).
        review_timeout_s: How long a reviewer has, seconds; unset: no limit. A reminder
            is posted in the run's Slack thread at half-time.
        on_timeout: The decision applied at expiry (default ``reject``).
        timeout_message: The reason given to the model (``{timeout}`` is replaced).
        description: Static text shown to the reviewer, or ``callable: module:attr``
            naming a ``(tool_call, state, runtime) -> str`` function.
        when: Optional ``module:attr`` of a ``(ToolCallRequest) -> bool`` predicate;
            ``False`` lets the call run without review.
        channel: Channel ID for this tool's cards; unset: ``APPROVALS_CHANNEL``, else the
            run's own Slack thread. The run's thread then gets a pointer to the card.
        approvers: Who may decide (user and user-group IDs); unset: anyone in the
            workspace. Groups are resolved with ``usergroups.users.list``.
        required_approvals: Distinct approvers needed before the call runs (quorum).
        requester_may_approve: Whether the person who started the run may approve,
            edit or respond (four eyes when ``False``; rejecting is always allowed).
        escalate_to: Backup users or groups, mentioned on the card after
            ``escalate_after_s`` seconds; from then on they may decide too.
        gated: ``False``: the tool's calls run without review (as ``tool: false``),
            while its other keys (``redact``, ``post_results``) still apply.
        redact: Argument keys masked for this tool, on top of the policy's ``redact``.
        post_results: Whose output is posted (see ``PostResults``); unset: the
            policy's ``post_results``.
        sql: Where the tool's SQL statement is and its dialect (``SqlPolicy``): the
            card shows the statement's risk, and ``required_approvals`` may depend on it.
        approvals_above_rows: ``{rows: approvals}``: a statement touching more than
            ``rows`` rows needs at least that many approvals (needs ``sql.estimate_url``).
    """

    model_config = ConfigDict(extra="forbid")

    allowed_decisions: list[MiddlewareDecisionType] = Field(
        default_factory=lambda: list(DECISION_TYPES)
    )
    description: str | None = None
    description_callable: str | None = Field(default=None, alias="callable")
    when: str | None = None
    review_timeout_s: float | None = Field(default=None, gt=0)
    on_timeout: MiddlewareDecisionType = "reject"
    timeout_message: str = wording.DEFAULT_TIMEOUT_MESSAGE
    channel: ChannelId | None = None
    approvers: Principals = None
    required_approvals: RequiredApprovals = 1
    requester_may_approve: bool = False
    escalate_to: Principals = None
    escalate_after_s: float | None = Field(default=None, gt=0)
    gated: bool = True
    redact: list[str] = Field(default_factory=list)
    post_results: PostResults | None = None
    sql: SqlPolicy | None = None
    approvals_above_rows: dict[Annotated[int, Field(ge=0)], ApprovalCount] | None = None

    @model_validator(mode="after")
    def _ungated_has_no_review_keys(self) -> ToolPolicy:
        if not self.gated:
            given = [k for k in _REVIEW_KEYS if k in self.model_fields_set]
            if given:
                raise ValueError(
                    f"gated: false runs the tool without review, so {', '.join(given)} "
                    "would never apply; remove them, or remove gated: false"
                )
        return self

    @model_validator(mode="after")
    def _risk_rules_have_their_sql(self) -> ToolPolicy:
        if isinstance(self.required_approvals, ApprovalsByRisk) and self.sql is None:
            raise ValueError(
                "required_approvals by risk level needs a sql: block naming the statement's "
                "argument and dialect"
            )
        rows = self.approvals_above_rows
        if rows is not None:
            if not rows:
                raise ValueError("approvals_above_rows is empty: leave it out, or name a threshold")
            if self.sql is None or self.sql.estimate_url is None:
                raise ValueError(
                    "approvals_above_rows needs sql.estimate_url: without it affected rows "
                    "are never known, so every write would need the most approvals"
                )
            ordered = [rows[threshold] for threshold in sorted(rows)]
            if ordered != sorted(ordered):
                raise ValueError(
                    "approvals_above_rows must not ask fewer approvals for more rows: "
                    f"{dict(sorted(rows.items()))}"
                )
        return self

    def most_approvals(self) -> int:
        """The most approvals any call of this tool can need."""
        base = self.required_approvals
        most = (
            max(base.of(level) for level in RISK_LEVELS)
            if isinstance(base, ApprovalsByRisk)
            else base
        )
        return max([most, *(self.approvals_above_rows or {}).values()])

    def approvals_for(self, risk: SqlRisk | None) -> int:
        """The approvals a call needs: its risk level's (``required_approvals``), raised
        to that of the highest ``approvals_above_rows`` threshold its affected rows pass;
        a write whose rows are not known counts as above every threshold (fails closed),
        and so does one whose rows are only the planner's estimate (a ``WHERE`` the
        planner cannot read, an expression, is guessed at a fraction of the table, and
        one made to time the count out would choose the number), or leave out what
        foreign keys, triggers or rules change beside them (``RowEstimate.cascades``).

        Args:
            risk: The call's SQL risk (``None``: the tool has no ``sql``, or it could
                not be read; then the strictest level applies).
        """
        counted = risk.rows if risk is not None and risk.rows is not None else None
        exact = counted is not None and counted.method == "exact_count"
        # what cascades or triggers change is not in the count: the rows are not known
        alone = counted is not None and not counted.cascades and not counted.triggers
        rows = counted.rows if counted is not None and exact and alone else None
        return self._approvals(risk.level if risk else "unparseable", rows)

    def edited_approvals(self) -> dict[RiskLevel, int] | None:
        """For a tool with ``sql``: the approvals an *edited* statement needs, by its risk
        level (an edit's rows are not estimated, so a write counts as above every row
        threshold); ``None`` for other tools."""
        if self.sql is None:
            return None
        return {level: self._approvals(level, None) for level in RISK_LEVELS}

    def _approvals(self, level: RiskLevel, rows: int | None) -> int:
        base = self.required_approvals
        needed = base.of(level) if isinstance(base, ApprovalsByRisk) else base
        thresholds = self.approvals_above_rows or {}
        if not thresholds or level == "read_only":
            return needed
        passed = [n for limit, n in thresholds.items() if rows is None or rows > limit]
        return max([needed, *passed])

    @model_validator(mode="after")
    def _quorum_is_reachable(self) -> ToolPolicy:
        named = self.approvers or []
        if named and not any(p.startswith("S") for p in named):
            people = len(set(named))
            most = self.most_approvals()
            if people < most:
                needs, outcome = (
                    (f"required_approvals is {most}", "no call could ever be approved")
                    if most == self.required_approvals
                    else (
                        f"a call may need {most} approvals (by risk or rows)",
                        "such a call could never be approved",
                    )
                )
                named_people = f"{people} {'person' if people == 1 else 'people'}"
                raise ValueError(f"{needs} but approvers names only {named_people}: {outcome}")
        return self

    @model_validator(mode="after")
    def _escalation_is_complete(self) -> ToolPolicy:
        if (self.escalate_to is None) != (self.escalate_after_s is None):
            raise ValueError("escalate_to and escalate_after_s go together: set both or neither")
        if (
            self.escalate_after_s
            and self.review_timeout_s
            and self.escalate_after_s >= self.review_timeout_s
        ):
            raise ValueError(
                f"escalate_after_s ({self.escalate_after_s:g}) must be less than "
                f"review_timeout_s ({self.review_timeout_s:g}): escalation comes before expiry"
            )
        return self

    @model_validator(mode="after")
    def _timeout_decision_is_allowed(self) -> ToolPolicy:
        if self.review_timeout_s and self.on_timeout not in self.allowed_decisions:
            raise ValueError(
                f"on_timeout {self.on_timeout!r} is not among allowed_decisions "
                f"{self.allowed_decisions}"
            )
        if self.on_timeout == "edit":
            raise ValueError("on_timeout cannot be 'edit': there are no edited arguments")
        return self

    def timeout_decision(self) -> Decision | None:
        """The decision applied when no one decides within ``review_timeout_s``."""
        if not self.review_timeout_s:
            return None
        message = self.timeout_message.format(timeout=duration_text(self.review_timeout_s))
        return Decision(
            type=self.on_timeout, message=None if self.on_timeout == "approve" else message
        )

    def rules(self, risk: SqlRisk | None = None) -> ReviewRules:
        """Who may decide this tool's calls, as stored with each request.

        Args:
            risk: The call's SQL risk, for a tool with ``sql``: ``required_approvals``
                is then the effective number (``approvals_for``).
        """
        return ReviewRules(
            approvers=tuple(self.approvers) if self.approvers is not None else None,
            required_approvals=self.approvals_for(risk),
            edited_approvals=self.edited_approvals(),
            requester_may_approve=self.requester_may_approve,
            escalate_to=tuple(self.escalate_to or ()),
            escalate_after_s=self.escalate_after_s,
        )

    def middleware_config(self, *, default_description: str) -> dict[str, Any]:
        """Return this tool's ``InterruptOnConfig`` dict.

        Args:
            default_description: Shown when the tool has no description of its own.
                The middleware's own default appends the arguments as a Python repr;
                the card shows them already, readably.
        """
        if not self.allowed_decisions:
            raise ConfigurationError("allowed_decisions must list at least one decision.")
        config: dict[str, Any] = {"allowed_decisions": list(dict.fromkeys(self.allowed_decisions))}
        if self.description_callable:
            config["description"] = import_object(self.description_callable)
        else:
            config["description"] = self.description or default_description
        if self.when:
            config["when"] = import_object(self.when)
        return config


class Policy(BaseModel):
    """A whole approval policy; ``tools`` maps a tool name to ``true``, ``false`` or
    a ``ToolPolicy``. A tool not listed runs without review.

    Attributes:
        requesters: Who may start runs (user and user-group IDs); unset: anyone in the
            workspace. Bots never start runs.
        max_active_runs_per_user: Runs one person may have queued, running or waiting.
        redact: Argument keys whose values are never shown (in Slack, logs and the audit
            trail), matched case-insensitively, ignoring ``_``/``-``, also as a key's
            ending (``db_password``, ``GITHUB_TOKEN``); replaces the default list
            (``redaction.DEFAULT_REDACT``), so keep its names when adding yours.
        post_results: Whose tool output is posted, unless a tool says (``PostResults``).
        system_prompt: The system prompt of an agent built from a list of tools (or
            ``SYSTEM_PROMPT``; setting both is refused, ``agent_bridge.agent``); a
            compiled graph has its own, so it is refused there.
        interrupts: The Slack-side rules (channel, approvers, quorum, time limits...) of
            requests made from interrupts that are not ``HumanInTheLoopMiddleware``'s, by
            their name (an Agent Inbox action, a JSON-schema interrupt's ``name``, else
            ``interrupt``: docs/architecture.md, "Interrupts"). They gate nothing (the
            graph raised the interrupt itself), so a name here may not also be a tool's.
    """

    model_config = ConfigDict(extra="forbid")

    interrupt_mode: MiddlewareMode = "batched"
    description_prefix: str = wording.DEFAULT_DESCRIPTION_PREFIX
    edit_notice: str | None = KEEP_MIDDLEWARE_DEFAULT
    requesters: Principals = None
    max_active_runs_per_user: int = Field(default=DEFAULT_MAX_ACTIVE_RUNS_PER_USER, ge=1)
    redact: list[str] = Field(default_factory=lambda: list(DEFAULT_REDACT))
    post_results: PostResults = "reviewed"
    system_prompt: str | None = Field(default=None, min_length=1)
    tools: dict[str, bool | ToolPolicy] = Field(default_factory=dict)
    interrupts: dict[str, ToolPolicy] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _names_are_one_kind(self) -> Policy:
        both = sorted(set(self.tools) & set(self.interrupts))
        if both:
            raise ValueError(
                f"{', '.join(both)} is under both tools and interrupts: a name is a tool's "
                "(gated by the middleware) or an interrupt's, not both"
            )
        return self

    @model_validator(mode="after")
    def _interrupts_have_slack_side_rules_only(self) -> Policy:
        for name, entry in self.interrupts.items():
            given = [k for k in _GATING_KEYS if k in entry.model_fields_set]
            if given:
                raise ValueError(
                    f"interrupts.{name}: {', '.join(given)} means nothing there: the graph "
                    "raised the interrupt with its own decisions and description; remove it"
                )
            if entry.review_timeout_s and entry.on_timeout == "reject":
                raise ValueError(
                    f"interrupts.{name}: on_timeout 'reject' is no interrupt's decision (a "
                    "question is answered, a form filled in, an Agent Inbox action accepted, "
                    "edited, answered or ignored); set on_timeout: respond (answers a "
                    "question with timeout_message) or approve (accepts an action)"
                )
        return self

    def start_rules(self) -> StartRules:
        """Who may start runs, as the worker publishes it for the web process."""
        return StartRules(
            requesters=tuple(self.requesters) if self.requesters is not None else None,
            max_active_runs_per_user=self.max_active_runs_per_user,
        )

    def gated(self, tool_name: str) -> ToolPolicy | None:
        """Return the tool's policy if calls to it are reviewed, else ``None``; for the
        name of an interrupt that is not the middleware's, its ``interrupts`` entry."""
        if tool_name in self.interrupts:
            return self.interrupts[tool_name]
        entry = self.tools.get(tool_name)
        if entry is True:
            return ToolPolicy()
        return entry if isinstance(entry, ToolPolicy) and entry.gated else None

    def _entry(self, tool_name: str) -> ToolPolicy | None:
        entry = self.tools.get(tool_name)
        return entry if isinstance(entry, ToolPolicy) else None

    def redaction(self, tool_name: str) -> tuple[str, ...]:
        """The ``redact`` rules of ``tool_name``'s arguments: the policy's, then the tool's."""
        entry = self._entry(tool_name)
        return tuple(dict.fromkeys([*self.redact, *(entry.redact if entry else [])]))

    def posts_results(self, tool_name: str) -> PostResults:
        """Whose output of ``tool_name`` is posted: the tool's ``post_results``, else the
        policy's."""
        entry = self._entry(tool_name)
        return entry.post_results if entry and entry.post_results else self.post_results

    def check_sql_arguments(self, arguments: Mapping[str, Collection[str]]) -> None:
        """Refuse a gated tool's ``sql.argument`` that the tool does not take.

        Args:
            arguments: Tool name -> the names of its arguments (a tool not listed is
                not checked).

        Raises:
            ConfigurationError: Naming the tool, the argument and those it takes.
        """
        for name, taken in arguments.items():
            tool_policy = self.gated(name)
            if tool_policy and tool_policy.sql and tool_policy.sql.argument not in taken:
                raise ConfigurationError(
                    f"tools.{name}.sql.argument is {tool_policy.sql.argument!r}, but "
                    f"{name} takes {', '.join(sorted(taken)) or 'no arguments'}: name "
                    "the argument that holds the statement."
                )

    def middleware_kwargs(self) -> dict[str, Any]:
        """Return keyword arguments for ``HumanInTheLoopMiddleware(...)``."""
        interrupt_on = {}
        for name in self.tools:
            tool_policy = self.gated(name)
            if tool_policy is not None:
                interrupt_on[name] = tool_policy.middleware_config(
                    default_description=self.description_prefix
                )
        kwargs: dict[str, Any] = {
            "interrupt_on": interrupt_on,
            "description_prefix": self.description_prefix,
            "interrupt_mode": self.interrupt_mode,
        }
        if self.edit_notice != KEEP_MIDDLEWARE_DEFAULT:
            kwargs["edit_notice"] = self.edit_notice
        return kwargs

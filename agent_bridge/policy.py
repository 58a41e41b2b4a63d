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
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agent_bridge import wording
from agent_bridge.errors import ConfigurationError
from agent_bridge.imports import import_object
from agent_bridge.models import DECISION_TYPES, Decision, DecisionType, InterruptMode

POLICIES_DIR = Path(__file__).with_name("policies")
"""Example policies shipped with the package: ``demo.yml``, ``per_call.yml``,
``conditional.yml``."""
DEMO_POLICY_PATH = POLICIES_DIR / "demo.yml"

KEEP_MIDDLEWARE_DEFAULT = "default"
"""``edit_notice: default`` keeps the middleware's own notice; ``null`` adds none."""


def _duration(seconds: float) -> str:
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
    """

    model_config = ConfigDict(extra="forbid")

    allowed_decisions: list[DecisionType] = Field(default_factory=lambda: list(DECISION_TYPES))
    description: str | None = None
    description_callable: str | None = Field(default=None, alias="callable")
    when: str | None = None
    review_timeout_s: float | None = Field(default=None, gt=0)
    on_timeout: DecisionType = "reject"
    timeout_message: str = wording.DEFAULT_TIMEOUT_MESSAGE

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
        message = self.timeout_message.format(timeout=_duration(self.review_timeout_s))
        return Decision(
            type=self.on_timeout, message=None if self.on_timeout == "approve" else message
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
    a ``ToolPolicy``. A tool not listed runs without review."""

    model_config = ConfigDict(extra="forbid")

    interrupt_mode: InterruptMode = "batched"
    description_prefix: str = wording.DEFAULT_DESCRIPTION_PREFIX
    edit_notice: str | None = KEEP_MIDDLEWARE_DEFAULT
    tools: dict[str, bool | ToolPolicy] = Field(default_factory=dict)

    def gated(self, tool_name: str) -> ToolPolicy | None:
        """Return the tool's policy if calls to it are reviewed, else ``None``."""
        entry = self.tools.get(tool_name)
        if entry is True:
            return ToolPolicy()
        return entry if isinstance(entry, ToolPolicy) else None

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


def load_policy(path: Path | None) -> Policy:
    """Read a policy file (``None``: the demo policy).

    Raises:
        ConfigurationError: If the file is missing, not YAML, or not a valid policy;
            the message names the file and the field.
    """
    source = path or DEMO_POLICY_PATH
    try:
        data = yaml.safe_load(source.read_text(encoding="utf-8")) or {}
        return Policy.model_validate(data)
    except OSError as exc:
        raise ConfigurationError(f"Cannot read policy file {source}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigurationError(f"Policy file {source} is not valid YAML: {exc}") from exc
    except ValidationError as exc:
        raise ConfigurationError(f"Policy file {source} is invalid:\n{exc}") from exc

"""The approval policy of a compiled-graph agent: the Slack-side rules only.

With a list of tools the policy both gates (it becomes the ``HumanInTheLoopMiddleware``
options, ``Policy.middleware_kwargs``) and says how gated calls are reviewed in Slack.
A compiled graph gates with its own middleware (``agent_bridge.graph_agent``), so here
the policy keeps only the Slack side: ``channel``, ``approvers``, quorum, time limits,
``sql``, ``redact``, ``post_results``, who may start runs. ``policy_for_graph`` returns
the policy the worker then uses everywhere (cards, run messages, risk), in which:

- every tool the graph gates has an entry (its own, else the default rules) whose
  ``allowed_decisions`` are the graph's, and ``interrupt_mode`` is the graph's;
- the gating keys (``allowed_decisions``, ``description``, ``callable``, ``when``,
  ``interrupt_mode``, ``description_prefix``, ``edit_notice``) are ignored, with a
  warning naming them;
- an entry that gates a tool the graph does not gate, or says a tool the graph gates
  is not gated, and an ``interrupts`` entry named like a tool the graph gates, are
  refused at start (``ConfigurationError``);
- a ``system_prompt`` is refused: the graph has its own.
"""

from __future__ import annotations

import logging

from pydantic import ValidationError

from agent_bridge.errors import ConfigurationError
from agent_bridge.graph_agent import GraphShape
from agent_bridge.models import DecisionType
from agent_bridge.policy import Policy, ToolPolicy

logger = logging.getLogger(__name__)

TOOL_GATING_KEYS = ("allowed_decisions", "description", "description_callable", "when")
"""``ToolPolicy`` keys that configure the middleware: the graph's own middleware decides."""
POLICY_GATING_KEYS = ("interrupt_mode", "description_prefix", "edit_notice")
"""``Policy`` keys that configure the middleware."""


def policy_for_graph(policy: Policy, shape: GraphShape) -> Policy:
    """Return ``policy`` as it applies to a compiled graph gating as ``shape`` says.

    Args:
        policy: The loaded policy (``POLICY``).
        shape: What the graph has and gates (``graph_agent.discover``).

    Returns:
        The policy with one ``ToolPolicy`` per gated tool, carrying the graph's allowed
        decisions, and the graph's interrupt mode.

    Raises:
        ConfigurationError: If the policy gates a tool the graph does not gate, says a
            tool the graph gates is not gated, names one under ``interrupts``, sets
            ``system_prompt``, or a tool's
            Slack-side rules do not hold with the graph (an ``on_timeout`` its decisions
            do not include, a ``sql.argument`` its tool does not take).
    """
    if policy.system_prompt is not None:
        raise ConfigurationError(
            "The policy sets system_prompt, but AGENT is a compiled graph, which has its "
            "own (create_agent(system_prompt=...)): remove system_prompt from the policy."
        )
    graph_gates = ", ".join(sorted(shape.gated)) or "no tool"
    both = sorted(set(shape.gated) & set(policy.interrupts))
    if both:
        # Policy.gated reads interrupts first: the entry's rules and decisions, not the
        # graph's, would apply to the tool's calls.
        raise ConfigurationError(
            f"The policy names {', '.join(both)} under interrupts, but the graph's "
            "HumanInTheLoopMiddleware gates a tool of that name: a name is a tool's or an "
            "interrupt's, not both. Move its rules to tools."
        )
    tools: dict[str, bool | ToolPolicy] = {}
    for name, entry in policy.tools.items():
        reviewed = policy.gated(name)
        if name not in shape.gated:
            if reviewed is not None:
                raise ConfigurationError(
                    f"The policy gates {name}, but the graph's HumanInTheLoopMiddleware "
                    f"does not (it gates {graph_gates}). With a compiled graph the policy "
                    f"only says how gated calls are reviewed in Slack: add {name} to the "
                    "middleware's interrupt_on, or remove it from the policy (gated: false "
                    "keeps its redact and post_results)."
                )
            tools[name] = entry
            continue
        if reviewed is None:
            raise ConfigurationError(
                f"The policy says {name} is not gated, but the graph's "
                f"HumanInTheLoopMiddleware gates it: remove tools.{name} from the policy, "
                "or take it out of the middleware's interrupt_on."
            )
        tools[name] = _slack_side(name, reviewed, shape.gated[name])
    for name, allowed in shape.gated.items():
        if name not in tools:
            tools[name] = ToolPolicy(allowed_decisions=list(allowed))
    _warn_ignored("the policy", policy.model_fields_set, POLICY_GATING_KEYS)
    applied = policy.model_copy(
        update={"tools": tools, "interrupt_mode": shape.interrupt_mode or policy.interrupt_mode}
    )
    applied.check_sql_arguments({name: list(t.args) for name, t in shape.tools.items()})
    return applied


def _slack_side(name: str, entry: ToolPolicy, allowed: tuple[DecisionType, ...]) -> ToolPolicy:
    """``entry`` without its gating keys, with the graph's ``allowed``, validated again
    (``on_timeout`` must be one of them)."""
    _warn_ignored(f"tools.{name}", entry.model_fields_set, TOOL_GATING_KEYS)
    kept = entry.model_dump(by_alias=True, exclude_unset=True, exclude=set(TOOL_GATING_KEYS))
    try:
        return ToolPolicy.model_validate({**kept, "allowed_decisions": list(allowed)})
    except ValidationError as exc:
        problems = "; ".join(str(e["msg"]) for e in exc.errors())
        raise ConfigurationError(
            f"tools.{name}: {problems} (the graph's HumanInTheLoopMiddleware allows "
            f"{', '.join(allowed)})."
        ) from None


def _warn_ignored(where: str, given: set[str], keys: tuple[str, ...]) -> None:
    ignored = [k for k in keys if k in given]
    if ignored:
        logger.warning(
            "%s sets %s, ignored: the compiled graph's HumanInTheLoopMiddleware gates its tools",
            where,
            ", ".join("callable" if k == "description_callable" else k for k in ignored),
        )

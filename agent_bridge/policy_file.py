"""Loading the approval policy: a YAML file, or a ``Policy`` named ``module:attribute``.

A bad key or value is refused at start with its name and its line in the file
(``ConfigurationError``), so an admin finds the typo before any card is posted.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from agent_bridge.errors import ConfigurationError
from agent_bridge.imports import import_object
from agent_bridge.policy import Policy
from agent_bridge.redaction import DEFAULT_REDACT, is_redacted

logger = logging.getLogger(__name__)

POLICIES_DIR = Path(__file__).with_name("policies")
"""Example policies shipped with the package: ``demo.yml``, ``per_call.yml``,
``conditional.yml``."""
DEMO_POLICY_PATH = POLICIES_DIR / "demo.yml"

_REFERENCE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
_UNION_BRANCHES = frozenset({"bool", "ToolPolicy", "count", "by_risk"})
"""Names pydantic puts in an error's location for ``tools``' ``bool | ToolPolicy``
and ``required_approvals``' tagged ``count | by_risk``
(with a model validator, ``function-after[...]``)."""


def load_policy(source: Path | str | Policy | None) -> Policy:
    """Return the policy of ``source``; a ``redact`` list leaving out a name of the
    default one is logged as a warning (its values would be shown: a list that was meant
    to add ``dsn`` and dropped ``password``).

    Args:
        source: A YAML file; ``package.module:attribute`` naming a ``Policy`` (the
            Python API); a ``Policy`` itself; ``None`` for the demo policy.

    Raises:
        ConfigurationError: If the file is missing or not YAML, the reference does not
            name a ``Policy``, or the policy is invalid; the message names the file, each
            bad key and its line.
    """
    policy = _load(source)
    unmasked = [name for name in DEFAULT_REDACT if not is_redacted(name, tuple(policy.redact))]
    if unmasked:
        logger.warning(
            "the policy's redact list leaves out %s of the default list: values under such "
            "keys are shown on cards, in logs and in the audit trail; list them too to keep "
            "them masked",
            ", ".join(unmasked),
        )
    return policy


def _load(source: Path | str | Policy | None) -> Policy:
    if isinstance(source, Policy):
        return source
    if source is not None and _REFERENCE.fullmatch(str(source)) and not Path(source).exists():
        found = import_object(str(source))
        if not isinstance(found, Policy):
            raise ConfigurationError(
                f"POLICY={source} names a {type(found).__name__}, not an "
                "agent_bridge.policy.Policy."
            )
        return found
    path = Path(source) if source is not None else DEMO_POLICY_PATH
    try:
        text = path.read_text(encoding="utf-8")
        root = yaml.compose(text)
        data = yaml.safe_load(text) or {}
    except OSError as exc:
        raise ConfigurationError(f"Cannot read policy file {path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigurationError(f"Policy file {path} is not valid YAML: {exc}") from exc
    duplicates = list(_duplicate_keys(root))
    if duplicates:
        raise ConfigurationError(f"Policy file {path} is invalid:\n" + "\n".join(duplicates))
    try:
        return Policy.model_validate(data)
    except ValidationError as exc:
        problems = "\n".join(_describe(error, root) for error in _relevant(exc.errors()))
        raise ConfigurationError(f"Policy file {path} is invalid:\n{problems}") from exc


def _duplicate_keys(node: yaml.Node | None, where: str = "") -> Iterator[str]:
    """A key given twice in one mapping (YAML keeps the last silently: a second
    ``execute_sql:`` would drop the first one's approvers)."""
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key, value in node.value:
            name = str(key.value)
            line = int(key.start_mark.line) + 1
            if name in seen:
                yield (
                    f"  line {line}, {where}{name}: given twice (first on line {seen[name]}); "
                    "keep one"
                )
            seen.setdefault(name, line)
            yield from _duplicate_keys(value, f"{where}{name}.")
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield from _duplicate_keys(item, f"{where}{index}.")


def _relevant(errors: Sequence[Any]) -> list[Any]:
    """Drop the ``bool`` branch's complaints about a tool given as a mapping."""
    kept = [e for e in errors if not (e["type"].startswith("bool_") and "bool" in e["loc"])]
    return kept or list(errors)


def _describe(error: Any, root: yaml.Node | None) -> str:
    """``line 7, tools.execute_sql.approvers.0: <message>``."""
    loc = [
        part
        for part in error["loc"]
        if part not in _UNION_BRANCHES and not (isinstance(part, str) and "[" in part)
    ]
    name = ".".join(str(part) for part in loc) or "(the whole file)"
    line = _line_of(root, loc)
    where = f"line {line}, " if line else ""
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"  {where}{name}: {message}"


def _line_of(node: yaml.Node | None, loc: Sequence[Any]) -> int | None:
    """The 1-based line of the YAML node at ``loc``, or of its nearest parent."""
    if node is None:
        return None
    line = int(node.start_mark.line) + 1
    for part in loc:
        found = _child(node, part)
        if found is None:
            return line
        shown, node = found
        line = int(shown.start_mark.line) + 1
    return line


def _child(node: yaml.Node, part: Any) -> tuple[yaml.Node, yaml.Node] | None:
    """``(node whose line to show, node to descend into)`` for one step of a location: a
    mapping's key (where the admin looks for it) and its value, or a sequence's item."""
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                return key, value
    elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
        return node.value[part], node.value[part]
    return None

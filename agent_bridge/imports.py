"""Resolve ``module:attribute`` references named in configuration (``AGENT``, policy hooks)."""

from __future__ import annotations

import importlib
from typing import Any

from agent_bridge.errors import ConfigurationError


def import_object(reference: str) -> Any:
    """Return the object named by ``reference`` (``package.module:attribute``).

    Raises:
        ConfigurationError: If the reference is malformed, the module cannot be
            imported or has no such attribute.
    """
    module_name, sep, attribute = reference.partition(":")
    if not sep or not module_name or not attribute:
        raise ConfigurationError(f"{reference!r} is not of the form 'package.module:attribute'.")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(f"Cannot import {module_name!r} for {reference!r}: {exc}") from exc
    target: Any = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError as exc:
            raise ConfigurationError(f"{module_name!r} has no attribute {attribute!r}.") from exc
    return target

"""Resolve ``module:attribute`` references named in configuration (``AGENT``, policy hooks)."""

from __future__ import annotations

import importlib
import logging
from typing import Any

from agent_bridge.errors import ConfigurationError

logger = logging.getLogger(__name__)


def import_object(reference: str) -> Any:
    """Return the object named by ``reference`` (``package.module:attribute``).

    Raises:
        ConfigurationError: If the reference is malformed, the module cannot be
            imported (missing, or its code raised) or has no such attribute.
    """
    module_name, sep, attribute = reference.partition(":")
    if not sep or not module_name or not attribute:
        raise ConfigurationError(f"{reference!r} is not of the form 'package.module:attribute'.")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(f"Cannot import {module_name!r} for {reference!r}: {exc}") from exc
    except Exception as exc:  # the module's own code failed (a variable it reads, ...)
        logger.debug("importing %s failed", module_name, exc_info=True)
        raise ConfigurationError(
            f"Cannot import {module_name!r} for {reference!r}: {type(exc).__name__}: {exc} "
            "(raised by the module's own code; --log-level DEBUG shows where)"
        ) from exc
    target: Any = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError as exc:
            raise ConfigurationError(f"{module_name!r} has no attribute {attribute!r}.") from exc
    return target

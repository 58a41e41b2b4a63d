"""The benchmark's errors."""

from __future__ import annotations


class BenchError(Exception):
    """The benchmark cannot run as asked; the message says what to install or change."""

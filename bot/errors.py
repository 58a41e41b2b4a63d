"""Errors of the Slack side. Each says what to do next."""

from __future__ import annotations


class BotError(Exception):
    """Root of every error ``bot`` raises on purpose."""


class PayloadError(BotError):
    """Slack sent a payload this app cannot read (or someone sent one pretending).

    It is answered without a crash and logged; nothing is recorded.
    """

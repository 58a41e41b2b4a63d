"""Ports for the servers the tests and benchmarks start as processes.

A port is chosen free, then released for the server to bind: between the two, another
process (a parallel test session's server, any listener) can take it. Our ``web``
process then exits saying so in its log (aiohttp's ``[Errno 98] ... address already in
use``), and its starter tries again on another port (``port_taken``, ``PORT_ATTEMPTS``);
``langgraph dev`` takes another port itself and announces it, and its starter reads it
there (``tests.agent_server.ANNOUNCED``).
"""

from __future__ import annotations

import socket
from pathlib import Path

PORT_ATTEMPTS = 3
"""Ports a starter tries before giving up (each taken between its choice and its bind)."""


def free_port() -> int:
    """A TCP port nothing listens on on 127.0.0.1 right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def port_taken(log: Path, since: int) -> bool:
    """Whether the server that wrote ``log`` from byte ``since`` on exited because its
    port was taken."""
    with log.open("rb") as text:
        text.seek(since)
        return b"address already in use" in text.read().lower()

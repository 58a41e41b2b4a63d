"""Ports for the servers the tests and benchmarks start as processes.

A port is chosen free, then released for the server to bind: between the two, another
process (a parallel test session's server, any listener) can take it. A server started
on a taken port exits saying so in its log (uvicorn's and aiohttp's ``[Errno 98] ...
address already in use``), and its starter tries again on another port. (Another
server of the same kind that took the port, answering the starter's readiness check
before this one gives up, is not told apart: that needs both choices to collide within
the second the server takes to bind.)
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

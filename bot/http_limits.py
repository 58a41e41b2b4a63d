"""How much the web process accepts from one client, and for how long it waits.

Slack's largest legitimate request is a ``view_submission`` of a full modal: the whole
view (up to ``VIEW_MAX_BLOCKS`` blocks, each input's ``initial_value``) and its
``state.values`` (each ``plain_text_input`` up to ``INPUT_MAX_CHARS``), as JSON,
form-encoded (https://docs.slack.dev/reference/views, "Modal view": 100 blocks;
https://docs.slack.dev/reference/block-kit/block-elements/plain-text-input-element:
``max_length`` at most 3,000). A character costs at most ``BYTES_PER_CHAR_MAX`` bytes on
the wire. So ``MAX_BODY_BYTES`` holds the largest modal Slack can send, and a larger
body is refused with 413 before it is read whole.

A client that does not send its request in time is dropped (``HEADER_READ_TIMEOUT_S``,
``BODY_READ_TIMEOUT_S``): Slack sends a request at once, so a slow one is not Slack.
"""

from __future__ import annotations

from dataclasses import dataclass

VIEW_MAX_BLOCKS = 100
INPUT_MAX_CHARS = 3000
BYTES_PER_CHAR_MAX = 16
"""An emoji as JSON escapes it (a surrogate pair, ``\\ud83d\\ude00``), form-encoded:
``%5Cud83d%5Cude00``."""
COPIES_PER_INPUT = 2
"""Each input's text is sent twice: its ``initial_value`` in the view, its answer in
``state.values``."""
ENVELOPE_BYTES = 1024 * 1024
"""The rest of a payload: user, team, view metadata, titles, hashes, ``response_urls``."""
MAX_BODY_BYTES = (
    VIEW_MAX_BLOCKS * COPIES_PER_INPUT * INPUT_MAX_CHARS * BYTES_PER_CHAR_MAX + ENVELOPE_BYTES
)
"""About 10.2 MiB: the largest request body the web process reads (aiohttp's
``client_max_size``); a larger one is answered 413."""

HEADER_READ_TIMEOUT_S = 10.0
"""A connection must deliver a request's headers this long after it opens (or after its
previous request), seconds, else it is closed (aiohttp's ``keepalive_timeout``, which
runs from the connection's start and is not extended by a trickle of bytes)."""
BODY_READ_TIMEOUT_S = 10.0
"""A request's body must arrive within this long after its headers, seconds, else 408."""

MAX_CONNECTIONS = 512
"""Open client connections at most; at the limit a new one replaces the oldest
connection with no request in progress (``bot.connections``)."""
FD_RESERVE = 128
"""File descriptors kept for everything but client connections (database pool, Redis,
Slack sessions, logs): the bound is also below ``RLIMIT_NOFILE`` minus this."""


@dataclass(frozen=True)
class HttpLimits:
    """The web process's limits on clients (tests shorten the times and the bound)."""

    max_connections: int = MAX_CONNECTIONS
    header_read_timeout_s: float = HEADER_READ_TIMEOUT_S
    body_read_timeout_s: float = BODY_READ_TIMEOUT_S


DEFAULT_LIMITS = HttpLimits()

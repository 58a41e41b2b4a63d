"""Signing and posting requests to the bot's request URL, as Slack does.

Slack signs ``v0:{timestamp}:{body}`` with the app's signing secret (HMAC-SHA256) and
sends it in ``X-Slack-Signature`` with ``X-Slack-Request-Timestamp``; the app must
answer within 3 s.
"""

from __future__ import annotations

import io
import json
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import aiohttp
from slack_sdk.signature import SignatureVerifier

from slack_sandbox.errors import BotUnreachable

ACK_DEADLINE_S = 3.0
"""Slack shows an error to the user when an app answers later than this."""
REQUEST_TIMEOUT_S = 30.0
"""How long the sandbox waits for the bot at all (longer than Slack, to report it)."""
IDLE_REUSE_S = 2.0
"""How long an idle connection to the bot is kept for the next delivery, seconds: less
than an app's server keeps one open idle (the product's web process closes it after
10 s, aiohttp's default is 75 s). aiohttp's client would keep it 15 s, and a request
written into a connection the server is closing at that moment fails ("Can not write
request body"), which a benchmark run met after a 10 s pause in deliveries."""
LARGE_BODY_BYTES = 1024 * 1024
"""Bodies larger than this are posted as a stream (aiohttp warns about raw bytes)."""
FORM = "application/x-www-form-urlencoded"


@dataclass(frozen=True)
class Reply:
    """The bot's HTTP answer to one delivery."""

    status: int
    body: str
    elapsed_s: float

    def json(self) -> Any:
        """Return the body parsed as JSON (``None`` when empty).

        Raises:
            ValueError: The body is not JSON.
        """
        return json.loads(self.body) if self.body.strip() else None


def form_body(fields: dict[str, str]) -> bytes:
    """Return ``fields`` form-encoded, as Slack encodes slash commands."""
    return urlencode(fields).encode()


def payload_body(payload: dict[str, Any]) -> bytes:
    """Return an interaction ``payload`` as Slack posts it: ``payload=<json>``."""
    return form_body({"payload": json.dumps(payload)})


class Delivery:
    """Posts signed requests to the bot; owns one ``aiohttp`` client session.

    Args:
        signing_secret: The app's signing secret (the bot verifies with the same one).
    """

    def __init__(self, *, signing_secret: str) -> None:
        self.verifier = SignatureVerifier(signing_secret)
        self._session: aiohttp.ClientSession | None = None

    def sign(self, body: bytes, timestamp: int) -> str:
        """Return the ``X-Slack-Signature`` of ``body`` sent at Unix ``timestamp`` (s)."""
        return self.verifier.generate_signature(timestamp=str(timestamp), body=body) or ""

    async def post(
        self,
        url: str | None,
        body: bytes,
        *,
        content_type: str = FORM,
        timestamp: int | None = None,
        signature: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        """Post ``body`` to ``url`` signed (correctly unless told otherwise).

        Args:
            url: The bot's request URL.
            body: The raw request body.
            content_type: The ``Content-Type`` header.
            timestamp: ``X-Slack-Request-Timestamp`` (Unix s); now when None. Signed
                with the real clock because the bot checks it against its own.
            signature: ``X-Slack-Signature``; the correct one when None.
            headers: Extra headers, overriding the above.

        Raises:
            BotUnreachable: ``url`` is unset, or the bot is unreachable or too slow.
        """
        if not url:
            raise BotUnreachable("request_url is not set; point it at the bot's /slack/events")
        ts = int(time.time()) if timestamp is None else timestamp
        sent_headers = {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": str(ts),
            "X-Slack-Signature": signature if signature is not None else self.sign(body, ts),
            "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
        } | (headers or {})
        if self._session is None or self._session.closed:
            timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)
            connector = aiohttp.TCPConnector(keepalive_timeout=IDLE_REUSE_S)
            self._session = aiohttp.ClientSession(timeout=timeout, connector=connector)
        started = time.monotonic()
        try:
            # A large body goes as a stream: aiohttp warns that raw bytes over 1 MiB
            # might block the loop (Slack's largest modals are about 10 MiB).
            data = io.BytesIO(body) if len(body) > LARGE_BODY_BYTES else body
            async with self._session.post(url, data=data, headers=sent_headers) as response:
                text = await response.text()
                status = response.status
        except (aiohttp.ClientError, TimeoutError) as e:
            raise BotUnreachable(f"could not reach the bot at {url}: {e!r}") from e
        return Reply(status=status, body=text, elapsed_s=time.monotonic() - started)

    async def close(self) -> None:
        """Close the client session (idempotent)."""
        if self._session is not None:
            await self._session.close()
            self._session = None

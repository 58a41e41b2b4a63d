"""The Slack Web API client, with slack_sdk's own retry handlers.

429 answers are retried after their ``Retry-After`` and 5xx / connection errors with
backoff (``slack_sdk.http_retry``), so neither the web process nor the worker writes its
own retry loop.
"""

from __future__ import annotations

from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

MAX_RETRIES = 2
REQUEST_TIMEOUT_S = 10


def make_client(*, token: str, base_url: str) -> AsyncWebClient:
    """Return an ``AsyncWebClient`` for ``base_url`` (Slack's, or the sandbox's ``/api/``).

    Args:
        token: Bot token (``xoxb-...``).
        base_url: Web API base URL ending in ``/``.
    """
    return AsyncWebClient(
        token=token,
        base_url=base_url,
        timeout=REQUEST_TIMEOUT_S,
        retry_handlers=[
            AsyncRateLimitErrorRetryHandler(max_retry_count=MAX_RETRIES),
            AsyncServerErrorRetryHandler(max_retry_count=MAX_RETRIES),
            AsyncConnectionErrorRetryHandler(max_retry_count=MAX_RETRIES),
        ],
    )

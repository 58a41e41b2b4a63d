"""``GET /readyz``: whether the web process can do its work now.

``/healthz`` says the process is up (a restart helps only when it is not); ``/readyz``
says whether its dependencies answer, so a load balancer sends Slack's requests only to
a process that can record them. Checked on every call, all at once, each within
``PROBE_TIMEOUT_S``:

- ``database``: PostgreSQL (or SQLite) answers;
- ``migrations``: the approval store's schema is the code's (``check_version``; else run
  ``agent-bridge release``);
- ``redis``: ``PING`` answers (skipped when ``REDIS_URL`` is unset: the process runs
  without Redis by design);
- ``slack``: ``auth.test`` with the bot token answers ok (a revoked token fails it),
  an ok answer remembered for ``SLACK_PROBE_TTL_S`` and a failure for
  ``SLACK_FAILURE_TTL_S`` so probes stay far below its rate limit, however many come
  (the endpoint answers anyone who reaches the port). Skipped with OAuth (a client
  without a token): there is no one bot token, each workspace's is its installation's
  (``bot.workspaces``), and a revoked one closes only that workspace (``bot.uninstalls``).

200 with every check ``ok``, else 503 naming the failed ones (``failed``) and why, in a
few words: never a URL, a host or a credential.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import redis.asyncio as aioredis
from aiohttp import web
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from agent_bridge.db import Database
from agent_bridge.deadline import within
from agent_bridge.errors import SchemaOutdatedError, StoreUnavailableError
from agent_bridge.migrations import check_version
from bot.shared_call import SharedCall
from bot.slack_client import PASSING_CODES

READY_PATH = "/readyz"
PROBE_TIMEOUT_S = 2.0
"""Each dependency must answer within this, seconds (a probe's own timeout is longer)."""
SLACK_PROBE_TTL_S = 30.0
"""An ok ``auth.test`` answer is reused this long, seconds (Slack rate-limits the
method)."""
SLACK_FAILURE_TTL_S = 2.0
"""A failed one is reused this long, seconds: soon asked again, once Slack is back."""
OK = "ok"

Probe = Callable[[], Awaitable[str]]


class Readiness:
    """The checks of ``/readyz``.

    Args:
        db: The web process's database.
        redis_url: ``REDIS_URL``, or ``None`` when the process runs without Redis.
        client: The bot token's Web API client; its session is shared, its retries not
            (a probe asks once). Without a token (OAuth) Slack is not probed.
        clock: Monotonic seconds (for the Slack answer's reuse).
    """

    def __init__(
        self,
        *,
        db: Database,
        redis_url: str | None,
        client: AsyncWebClient,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.db = db
        self.redis_url = redis_url
        self.slack = AsyncWebClient(
            token=client.token,
            base_url=client.base_url,
            timeout=int(PROBE_TIMEOUT_S),
            session=client.session,
        )
        self.clock = clock
        self._redis: aioredis.Redis | None = None
        self._slack_answer: tuple[float, str] | None = None  # (when, what) Slack said
        self._shared = SharedCall(self._check)

    async def check(self) -> dict[str, str]:
        """Run every check at once; return check name -> ``ok`` or why not. Probes
        arriving while a check is in flight share it (``SharedCall``: ``/readyz`` is not
        authenticated, and a flood of it must not take the clicks' connections)."""
        return await self._shared()

    async def _check(self) -> dict[str, str]:
        names = ["database", "migrations", "redis", "slack"]
        answers = await asyncio.gather(
            self._database(), self._migrations(), self._redis_ping(), self._slack_auth()
        )
        return dict(zip(names, answers, strict=True))

    async def handle(self, _: web.Request) -> web.Response:
        """``GET /readyz``: 200 when every check is ``ok``, else 503 naming the failed."""
        checks = await self.check()
        failed = [name for name, answer in checks.items() if answer != OK]
        body: dict[str, Any] = {"ready": not failed, "checks": checks}
        if failed:
            body["failed"] = failed
        return web.json_response(body, status=503 if failed else 200)

    async def close(self) -> None:
        """Close the probe's Redis connection."""
        if self._redis is not None:
            await self._redis.aclose()

    async def _database(self) -> str:
        try:
            with within(PROBE_TIMEOUT_S):
                await self.db.fetch_one("SELECT 1 AS one")
        except StoreUnavailableError as exc:
            return _unreachable(exc.__cause__ or exc)
        return OK

    async def _migrations(self) -> str:
        try:
            with within(PROBE_TIMEOUT_S):
                await check_version(self.db)
        except SchemaOutdatedError:
            return "behind the code: run agent-bridge release"
        except StoreUnavailableError:
            return "unknown: the database did not answer"
        return OK

    async def _redis_ping(self) -> str:
        if self.redis_url is None:
            return OK  # REDIS_URL unset: the process is meant to run without it
        if self._redis is None:
            self._redis = aioredis.Redis.from_url(
                self.redis_url,
                socket_timeout=PROBE_TIMEOUT_S,
                socket_connect_timeout=PROBE_TIMEOUT_S,
                retry_on_timeout=False,
            )
        try:
            async with asyncio.timeout(PROBE_TIMEOUT_S):
                await self._redis.ping()
        except (aioredis.RedisError, OSError, TimeoutError) as exc:
            return _unreachable(exc)
        return OK

    async def _slack_auth(self) -> str:
        if self.slack.token is None:
            return OK  # OAuth: no one bot token to test (each workspace has its own)
        now = self.clock()
        if self._slack_answer is not None:
            at, answer = self._slack_answer
            if now - at < (SLACK_PROBE_TTL_S if answer == OK else SLACK_FAILURE_TTL_S):
                return answer
        answer = await self._ask_slack()
        self._slack_answer = (self.clock(), answer)
        return answer

    async def _ask_slack(self) -> str:
        try:
            async with asyncio.timeout(PROBE_TIMEOUT_S):
                await self.slack.auth_test()
        except SlackApiError as exc:
            status = exc.response.status_code
            if status == 429 or status >= 500:
                return f"unavailable: HTTP {status}"
            data = exc.response.data
            code = data.get("error") if isinstance(data, dict) else None
            if code in PASSING_CODES:  # Slack's own passing trouble, answered with HTTP 200
                return f"unavailable: {code}"
            return f"refused: {code or f'HTTP {status}'}"
        except Exception as exc:  # aiohttp's errors, a timeout: Slack not reached
            return _unreachable(exc)
        return OK


def _unreachable(exc: BaseException) -> str:
    """Why a dependency failed, by the error's kind only (its text can name hosts)."""
    if isinstance(exc, TimeoutError):
        return "unreachable: no answer in time"
    return f"unreachable ({type(exc).__name__})"

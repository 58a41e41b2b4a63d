"""The Slack notifier: the worker's ``Notifier`` port, posting rendered Block Kit.

Each method renders with a pure function from ``bot.blocks`` and makes one Web API
call; Slack errors become ``NotifyError`` so the worker never sees slack_sdk types.
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import ClientError
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from agent_bridge.models import ApprovalRequest, Run, RunState
from agent_bridge.notifier import NotifyError
from bot.blocks import (
    render_final_answer,
    render_ran_without_review,
    render_reminder,
    render_run_failed,
    render_run_started,
    render_tool_result,
)
from bot.cards import current_card

logger = logging.getLogger(__name__)


class SlackNotifier:
    """Posts runs' progress and approval messages with one ``AsyncWebClient``.

    Args:
        client: A client for the run's workspace (see ``bot.slack_client``).
    """

    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client

    async def run_started(self, run: Run) -> str:
        """See ``Notifier.run_started``."""
        text, blocks = render_run_started(run)
        return await self._post(run.channel_id, text, blocks)

    async def approval_requested(self, request: ApprovalRequest, *, run: Run) -> tuple[str, str]:
        """See ``Notifier.approval_requested``."""
        channel_id = request.channel_id or run.channel_id
        text, blocks = current_card(request, run)
        ts = await self._post(channel_id, text, blocks, thread_ts=request.thread_ts)
        return channel_id, ts

    async def approval_updated(self, request: ApprovalRequest, *, run: Run) -> None:
        """See ``Notifier.approval_updated``."""
        if request.channel_id is None or request.message_ts is None:
            return
        text, blocks = current_card(request, run)
        try:
            await self.client.chat_update(
                channel=request.channel_id, ts=request.message_ts, text=text, blocks=blocks
            )
        except (SlackApiError, ClientError, TimeoutError) as exc:
            raise notify_error(f"chat.update of {request.message_ts}", exc) from exc

    async def reminder(self, request: ApprovalRequest, *, run: Run) -> None:
        """See ``Notifier.reminder``: posted where the card is (in its thread, or under
        it in ``APPROVALS_CHANNEL``), so the reviewers see it."""
        text, blocks = render_reminder(request)
        await self._post(
            request.channel_id or run.channel_id,
            text,
            blocks,
            thread_ts=request.thread_ts or request.message_ts,
        )

    async def ran_without_review(self, run: Run, *, tool_name: str, args: dict[str, Any]) -> None:
        """See ``Notifier.ran_without_review``."""
        text, blocks = render_ran_without_review(tool_name, args)
        await self._post(run.channel_id, text, blocks, thread_ts=run.thread_ts)

    async def tool_ran(self, run: Run, *, tool_name: str, content: str, ok: bool) -> None:
        """See ``Notifier.tool_ran``."""
        text, blocks = render_tool_result(tool_name, content, ok=ok)
        await self._post(run.channel_id, text, blocks, thread_ts=run.thread_ts)

    async def run_finished(self, run: Run, *, answer: str) -> None:
        """See ``Notifier.run_finished``; also marks the run's first message done."""
        text, blocks = render_final_answer(answer)
        await self._post(run.channel_id, text, blocks, thread_ts=run.thread_ts)
        await self._redraw_header(run.model_copy(update={"state": RunState.DONE}))

    async def run_failed(self, run: Run, *, error: str) -> None:
        """See ``Notifier.run_failed``; also marks the run's first message failed."""
        text, blocks = render_run_failed(error)
        await self._post(run.channel_id, text, blocks, thread_ts=run.thread_ts)
        await self._redraw_header(run.model_copy(update={"state": RunState.FAILED}))

    async def _redraw_header(self, run: Run) -> None:
        """Redraw the run's first message; a failure is logged (the answer is posted)."""
        if run.thread_ts is None:
            return
        text, blocks = render_run_started(run)
        try:
            await self.client.chat_update(
                channel=run.channel_id, ts=run.thread_ts, text=text, blocks=blocks
            )
        except (SlackApiError, ClientError, TimeoutError) as exc:
            logger.warning("run=%s first message not redrawn: %s", run.run_id, exc)

    async def _post(
        self, channel_id: str, text: str, blocks: list[dict], *, thread_ts: str | None = None
    ) -> str:
        try:
            response = await self.client.chat_postMessage(
                channel=channel_id, text=text, blocks=blocks, thread_ts=thread_ts
            )
        except (SlackApiError, ClientError, TimeoutError) as exc:
            raise notify_error(f"chat.postMessage to {channel_id}", exc) from exc
        return str(response["ts"])


def notify_error(call: str, exc: Exception) -> NotifyError:
    """Translate a Web API failure: an outage or a 429/5xx that outlasted slack_sdk's
    retries is retryable; an error Slack answered about the request itself is not."""
    if isinstance(exc, SlackApiError):
        status = exc.response.status_code
        return NotifyError(
            f"{call} failed: {exc.response.get('error')} (HTTP {status})",
            retryable=status == 429 or status >= 500,
        )
    return NotifyError(f"{call} failed: {exc}")

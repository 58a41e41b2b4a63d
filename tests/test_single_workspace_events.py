"""A single-workspace deployment (``SLACK_BOT_TOKEN``) answers every event its manifest
subscribes it to: ``app_uninstalled`` and ``tokens_revoked`` too, which only OAuth mode
acts on (``bot.uninstalls``); unanswered, Slack retries them and counts failures."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from bot.manifest import BOT_EVENTS
from tests.harness import Harness
from tests.slack_bodies import JSON, TEAM_ID, json_body


@pytest.mark.parametrize("event_type", ["app_uninstalled", "tokens_revoked"])
async def test_the_app_leaving_is_acked_and_logged_for_the_admin(
    harness: Harness, event_type: str, caplog: pytest.LogCaptureFixture
) -> None:
    assert event_type in BOT_EVENTS
    event: dict[str, Any] = {"type": event_type, "event_ts": f"{time.time():.6f}"}
    if event_type == "tokens_revoked":
        event["tokens"] = {"bot": ["U0BOT"]}
    body = {
        "token": "unused",
        "team_id": TEAM_ID,
        "api_app_id": "A0SANDBOX",
        "event": event,
        "type": "event_callback",
        "event_id": f"Ev{event_type}",
        "event_time": int(time.time()),
    }
    with caplog.at_level(logging.ERROR, logger="bot.uninstalls"):
        status, text = await harness.sandbox.post_signed(json_body(body), content_type=JSON)

        async def logged() -> str | None:
            found = [r.getMessage() for r in caplog.records if "SLACK_BOT_TOKEN" in r.getMessage()]
            return found[0] if found else None

        line = await harness.wait_for(logged)
    assert status == 200, (status, text)
    assert TEAM_ID in line and event_type in line and "Install the app again" in line

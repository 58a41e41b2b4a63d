"""Headless Chromium on the sandbox page, for the screenshots of cards (Playwright over
Debian's ``chromium``; no browser is downloaded).

Screenshots go to ``SCREENSHOTS_DIR`` (default ``.artefacts/screenshots`` in the
repository), one PNG per kind of card, named by the test: they are the test's artefacts,
to be looked at, and the README's DBA picture is one of them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from playwright.async_api import Page, ViewportSize, async_playwright

from agent_bridge.models import ApprovalRequest

CHROMIUM_NAMES = ("chromium", "chromium-browser")
SCREENSHOTS_DIR = Path(
    os.environ.get("SCREENSHOTS_DIR", Path(__file__).parent.parent / ".artefacts" / "screenshots")
)
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORT: ViewportSize = {"width": 1280, "height": 1600}
PAGE_TIMEOUT_MS = 20_000


def chromium_path() -> str:
    """Debian's Chromium (``apt-get install chromium``; ``.ci/run`` installs it).

    Raises:
        RuntimeError: There is none on ``PATH``.
    """
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError("no chromium on PATH: install Debian's chromium (apt-get install chromium)")


@asynccontextmanager
async def sandbox_page(base_url: str) -> AsyncIterator[Page]:
    """A page of the sandbox at ``base_url`` in headless Chromium, closed after."""
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=chromium_path(), headless=True, args=LAUNCH_ARGS
        )
        try:
            page = await browser.new_page(viewport=VIEWPORT)
            page.set_default_timeout(PAGE_TIMEOUT_MS)
            await page.goto(base_url)
            yield page
        finally:
            await browser.close()


async def shoot_message(
    page: Page, base_url: str, channel_id: str, ts: str, *, name: str, showing: str
) -> str:
    """Open the message ``ts`` of ``channel_id`` by its permalink, wait until the browser
    shows it with the text ``showing``, save a screenshot of it (with its thread's
    replies) as ``SCREENSHOTS_DIR/<name>.png``, and return the text the browser shows."""
    await page.goto(f"{base_url}archives/{channel_id}/p{ts.replace('.', '')}")
    message = page.locator(f'.msg[data-ts="{ts}"]', has_text=showing).first
    await message.wait_for(state="visible")
    SCREENSHOTS_DIR.mkdir(parents=True, exist_ok=True)
    await message.screenshot(path=str(SCREENSHOTS_DIR / f"{name}.png"))
    return await message.inner_text()


async def shoot_card(base_url: str, request: ApprovalRequest, name: str, showing: str) -> str:
    """Open a new page of the sandbox at ``base_url`` and ``shoot_message`` the card of
    ``request`` once it shows ``showing``; return the text the browser shows."""
    async with sandbox_page(base_url) as page:
        return await shoot_message(
            page,
            base_url,
            request.channel_id or "",
            request.message_ts or "",
            name=name,
            showing=showing,
        )

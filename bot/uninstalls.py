"""The app leaves a workspace: ``app_uninstalled`` and ``tokens_revoked``.

Slack sends ``app_uninstalled`` when a workspace removes the app and ``tokens_revoked``
when its tokens are revoked (https://docs.slack.dev/reference/events/app_uninstalled,
https://docs.slack.dev/reference/events/tokens_revoked); Bolt delivers both without
authorizing them (the token is already dead). The listener forgets the workspace's
installation (``bot.installations``), so no process calls Slack for it again, and closes
its open approval requests (``ApprovalStore.close_workspace``): their cards cannot be
updated any more, so each is cancelled with an audit event, and nobody can decide it.
Only a revoked *bot* token leaves the workspace: the app keeps no user tokens.

A single-workspace deployment (``SLACK_BOT_TOKEN``) keeps no installation to forget: its
token is configuration. The manifest subscribes it to both events too, so they are acked
(unanswered, Slack retries them and counts failures) and logged as an error saying the
token no longer works (``note_leaving``); its requests are left as they are, as a
reinstall with a new token lets people decide them again.

An event older than the workspace's installation is ignored (logged): Slack retries an
event the app did not acknowledge, with its first ``event_time``
(https://docs.slack.dev/apis/events-api/#retries), so the uninstall of an earlier
installation can arrive after the admin installed the app again; it must not remove the
new one. ``event_time`` is whole seconds and ``installed_at`` is not, so only an event of
an earlier second than the install's is older; one of the same second is taken as
current (the app leaves: the safe side for its tokens; an uninstall and a reinstall
through the OAuth pages within one second are not something people do).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from slack_bolt.async_app import AsyncApp
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore

from agent_bridge.errors import StoreUnavailableError
from agent_bridge.store import ApprovalStore
from agent_bridge.wording import uninstalled_note
from bot.actions import Ack
from bot.errors import PayloadError
from bot.payloads import parse

logger = logging.getLogger(__name__)


class RevokedTokens(BaseModel):
    """``tokens_revoked``'s ``tokens``: the user IDs whose tokens were revoked."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    oauth: list[str] = Field(default_factory=list)
    bot: list[str] = Field(default_factory=list)


class LeavingEvent(BaseModel):
    """An ``app_uninstalled`` or ``tokens_revoked`` event."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    type: Literal["app_uninstalled", "tokens_revoked"]
    tokens: RevokedTokens = Field(default_factory=RevokedTokens)


class LeavingCallback(BaseModel):
    """The Events API envelope (``event_callback``) of a ``LeavingEvent``."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    type: Literal["event_callback"]
    team_id: str
    enterprise_id: str | None = None
    event_time: int | None = None
    """When the event happened, Unix seconds (the Events API envelope's); ``None`` when
    missing or not whole seconds."""
    event: LeavingEvent

    @field_validator("event_time", mode="before")
    @classmethod
    def _unreadable_time_is_none(cls, value: object) -> object:
        """An ``event_time`` that is not whole seconds is no time, so the event is taken
        as current (``predates``): dropping it as malformed would keep a gone app's tokens."""
        if isinstance(value, bool) or not isinstance(value, int | str):
            return None
        return value if isinstance(value, int) or value.isdigit() else None

    @property
    def leaves(self) -> bool:
        """Whether the app is gone from the workspace: uninstalled, or its bot token
        revoked (a revoked user token alone changes nothing)."""
        return self.event.type == "app_uninstalled" or bool(self.event.tokens.bot)


def predates(event_time: int | None, installed_at: float) -> bool:
    """Whether an event of ``event_time`` (whole seconds) happened before an installation
    made at ``installed_at``, so it was about an earlier installation: its second is an
    earlier one. An event of the install's own second, or without a time, is taken as
    current (the app leaves: the safe side for its tokens)."""
    return event_time is not None and event_time < int(installed_at)


class UninstallListeners:
    """The ``app_uninstalled`` and ``tokens_revoked`` listeners.

    Args:
        store: The approval store (the workspace's requests are closed in it).
        installations: Where installations are kept.
        forget: Called with the workspace's ``team_id`` once its installation is deleted
            (``bot.oauth_install.StoreAuthorize.forget``: no request of it is authorized
            from an earlier read).
    """

    def __init__(
        self,
        *,
        store: ApprovalStore,
        installations: AsyncInstallationStore,
        forget: Callable[[str], None],
    ) -> None:
        self.store = store
        self.installations = installations
        self.forget = forget

    def register(self, app: AsyncApp) -> None:
        """Attach the listeners to ``app``."""
        app.event("app_uninstalled")(self.on_leaving)
        app.event("tokens_revoked")(self.on_leaving)

    async def on_leaving(self, ack: Ack, body: dict[str, Any]) -> None:
        """Forget the workspace's installation and close its open requests."""
        callback = await _acked_leaving(ack, body)
        if callback is None:
            return
        team_id = callback.team_id
        try:
            current = await self.installations.async_find_installation(
                enterprise_id=callback.enterprise_id, team_id=team_id
            )
            if current is not None and predates(callback.event_time, current.installed_at):
                logger.warning(
                    "team %s: %s of %s ignored: the app was installed again at %s",
                    team_id,
                    callback.event.type,
                    callback.event_time,
                    current.installed_at,
                )
                return
            await self.installations.async_delete_all(
                enterprise_id=callback.enterprise_id, team_id=team_id
            )
            self.forget(team_id)
            closed = await self.store.close_workspace(team_id, note=uninstalled_note(team_id))
        except StoreUnavailableError as exc:
            # Slack does not retry an acked event: the admin reinstalls or uninstalls again.
            logger.error(
                "team %s left (%s) but was not recorded: %s", team_id, callback.event.type, exc
            )
            return
        logger.info(
            "team %s left (%s): installation deleted, %d open requests closed (%s)",
            team_id,
            callback.event.type,
            len(closed),
            ", ".join(r.request_id for r in closed) or "none",
        )


def register_single_workspace(app: AsyncApp) -> None:
    """Attach ``note_leaving`` to ``app`` for both events (a single-workspace app's)."""
    app.event("app_uninstalled")(note_leaving)
    app.event("tokens_revoked")(note_leaving)


async def note_leaving(ack: Ack, body: dict[str, Any]) -> None:
    """Ack the event; if the app left the workspace (``LeavingCallback.leaves``), log
    that its bot token no longer works and what the admin does about it."""
    callback = await _acked_leaving(ack, body)
    if callback is not None:
        logger.error(
            "team %s: Slack says the app left the workspace (%s): SLACK_BOT_TOKEN no longer "
            "works. Install the app again from its manifest and set the new token",
            callback.team_id,
            callback.event.type,
        )


async def _acked_leaving(ack: Ack, body: dict[str, Any]) -> LeavingCallback | None:
    """Ack an ``app_uninstalled`` or ``tokens_revoked`` delivery; return its callback if
    the app left the workspace (``LeavingCallback.leaves``), else ``None`` (a malformed
    one is logged)."""
    await ack()
    try:
        callback = parse(LeavingCallback, body)
    except PayloadError as exc:
        logger.warning("%s", exc)
        return None
    return callback if callback.leaves else None

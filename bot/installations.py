"""Where the app's installations live when it is distributed with OAuth: slack_sdk's
``AsyncInstallationStore`` on the project's own database port.

One row per workspace (``slack_installations``, migration of issue 12): the bot token an
install gave it, with the bot's IDs and scopes. Bolt's OAuth flow saves a row on
``/slack/oauth_redirect`` (``async_save``); Bolt's ``authorize`` finds it for every
request (``async_find_bot``); the worker's gateway finds it for every Web API call
(``bot.workspaces``); ``app_uninstalled`` and ``tokens_revoked`` delete it
(``bot.uninstalls``).

Why not slack_sdk's SQLAlchemy store: it brings SQLAlchemy and a second connection pool
beside the psycopg pool the checkpointer and the approval store share, and creates its
tables outside the ``release`` migrations (``agent_bridge.migrations``); this store is
the same interface in one module, migrated by ``release`` with everything else, and runs
on PostgreSQL and on the demo's SQLite alike.

Only bot tokens are kept: the app asks for no user scopes. An org-wide install
(Enterprise Grid ``is_enterprise_install``) has no workspace to key it by and is refused
(Bolt shows the installer its failure page).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection

from slack_bolt.error import BoltError
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.oauth.installation_store.models.bot import Bot
from slack_sdk.oauth.installation_store.models.installation import Installation

from agent_bridge.db import Database, Row

logger = logging.getLogger(__name__)

SAVE_INSTALLATION = """INSERT INTO slack_installations (team_id, enterprise_id, team_name,
    app_id, bot_id, bot_user_id, bot_token, bot_scopes, installer_id, installed_at)
    VALUES (:team_id, :enterprise_id, :team_name, :app_id, :bot_id, :bot_user_id, :bot_token,
        :bot_scopes, :installer_id, :installed_at)
    ON CONFLICT (team_id) DO UPDATE SET enterprise_id = excluded.enterprise_id,
        team_name = excluded.team_name, app_id = excluded.app_id, bot_id = excluded.bot_id,
        bot_user_id = excluded.bot_user_id, bot_token = excluded.bot_token,
        bot_scopes = excluded.bot_scopes, installer_id = excluded.installer_id,
        installed_at = excluded.installed_at"""
SELECT_INSTALLATION = "SELECT * FROM slack_installations WHERE team_id = :team_id"
DELETE_INSTALLATION = "DELETE FROM slack_installations WHERE team_id = :team_id"
SELECT_TEAMS = "SELECT team_id FROM slack_installations ORDER BY installed_at"


class InstallationStore(AsyncInstallationStore):
    """slack_sdk's installation store interface over ``agent_bridge.db.Database``,
    keyed by workspace (``team_id``).

    Args:
        db: The approval store's database (PostgreSQL, or the demo's SQLite).
        clock: Unix time in seconds, for ``installed_at`` when Slack gave none.
        required_scopes: The bot scopes an install must grant to be kept (the
            manifest's, ``bot.manifest.BOT_SCOPES``, for the OAuth flow's saves).
    """

    def __init__(
        self,
        db: Database,
        *,
        clock: Callable[[], float] = time.time,
        required_scopes: Collection[str] = (),
    ) -> None:
        self.db = db
        self.clock = clock
        self.required_scopes = frozenset(required_scopes)

    @property
    def logger(self) -> logging.Logger:
        """The logger slack_sdk's interface asks for."""
        return logger

    async def async_save(self, installation: Installation) -> None:
        """Keep (or replace) the bot token of ``installation``'s workspace.

        Raises:
            BoltError: An org-wide install, one without a bot token or workspace, or one
                granting fewer scopes than ``required_scopes`` (a hand-edited authorize
                link or app: the app's features would fail one by one, later). Bolt
                answers the installer with its failure page (``storage_error``); the
                log says which scopes are missing.
        """
        if installation.is_enterprise_install or not installation.team_id:
            raise BoltError("org-wide installs are not supported: install per workspace")
        if not installation.bot_token or not installation.bot_user_id:
            raise BoltError("the install gave no bot token")
        missing = sorted(self.required_scopes - set(installation.bot_scopes or ()))
        if missing:
            logger.warning(
                "install in team %s refused: it granted no %s (the manifest's scopes); "
                "install again from the app's manifest.yml",
                installation.team_id,
                ", ".join(missing),
            )
            raise BoltError(f"the install granted no {', '.join(missing)}")
        await self.db.execute(
            SAVE_INSTALLATION,
            {
                "team_id": installation.team_id,
                "enterprise_id": installation.enterprise_id,
                "team_name": installation.team_name,
                "app_id": installation.app_id,
                "bot_id": installation.bot_id,
                "bot_user_id": installation.bot_user_id,
                "bot_token": installation.bot_token,
                "bot_scopes": ",".join(installation.bot_scopes or ()),
                "installer_id": installation.user_id,
                "installed_at": float(installation.installed_at or self.clock()),
            },
        )
        logger.info(
            "installed in team %s (enterprise %s) by %s",
            installation.team_id,
            installation.enterprise_id,
            installation.user_id,
        )

    async def async_save_bot(self, bot: Bot) -> None:
        """Keep ``bot``'s token (Bolt calls it only with token rotation, which is off)."""
        await self.async_save(
            Installation(
                app_id=bot.app_id,
                enterprise_id=bot.enterprise_id,
                team_id=bot.team_id,
                bot_token=bot.bot_token,
                bot_id=bot.bot_id,
                bot_user_id=bot.bot_user_id,
                bot_scopes=bot.bot_scopes,
                user_id="",
                is_enterprise_install=bot.is_enterprise_install,
                installed_at=bot.installed_at,
            )
        )

    async def async_find_bot(
        self,
        *,
        enterprise_id: str | None,
        team_id: str | None,
        is_enterprise_install: bool | None = False,
    ) -> Bot | None:
        """The bot installed in workspace ``team_id``, or ``None`` (never installed, or
        uninstalled since). An ``enterprise_id`` that contradicts the stored one finds
        nothing."""
        installation = await self.async_find_installation(
            enterprise_id=enterprise_id, team_id=team_id
        )
        return installation.to_bot() if installation is not None else None

    async def async_find_installation(
        self,
        *,
        enterprise_id: str | None,
        team_id: str | None,
        user_id: str | None = None,
        is_enterprise_install: bool | None = False,
    ) -> Installation | None:
        """The installation of workspace ``team_id`` (its bot; no user token is kept,
        so ``user_id`` finds the same one), or ``None``."""
        row = await self._row(enterprise_id, team_id)
        if row is None:
            return None
        return Installation(
            app_id=row["app_id"],
            enterprise_id=row["enterprise_id"],
            team_id=row["team_id"],
            team_name=row["team_name"],
            bot_token=row["bot_token"],
            bot_id=row["bot_id"],
            bot_user_id=row["bot_user_id"],
            bot_scopes=row["bot_scopes"],
            user_id=row["installer_id"] or "",
            installed_at=row["installed_at"],
        )

    async def async_delete_bot(self, *, enterprise_id: str | None, team_id: str | None) -> None:
        """Forget workspace ``team_id``'s bot token (``tokens_revoked``)."""
        await self.async_delete_all(enterprise_id=enterprise_id, team_id=team_id)

    async def async_delete_installation(
        self, *, enterprise_id: str | None, team_id: str | None, user_id: str | None = None
    ) -> None:
        """Forget workspace ``team_id``'s installation; a user's alone holds nothing
        (no user tokens are kept)."""
        if user_id is None:
            await self.async_delete_all(enterprise_id=enterprise_id, team_id=team_id)

    async def async_delete_all(self, *, enterprise_id: str | None, team_id: str | None) -> None:
        """Forget everything of workspace ``team_id`` (``app_uninstalled``)."""
        if team_id:
            await self.db.execute(DELETE_INSTALLATION, {"team_id": team_id})
            logger.info("installation of team %s deleted", team_id)

    async def teams(self) -> list[str]:
        """The workspaces the app is installed in, oldest install first."""
        return [str(row["team_id"]) for row in await self.db.fetch_all(SELECT_TEAMS)]

    async def _row(self, enterprise_id: str | None, team_id: str | None) -> Row | None:
        if not team_id:
            return None
        row = await self.db.fetch_one(SELECT_INSTALLATION, {"team_id": team_id})
        if row is None or (enterprise_id and row["enterprise_id"] not in (None, enterprise_id)):
            return None
        return row

"""The modals the product opened, so a submission can be bound to them.

A modal submission is accepted only for a view the product opened for that same user,
request and decision (``OpenedView``): the view's ``private_metadata`` holds only an
unguessable key to this record, written before ``views.open``; Slack's ``view.id`` is
added once ``views.open`` answers.
"""

from __future__ import annotations

import secrets
import time

from pydantic import BaseModel

from agent_bridge.db import Database
from agent_bridge.store import Clock
from agent_bridge.store_sql import INSERT_OPENED_VIEW, SELECT_OPENED_VIEW, SET_OPENED_VIEW_ID

VIEW_KEY_BYTES = 18


class OpenedView(BaseModel):
    """A modal the product opened: for whom, on which request and version, to decide how."""

    view_key: str
    request_id: str
    user_id: str
    team_id: str | None = None
    decision_type: str
    version: str
    """The call's version the form was drawn from (``ApprovalRequest.version``)."""
    view_id: str | None = None
    """Slack's ``view.id``, once ``views.open`` answered."""


class OpenedViews:
    """Opened views in the database.

    Args:
        db: The database port.
        clock: Unix time in seconds.
    """

    def __init__(self, db: Database, *, clock: Clock = time.time) -> None:
        self.db = db
        self.clock = clock

    async def open_view(
        self,
        *,
        request_id: str,
        user_id: str,
        team_id: str | None,
        decision_type: str,
        version: str,
    ) -> OpenedView:
        """Record a modal about to be opened; its key goes in ``private_metadata``."""
        view = OpenedView(
            view_key=secrets.token_urlsafe(VIEW_KEY_BYTES),
            request_id=request_id,
            user_id=user_id,
            team_id=team_id,
            decision_type=decision_type,
            version=version,
        )
        await self.db.execute(
            INSERT_OPENED_VIEW, {**view.model_dump(exclude={"view_id"}), "now": self.clock()}
        )
        return view

    async def set_view_id(self, view_key: str, view_id: str) -> None:
        """Remember Slack's ``view.id`` of the opened modal."""
        await self.db.execute(SET_OPENED_VIEW_ID, {"view_key": view_key, "view_id": view_id})

    async def opened_view(self, view_key: str) -> OpenedView | None:
        """Return the opened view with ``view_key`` (a submission's ``private_metadata``)."""
        row = await self.db.fetch_one(SELECT_OPENED_VIEW, {"view_key": view_key})
        return OpenedView.model_validate(row) if row else None

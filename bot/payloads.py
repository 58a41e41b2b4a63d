"""Inbound Slack payloads, parsed into pydantic models at the edge.

Handlers never dig in raw dicts: Bolt's ``body`` is validated into one of these, and a
payload that does not fit is answered without a crash (``PayloadError``). Shapes follow
https://api.slack.com/reference/interaction-payloads (``block_actions``,
``view_submission``) and https://api.slack.com/interactivity/slash-commands.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.errors import PayloadError
from bot.mrkdwn import unescape

PayloadT = TypeVar("PayloadT", bound=BaseModel)


class _Payload(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class SlackUser(_Payload):
    """The user who acted."""

    id: str
    username: str | None = None
    team_id: str | None = None


class Team(_Payload):
    """The workspace the interaction came from."""

    id: str


class Enterprise(_Payload):
    """The Enterprise Grid org the interaction came from."""

    id: str


class Container(_Payload):
    """Where a clicked element lives: a message's channel and ``ts``, or a view
    (``type: "view"``, ``view_id``: e.g. the App Home tab)."""

    type: str
    channel_id: str | None = None
    message_ts: str | None = None
    view_id: str | None = None


class ClickedView(_Payload):
    """The view holding a clicked element (``view`` of a ``block_actions`` from a view)."""

    id: str
    type: str
    private_metadata: str = ""


class Action(_Payload):
    """One element the user acted on."""

    action_id: str
    block_id: str | None = None
    value: str | None = None


class Message(_Payload):
    """The message holding the clicked element."""

    ts: str
    thread_ts: str | None = None


class _Interaction(_Payload):
    """What every interaction payload says about who acted and from where."""

    user: SlackUser
    team: Team | None = None
    enterprise: Enterprise | None = None

    @property
    def team_id(self) -> str | None:
        """The workspace it came from (``team.id``, else ``user.team_id``)."""
        return self.team.id if self.team else self.user.team_id

    @property
    def actor_team_id(self) -> str | None:
        """The acting user's own workspace (``user.team_id``, else ``team.id``): for a
        Slack Connect user, their home workspace, not the channel's."""
        return self.user.team_id or self.team_id

    @property
    def enterprise_id(self) -> str | None:
        """The Enterprise Grid org it came from, if any."""
        return self.enterprise.id if self.enterprise else None


class BlockActions(_Interaction):
    """A ``block_actions`` payload (a button click)."""

    type: Literal["block_actions"]
    trigger_id: str
    container: Container
    actions: list[Action] = Field(min_length=1)
    message: Message | None = None
    response_url: str | None = None
    view: ClickedView | None = None

    @property
    def action(self) -> Action:
        """The clicked element (Slack sends one per click)."""
        return self.actions[0]


class ViewState(_Payload):
    """``view.state``: ``values[block_id][action_id]`` -> the element's value object."""

    values: dict[str, dict[str, dict[str, Any]]] = Field(default_factory=dict)


class SubmittedView(_Payload):
    """The modal being submitted."""

    id: str
    callback_id: str
    private_metadata: str = ""
    state: ViewState = Field(default_factory=ViewState)


class ViewSubmission(_Interaction):
    """A ``view_submission`` payload (a modal's Submit)."""

    type: Literal["view_submission"]
    view: SubmittedView


class SlashCommand(_Payload):
    """A slash command invocation (form-encoded fields)."""

    command: str
    text: str = ""
    user_id: str
    channel_id: str
    team_id: str | None = None
    enterprise_id: str | None = None
    response_url: str | None = None


class _ChannelMessage(_Payload):
    """The fields an ``app_mention`` and a ``message`` event share: who wrote what,
    where, and ``thread_ts`` when it is a reply in a Slack thread; a bot's message carries
    ``bot_id`` (and may lack ``user``), an edit or a join a ``subtype``
    (https://docs.slack.dev/reference/events/message)."""

    user: str | None = None
    text: str = ""
    channel: str
    ts: str
    thread_ts: str | None = None
    team: str | None = None
    bot_id: str | None = None
    subtype: str | None = None


class AppMention(_ChannelMessage):
    """An ``app_mention`` event: someone wrote ``@agent ...`` in a channel."""

    type: Literal["app_mention"]

    @property
    def from_bot(self) -> bool:
        """Whether a bot wrote it (ours or another): bots never start runs."""
        return self.bot_id is not None or self.subtype == "bot_message" or self.user is None


class SubteamMembersChanged(_Payload):
    """A ``subteam_members_changed`` event: a user group's members changed."""

    type: Literal["subteam_members_changed"]
    subteam_id: str
    team_id: str | None = None


class SubteamCallback(_Payload):
    """The Events API envelope of a ``subteam_members_changed`` event."""

    type: Literal["event_callback"]
    team_id: str | None = None
    event: SubteamMembersChanged


class MentionCallback(_Payload):
    """The Events API envelope (``event_callback``) of an ``app_mention``."""

    type: Literal["event_callback"]
    event_id: str
    event: AppMention


class MessagePosted(_ChannelMessage):
    """A ``message`` event: a person wrote in a DM with the app (``channel_type: "im"``)
    or in a channel it is in. Edits, deletions, joins and bots' messages carry a
    ``subtype`` or ``bot_id``."""

    type: Literal["message"]
    channel_type: str | None = None

    @property
    def typed_text(self) -> str:
        """``text`` as the person typed it: Slack's ``&amp;``, ``&lt;`` and ``&gt;``
        decoded (``bot.mrkdwn.unescape``)."""
        return unescape(self.text)

    @property
    def from_person(self) -> bool:
        """Whether a person wrote it as a plain new message (no bot, no edit, no join)."""
        return self.bot_id is None and self.subtype is None and self.user is not None

    @property
    def is_reply(self) -> bool:
        """Whether it is a reply in a Slack thread (not the thread's parent)."""
        return self.thread_ts is not None and self.thread_ts != self.ts


class MessageCallback(_Payload):
    """The Events API envelope of a ``message`` event: ``team_id`` and ``enterprise_id``
    are the workspace the app is installed in, where the message was posted, and its
    Enterprise Grid org (https://docs.slack.dev/apis/events-api/#callback-field)."""

    type: Literal["event_callback"]
    event_id: str
    team_id: str | None = None
    enterprise_id: str | None = None
    event: MessagePosted

    @property
    def author_team_id(self) -> str | None:
        """The author's own workspace (the event's ``team``, else the envelope's)."""
        return self.event.team or self.team_id

    @property
    def author_enterprise_id(self) -> str | None:
        """The author's Enterprise Grid org: the envelope's when the author is of the
        envelope's workspace (a workspace is in one org); unknown (``None``) for anyone
        else, whom their other workspace refuses anyway."""
        return self.enterprise_id if self.author_team_id == self.team_id else None


class AppHomeOpened(_Payload):
    """An ``app_home_opened`` event: ``user`` opened one of the app's tabs
    (https://docs.slack.dev/reference/events/app_home_opened)."""

    type: Literal["app_home_opened"]
    user: str
    tab: str = "home"


class HomeOpenedCallback(_Payload):
    """The Events API envelope of an ``app_home_opened`` event."""

    type: Literal["event_callback"]
    team_id: str | None = None
    enterprise_id: str | None = None
    event: AppHomeOpened


def parse(model: type[PayloadT], body: dict[str, Any]) -> PayloadT:
    """Validate ``body`` as ``model``.

    Raises:
        PayloadError: If a field is missing or has the wrong shape.
    """
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise PayloadError(f"malformed {model.__name__} payload: {exc}") from exc

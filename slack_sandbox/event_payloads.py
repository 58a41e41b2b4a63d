"""Events API deliveries exactly as Slack posts them: JSON ``event_callback`` envelopes.

Pure builders: no I/O, no clock. The envelope's ``team_id`` (and ``enterprise_id``,
``context_*``, ``authorizations``) is the workspace the app is installed in, where the
event happened; the event itself says whose it is (``team``, ``user_team``).
See https://docs.slack.dev/apis/events-api and the event references.
"""

from __future__ import annotations

from typing import Any

from slack_sandbox.state import APP_ID, BOT_USER_ID

VERIFICATION_TOKEN = "sandbox-verification-token"
"""The deprecated ``token`` field every payload still carries."""


def slack_escaped(typed: str) -> str:
    """A message's ``text`` as Slack stores and sends it: ``&``, ``<`` and ``>`` a person
    typed become ``&amp;``, ``&lt;`` and ``&gt;``
    (https://docs.slack.dev/messaging/formatting-message-text#escaping)."""
    return typed.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def event_callback(
    *,
    team_id: str,
    event: dict[str, Any],
    event_id: str,
    event_time: int,
    enterprise_id: str | None = None,
    is_ext_shared_channel: bool = False,
) -> dict[str, Any]:
    """Return the envelope of ``event``, delivered to the app installed in ``team_id``.

    A retry of the same event carries the same ``event_id``.
    """
    envelope: dict[str, Any] = {
        "token": VERIFICATION_TOKEN,
        "team_id": team_id,
        "api_app_id": APP_ID,
        "event": event,
        "type": "event_callback",
        "event_id": event_id,
        "event_time": event_time,
        "authorizations": [
            {
                "enterprise_id": enterprise_id,
                "team_id": team_id,
                "user_id": BOT_USER_ID,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": is_ext_shared_channel,
        "context_team_id": team_id,
        "context_enterprise_id": enterprise_id,
    }
    if enterprise_id is not None:
        envelope["enterprise_id"] = enterprise_id
    return envelope


def app_mention_event(
    *,
    team_id: str,
    user_id: str,
    channel_id: str,
    text: str,
    ts: str,
    user_team_id: str | None = None,
    thread_ts: str | None = None,
    bot_profile: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Return an ``app_mention`` event: ``user_id`` of ``user_team_id`` wrote ``text``.

    A guest of another team adds ``user_team`` and ``source_team``, as Slack does in a
    Slack Connect channel. A message by an app's bot user carries ``bot_id``,
    ``app_id`` and ``bot_profile`` (its ``user`` is the bot user).
    """
    home = user_team_id or team_id
    event: dict[str, Any] = {
        "type": "app_mention",
        "user": user_id,
        "text": text,
        "ts": ts,
        "team": home,
        "channel": channel_id,
        "event_ts": ts,
    }
    if home != team_id:
        event |= {"user_team": home, "source_team": home}
    if thread_ts is not None:
        event["thread_ts"] = thread_ts
    if bot_profile is not None:
        event |= {
            "bot_id": bot_profile["id"],
            "app_id": bot_profile["app_id"],
            "bot_profile": bot_profile,
        }
    return event


def app_mention_payload(
    *,
    team_id: str,
    event_id: str,
    event_time: int,
    user_id: str,
    channel_id: str,
    text: str,
    ts: str,
    enterprise_id: str | None = None,
    user_team_id: str | None = None,
    thread_ts: str | None = None,
    bot_profile: dict[str, Any] | None = None,
    is_ext_shared_channel: bool = False,
) -> dict[str, Any]:
    """Return the ``event_callback`` of an ``app_mention`` of the bot in ``team_id``.

    ``is_ext_shared_channel`` says the channel is shared with another org's team (a
    Slack Connect guest wrote); a team of the same org shares it inside the org.
    """
    event = app_mention_event(
        team_id=team_id,
        user_id=user_id,
        channel_id=channel_id,
        text=text,
        ts=ts,
        user_team_id=user_team_id,
        thread_ts=thread_ts,
        bot_profile=bot_profile,
    )
    return event_callback(
        team_id=team_id,
        event=event,
        event_id=event_id,
        event_time=event_time,
        enterprise_id=enterprise_id,
        is_ext_shared_channel=is_ext_shared_channel,
    )


def subteam_members_changed_event(
    *,
    subteam_id: str,
    team_id: str,
    date_previous_update: int,
    date_update: int,
    added_users: list[str],
    removed_users: list[str],
    event_ts: str,
) -> dict[str, Any]:
    """Return a ``subteam_members_changed`` event: the delta of a user group's members.

    Slack's reference shows the counts as strings in one example and numbers in real
    deliveries (and in ``@slack/types``); the sandbox sends numbers.
    """
    return {
        "type": "subteam_members_changed",
        "subteam_id": subteam_id,
        "team_id": team_id,
        "date_previous_update": date_previous_update,
        "date_update": date_update,
        "added_users": list(added_users),
        "added_users_count": len(added_users),
        "removed_users": list(removed_users),
        "removed_users_count": len(removed_users),
        "event_ts": event_ts,
    }


def tokens_revoked_event(*, bot_user_ids: list[str], event_ts: str) -> dict[str, Any]:
    """A ``tokens_revoked`` event: the bot tokens of ``bot_user_ids`` were revoked
    (https://docs.slack.dev/reference/events/tokens_revoked)."""
    return {
        "type": "tokens_revoked",
        "tokens": {"oauth": [], "bot": list(bot_user_ids)},
        "event_ts": event_ts,
    }


def app_uninstalled_event(*, event_ts: str) -> dict[str, Any]:
    """An ``app_uninstalled`` event (https://docs.slack.dev/reference/events/app_uninstalled)."""
    return {"type": "app_uninstalled", "event_ts": event_ts}


def message_event(
    *,
    user_id: str,
    team_id: str,
    channel_id: str,
    channel_type: str,
    text: str,
    ts: str,
    client_msg_id: str,
    thread_ts: str | None = None,
    parent_user_id: str | None = None,
) -> dict[str, Any]:
    """Return a ``message`` event: a person typed ``text`` in a DM with the app
    (``channel_type: "im"``, ``message.im``) or in a channel the app is in (``channel``
    or ``group``, ``message.channels`` / ``message.groups``); a reply in a Slack thread
    carries ``thread_ts`` and ``parent_user_id``
    (https://docs.slack.dev/reference/events/message). The event's ``text`` is
    ``slack_escaped(text)``, as Slack sends it; its ``rich_text`` block has the text as
    typed."""
    event: dict[str, Any] = {
        "client_msg_id": client_msg_id,
        "type": "message",
        "text": slack_escaped(text),
        "user": user_id,
        "ts": ts,
        "blocks": [
            {
                "type": "rich_text",
                "block_id": client_msg_id[:5],
                "elements": [
                    {"type": "rich_text_section", "elements": [{"type": "text", "text": text}]}
                ],
            }
        ],
        "team": team_id,
        "channel": channel_id,
        "event_ts": ts,
        "channel_type": channel_type,
    }
    if thread_ts is not None:
        event["thread_ts"] = thread_ts
        if parent_user_id is not None:
            event["parent_user_id"] = parent_user_id
    return event


def app_home_opened_event(
    *, user_id: str, channel_id: str, event_ts: str, view: dict[str, Any] | None
) -> dict[str, Any]:
    """Return an ``app_home_opened`` event: ``user_id`` opened the app's Home tab; ``view``
    is the Home view published for them, if any
    (https://docs.slack.dev/reference/events/app_home_opened)."""
    event: dict[str, Any] = {
        "type": "app_home_opened",
        "user": user_id,
        "channel": channel_id,
        "tab": "home",
        "event_ts": event_ts,
    }
    if view is not None:
        event["view"] = view
    return event

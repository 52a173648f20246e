"""Redfish authentication: sessions (`X-Auth-Token`) and HTTP Basic.

A token is 32 random bytes (64 hexadecimal digits, as DMTF's Protocol Validator expects to
measure) shown once, in the answer to the login; only its SHA-256 is stored. A session
ends when its owner (or an operator) deletes it or when it has been unused for
`COMPOSER_REDFISH_SESSION_TIMEOUT_S` (deleted, audited, at the next login), or when its
user's password changes (the session keeps the user's session hash, as Django's own
sessions do). Opening and closing are audited. Passwords are checked by `guard`.
"""

from __future__ import annotations

import base64
import binascii
import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.crypto import constant_time_compare

from composer.models import RedfishSession
from composer.redfish.caller import Caller
from composer.redfish.guard import check_password
from composer.services.api_tokens import digest
from fabric.choices import ChangeAction
from fabric.models import ChangeRecord
from fabric.services.history import change_record

# The last-used time is written at most this often per session (not on every request).
TOUCH_EVERY = timedelta(seconds=30)
MAX_TOKEN = 200  # longer than any token this service makes: refused without a query


def timeout() -> timedelta:
    return timedelta(seconds=settings.COMPOSER_REDFISH_SESSION_TIMEOUT_S)


class TooManySessions(Exception):
    """The user holds COMPOSER_REDFISH_SESSIONS_PER_USER live sessions already."""


def login(
    request: HttpRequest, username: object, password: object, remote_addr: str | None
) -> tuple[RedfishSession, str] | None:
    """A new session and its token, or None when the name or password is wrong."""
    user = check_password(request, username, password, remote_addr)
    if user is None:
        return None
    now = timezone.now()
    _end_lapsed(now)
    live = RedfishSession.objects.filter(user=user).count()
    if live >= settings.COMPOSER_REDFISH_SESSIONS_PER_USER:
        raise TooManySessions
    token = secrets.token_hex(32)
    session = RedfishSession.objects.create(
        public_id=secrets.token_hex(8),
        token_sha256=digest(token),
        user=user,
        auth_hash=user.get_session_auth_hash(),
        last_used_at=now,
        remote_addr=remote_addr,
    )
    _audit(session, ChangeAction.ADDED, f"Redfish session opened by {user}", user, remote_addr)
    return session, token


def logout(session: RedfishSession, caller: Caller) -> None:
    """End `session` (the caller's own, or any for an operator)."""
    _audit(
        session,
        ChangeAction.DELETED,
        f"Redfish session of {session.user} closed",
        caller.user,
        caller.remote_addr,
    )
    session.delete()


def caller_of(request: HttpRequest, remote_addr: str | None) -> Caller | None:
    """The caller a request authenticates as (a live session's token, else HTTP Basic),
    or None."""
    token = request.headers.get("X-Auth-Token")
    if token:
        return _by_token(token, remote_addr)
    header = request.headers.get("Authorization", "")
    if header[:6].lower() == "basic ":
        try:
            pair = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
        username, _colon, password = pair.partition(":")
        user = check_password(request, username, password, remote_addr)
        if user is not None:
            return Caller(user=user, remote_addr=remote_addr)
    return None


def live(now: Any = None) -> QuerySet[RedfishSession]:
    """The sessions not yet lapsed."""
    return RedfishSession.objects.filter(last_used_at__gte=(now or timezone.now()) - timeout())


def _end_lapsed(now: Any) -> None:
    """Delete the sessions unused past the timeout, each with its audit record."""
    lapsed = list(RedfishSession.objects.filter(last_used_at__lt=now - timeout()))
    if not lapsed:
        return
    ChangeRecord.objects.bulk_create(
        change_record(
            session,
            ChangeAction.DELETED,
            label=f"Redfish session {session.public_id}",
            message=f"Redfish session ended: unused for {timeout()}",
            source="redfish",
        )
        for session in lapsed
    )
    RedfishSession.objects.filter(pk__in=[s.pk for s in lapsed]).delete()


def _by_token(token: str, remote_addr: str | None) -> Caller | None:
    if len(token) > MAX_TOKEN or not token.isprintable():
        return None
    now = timezone.now()
    session = live(now).select_related("user").filter(token_sha256=digest(token)).first()
    if session is None or not session.user.is_active:
        return None
    if not constant_time_compare(session.auth_hash, session.user.get_session_auth_hash()):
        return None  # the password changed since the login: the session ended with it
    if now - session.last_used_at >= TOUCH_EVERY:
        RedfishSession.objects.filter(pk=session.pk).update(last_used_at=now)
    return Caller(user=session.user, session_id=session.public_id, remote_addr=remote_addr)


def session_alive(public_id: str) -> bool:
    """Whether the session `public_id` is still open (not deleted, not idle past the
    timeout, its user active with the password it logged in with). An open event stream
    is use of its session, so it is touched as a request would touch it
    (composer/redfish/sse.py asks once a minute)."""
    now = timezone.now()
    session = live(now).select_related("user").filter(public_id=public_id).first()
    if session is None or not session.user.is_active:
        return False
    if not constant_time_compare(session.auth_hash, session.user.get_session_auth_hash()):
        return False  # the password changed: the session ended with it
    if now - session.last_used_at >= TOUCH_EVERY:
        RedfishSession.objects.filter(pk=session.pk).update(last_used_at=now)
    return True


def _audit(
    session: RedfishSession,
    action: ChangeAction,
    message: str,
    actor: object,
    remote_addr: str | None,
) -> None:
    record = change_record(
        session,
        action,
        label=f"Redfish session {session.public_id}",
        message=message,
        actor=actor,
        source="redfish",
        remote_addr=remote_addr,
    )
    ChangeRecord.objects.bulk_create([record])

"""Checking a password: its shape first, and at most `COMPOSER_REDFISH_AUTH_FAILURES` wrong
ones a minute from one client address.

Both the login and HTTP Basic (checked on every request that uses it) end here, so
guessing passwords through Redfish is limited like guessing them through the API's token
endpoint. The counters live in the shared cache; when it cannot be reached the check is
let through with a warning (fails open), as the API's throttle does: a minute without the
limit costs less than a service nobody can sign in to. A failure is logged with the user
name and address, never the password.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.contrib.auth import authenticate
from django.core.cache import cache
from django.http import HttpRequest

from fabric.redfish_render.errors import refuse

logger = logging.getLogger(__name__)

WINDOW_S = 60
MAX_FIELD = 256  # longer than any user name or password a person types


def _plain(value: object) -> bool:
    """A user name or password as a person types one: text, not too long, no control
    characters (a NUL reaches the database as an error, not as a wrong password)."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= MAX_FIELD
        and all(ch.isprintable() or ch == " " for ch in value)
    )


def failures_key(remote_addr: str | None) -> str:
    return f"redfish-auth-failures:{remote_addr or '-'}"


def _failures(remote_addr: str | None) -> int:
    try:
        return int(cache.get(failures_key(remote_addr)) or 0)
    except Exception as exc:  # redis-py raises ConnectionError, TimeoutError, ...
        logger.warning("Redfish sign-in limit skipped: the cache is unreachable (%s)", exc)
        return 0


def _count_failure(username: object, remote_addr: str | None) -> None:
    logger.warning(
        "Redfish sign-in refused for %r from %s", str(username)[:MAX_FIELD], remote_addr or "-"
    )
    try:
        if not cache.add(failures_key(remote_addr), 1, WINDOW_S):
            cache.incr(failures_key(remote_addr))
    except Exception as exc:
        logger.warning("Redfish sign-in failure not counted: the cache is unreachable (%s)", exc)


def check_password(
    request: HttpRequest, username: object, password: object, remote_addr: str | None
) -> Any:
    """The active user with this name and password, or None. Raises a 429 RedfishError
    while the address is over its limit of wrong passwords."""
    if _failures(remote_addr) >= settings.COMPOSER_REDFISH_AUTH_FAILURES:
        raise refuse(
            429,
            "Too many wrong user names or passwords from this address; wait a minute.",
            "Base.ServiceTemporarilyUnavailable",
            WINDOW_S,
            headers={"Retry-After": str(WINDOW_S)},
        )
    if not _plain(username) or not _plain(password):
        _count_failure(username, remote_addr)
        return None
    user = authenticate(request, username=username, password=password)
    if user is None or not user.is_active:
        _count_failure(username, remote_addr)
        return None
    return user

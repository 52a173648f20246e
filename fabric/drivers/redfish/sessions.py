"""The process's signed-in Redfish sessions, one per manager, credentials and TLS settings.

Why bounded: drivers are built per call, and a process that talks to many managers, or
outlives a few credential rotations, would otherwise keep every session it ever opened
(and the service counts them against its limit). The least recently used one goes, signed
out, past MAX_SESSIONS.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from fabric.drivers.redfish.client import Options, Session

MAX_SESSIONS = 16  # per process: managers a worker talks to, plus a rotation or two
_SESSIONS: OrderedDict[tuple[Any, ...], Session] = OrderedDict()
_SESSIONS_LOCK = threading.Lock()


def credential_digest(credentials: Mapping[str, str]) -> str:
    """A digest of the credentials, to key by them without keeping them."""
    return hashlib.sha256(
        "\0".join(str(credentials.get(k, "")) for k in ("username", "password", "token")).encode()
    ).hexdigest()


def session_for(endpoint: str, credentials: Mapping[str, str], options: Options) -> Session:
    """The process's session for this manager, created on first use.

    Keyed by the process id too: a worker forked after a session was opened must not share
    its sockets. The credentials (password or token) enter the key only as a digest, so that
    rotated credentials sign in afresh while the key itself holds no secret. Past
    MAX_SESSIONS the least recently used session is evicted and signed out.
    """
    key = (os.getpid(), endpoint.rstrip("/"), credential_digest(credentials), options)
    evicted: list[Session] = []
    with _SESSIONS_LOCK:
        session = _SESSIONS.get(key)
        if session is None:
            session = _SESSIONS[key] = Session(endpoint, credentials, options)
        _SESSIONS.move_to_end(key)
        while len(_SESSIONS) > MAX_SESSIONS:
            evicted.append(_SESSIONS.popitem(last=False)[1])
    for old in evicted:  # outside the lock: signing out is a round trip
        old.close()
    return session

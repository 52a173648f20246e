"""Who may talk to the simulated Redfish service: one account, sessions (X-Auth-Token)
or HTTP Basic, as a Redfish service offers them.

The account comes from the settings COMPOSER_SIMULATOR_REDFISH_USERNAME and
COMPOSER_SIMULATOR_REDFISH_PASSWORD (`make run` passes its lab's account through them),
else the demo account below, for tests and a developer's machine; tokens live in the
serving process only, so a restart signs every client out (they sign in again on the
401, as they would with a real manager). Nothing here logs a password or a token.
"""

from __future__ import annotations

import base64
import hmac
import secrets
import threading

from django.conf import settings

# The demo account. The simulated manager imports no composer (fabric's registry loads
# it in every worker), so the launcher's banner reads its own copy (composer/demo_users.py)
# and hands it over in the settings' variables; a test checks that the two agree.
DEFAULT_USERNAME = "operator"
DEFAULT_PASSWORD = "simulator"


def credentials() -> dict[str, str]:
    """The account a client signs in with: {"username", "password"} from the settings."""
    return {
        "username": str(
            getattr(settings, "COMPOSER_SIMULATOR_REDFISH_USERNAME", "") or DEFAULT_USERNAME
        ),
        "password": str(
            getattr(settings, "COMPOSER_SIMULATOR_REDFISH_PASSWORD", "") or DEFAULT_PASSWORD
        ),
    }


class Accounts:
    """The account and the open sessions of one server."""

    def __init__(self, username: str, password: str) -> None:
        self.username = username
        self._password = password
        self._lock = threading.Lock()
        self._sessions: dict[str, tuple[str, str]] = {}  # session id -> (token, user)
        self.changes = 0

    def __repr__(self) -> str:
        return f"Accounts(username={self.username!r})"  # never the password

    def valid(self, username: object, password: object) -> bool:
        return hmac.compare_digest(str(username), self.username) & hmac.compare_digest(
            str(password), self._password
        )

    def login(self, username: object, password: object) -> tuple[str, str] | None:
        """A new session (id, token) for the right credentials, else None."""
        if not self.valid(username, password):
            return None
        session_id, token = secrets.token_hex(8), secrets.token_urlsafe(24)
        with self._lock:
            self._sessions[session_id] = (token, self.username)
            self.changes += 1
        return session_id, token

    def logout(self, session_id: str) -> bool:
        with self._lock:
            gone = self._sessions.pop(session_id, None) is not None
            self.changes += gone
        return gone

    def sessions(self) -> list[tuple[str, str]]:
        """(session id, user name) of every open session."""
        with self._lock:
            return [(s, user) for s, (_token, user) in self._sessions.items()]

    def authorised(self, token: str | None, authorization: str | None) -> bool:
        """A known X-Auth-Token, or HTTP Basic with the account's credentials."""
        if token:
            with self._lock:
                known = [t for t, _user in self._sessions.values()]
            if any(hmac.compare_digest(token, t) for t in known):
                return True
        if authorization and authorization.startswith("Basic "):
            try:
                decoded = base64.b64decode(authorization[6:]).decode()
            except (ValueError, UnicodeDecodeError):
                return False
            username, _, password = decoded.partition(":")
            return self.valid(username, password)
        return False

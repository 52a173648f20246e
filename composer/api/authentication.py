"""Token authentication that refuses malformed keys before they reach the database.

DRF's TokenAuthentication looks up whatever follows `Token `: a key with a NUL byte makes
PostgreSQL raise (a 500), and a 5,000-character key costs a query for nothing. Keys are at
most 40 printable ASCII characters (DRF generates 40 hex digits), so anything else is
answered 401 "Invalid token." at once, exactly like an unknown key.
"""

from __future__ import annotations

import re
from typing import Any

from rest_framework import authentication, exceptions

KEY_PATTERN = re.compile(r"[!-~]{1,40}")


class TokenAuthentication(authentication.TokenAuthentication):
    """`Authorization: Token <key>`, with the key's shape checked first."""

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        if not KEY_PATTERN.fullmatch(key):
            raise exceptions.AuthenticationFailed("Invalid token.")
        return super().authenticate_credentials(key)

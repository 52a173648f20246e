"""Token authentication against `composer.models.ApiToken`, which keeps keys as digests.

DRF's own TokenAuthentication reads the header (`Authorization: Token <key>`) and answers
`WWW-Authenticate: Token`; only the lookup is Composer's: the key's SHA-256 is looked up,
never the key. A malformed key is refused before any query: keys are at most 40 printable
ASCII characters (Composer issues 40 hexadecimal digits), and a key with a NUL byte or of
5,000 characters is answered 401 "Invalid token." at once, exactly like an unknown key.
"""

from __future__ import annotations

import re
from typing import Any

from rest_framework import authentication, exceptions

from composer.services.api_tokens import api_token_find

KEY_PATTERN = re.compile(r"[!-~]{1,40}")


class TokenAuthentication(authentication.TokenAuthentication):
    """`Authorization: Token <key>`; `request.auth` is the `ApiToken`."""

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        token = api_token_find(key) if KEY_PATTERN.fullmatch(key) else None
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        return token.user, token

"""Who is on a websocket, and from which page: token authentication and the origin check.

Browsers authenticate `/ws/events/` with the session cookie (Channels' AuthMiddlewareStack,
the same login as the pages) and always send an `Origin` header, which must name one of
ALLOWED_HOSTS: that is what stops another site's page from opening a socket with the
user's cookie (cross-site websocket hijacking).

API clients authenticate with their API token (looked up by its digest, with the API's own
checks: `composer.api.authentication`), sent as `Authorization: Token <key>` or, where a client
cannot set headers, as `?token=<key>` (which proxies may log: prefer the header). They
often send no `Origin`; that is allowed only with a token, since no cookie is trusted
then. A token that does not authenticate leaves the connection anonymous (never falls back
to the cookie), and the consumer closes it with 4401.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware
from channels.security.websocket import OriginValidator, WebsocketDenier
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from rest_framework import exceptions

from composer.api.authentication import TokenAuthentication


def token_from_scope(scope: dict[str, Any]) -> str | None:
    """The API token the client sent (header first, then `?token=`), or None."""
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, key = value.decode("latin1").partition(" ")
            if scheme.lower() == "token":
                return key.strip()
    query = parse_qs(scope.get("query_string", b"").decode("latin1"))
    keys = query.get("token")
    return keys[0] if keys else None


@database_sync_to_async
def _user_for_token(key: str) -> Any:
    try:
        user, _token = TokenAuthentication().authenticate_credentials(key)
    except exceptions.AuthenticationFailed:
        return AnonymousUser()
    return user


class TokenAuthMiddleware(BaseMiddleware):
    """Sets `scope["user"]` from an API token when the client sent one (`scope["auth"]`
    says "token" then, "session" otherwise). Goes inside AuthMiddlewareStack."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        key = token_from_scope(scope)
        if key is not None:
            scope = dict(scope, user=await _user_for_token(key), auth="token")
        else:
            scope = dict(scope, auth="session")
        return await super().__call__(scope, receive, send)


class EventsOriginValidator(OriginValidator):
    """Channels' AllowedHostsOriginValidator, with two differences:

    - ALLOWED_HOSTS is read on every connection (not once at import), so settings changed
      by tests and by `override_settings` apply;
    - a connection without an `Origin` header (not a browser) passes when it carries an
      API token: it proves who it is without any ambient cookie.
    """

    def __init__(self, application: Any) -> None:
        super().__init__(application, allowed_origins=[])

    @property
    def allowed_origins(self) -> list[str]:
        hosts = list(settings.ALLOWED_HOSTS)
        if settings.DEBUG and not hosts:
            hosts = ["localhost", "127.0.0.1", "[::1]"]
        return hosts

    @allowed_origins.setter
    def allowed_origins(self, value: list[str]) -> None:
        """Ignored: the hosts come from settings (the base class assigns in __init__)."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        has_origin = any(name == b"origin" for name, _ in scope.get("headers", []))
        if not has_origin and token_from_scope(scope) is None and "*" not in self.allowed_origins:
            return await WebsocketDenier()(scope, receive, send)
        if not has_origin:
            return await self.application(scope, receive, send)
        return await super().__call__(scope, receive, send)

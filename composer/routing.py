"""Websocket routes, and the stack every websocket passes through (composer.asgi).

One endpoint, `/ws/events/` (composer.consumers.EventsConsumer). In front of it, from the
outside in: the origin check, the session login (same as the pages), then token login for
API clients (composer.wsauth).
"""

from __future__ import annotations

from typing import Any

from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter
from django.urls import path

from composer.consumers import EventsConsumer
from composer.wsauth import EventsOriginValidator, TokenAuthMiddleware

websocket_urlpatterns = [
    path("ws/events/", EventsConsumer.as_asgi(), name="ws_events"),
]


def websocket_application() -> Any:
    """The ASGI application for `websocket` connections."""
    return EventsOriginValidator(
        AuthMiddlewareStack(TokenAuthMiddleware(URLRouter(websocket_urlpatterns)))
    )

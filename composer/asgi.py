"""ASGI entry point: Django's HTTP handling and the websockets, under Channels' router.

Websockets (`/ws/events/`) pass the origin check and the session and token logins first
(composer.routing).
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "composer.settings.dev")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter  # noqa: E402 - after Django is set up

from composer.routing import websocket_application  # noqa: E402 - imports models

application = ProtocolTypeRouter({"http": django_asgi_app, "websocket": websocket_application()})

"""ASGI entry point: Django's HTTP handling under Channels' protocol router."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "composer.settings.dev")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter  # noqa: E402 - after Django is set up

application = ProtocolTypeRouter({"http": django_asgi_app})

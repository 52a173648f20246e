"""WSGI entry point (for servers without websockets; the console normally runs on ASGI)."""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "composer.settings.dev")
application = get_wsgi_application()

"""ASGI entry point: Django's HTTP handling and the websockets, under Channels' router.

Websockets (`/ws/events/`) pass the origin check and the session and token logins first
(composer.routing). Under Daphne, its form parsing and its websocket failures are set
first (composer.asgi_server).
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

from composer.asgi_server import configure_daphne

configure_daphne()

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "composer.settings.dev")
# A web process: the settings give it a database connection pool (composer/settings/base.py,
# COMPOSER_DB_POOL overrides). Set only while they load, so that a process this one starts
# (a test's worker, say) does not inherit it; a process whose settings are already loaded
# (runserver, the tests) keeps what it has.
_before = os.environ.get("COMPOSER_ASGI")
os.environ["COMPOSER_ASGI"] = "1"
try:
    django_asgi_app = get_asgi_application()
finally:
    if _before is None:
        del os.environ["COMPOSER_ASGI"]
    else:
        os.environ["COMPOSER_ASGI"] = _before

from channels.routing import ProtocolTypeRouter  # noqa: E402 - after Django is set up

from composer.monitoring.metrics import process_dead_mark_at_exit  # noqa: E402
from composer.routing import websocket_application  # noqa: E402 - imports models

# Its open websockets leave the machine's composer_websockets_connected when it exits.
process_dead_mark_at_exit()

application = ProtocolTypeRouter({"http": django_asgi_app, "websocket": websocket_application()})

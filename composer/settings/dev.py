"""The embedded default: one machine, SQLite, an embedded Redis, the demo data centre."""

from __future__ import annotations

from composer.settings.base import *  # noqa: F403
from composer.settings.base import SECRET_KEY as _SECRET_KEY
from composer.settings.base import VAR_DIR
from composer.settings.env import env_bool

DEBUG = env_bool("DEBUG", True)
# A fixed key is acceptable only on a developer's machine; prod.py refuses to start without one.
SECRET_KEY = _SECRET_KEY or "dev-only-insecure-key-composer-console"

# Daphne serves the app directly in development; WhiteNoise finds static files in place,
# so no collectstatic step is needed.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True

# The SQLite file and the embedded Redis live here; a fresh clone has no var/ yet.
VAR_DIR.mkdir(parents=True, exist_ok=True)

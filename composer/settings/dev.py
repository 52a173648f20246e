"""The embedded default: one machine, SQLite, an embedded Redis, the demo data centre.

What `make run` uses. DEBUG stays off, as in production: a tenant who opens an operator's
address gets the console's own 404, not Django's debug page with the URL map.
`COMPOSER_DEBUG=1` turns it on for development (composer/settings/base.py).
"""

from __future__ import annotations

import os
import re
import warnings

from composer.settings.base import *  # noqa: F403
from composer.settings.base import DEBUG, STATIC_ROOT, VAR_DIR
from composer.settings.base import SECRET_KEY as _SECRET_KEY

# A fixed key is acceptable only on a developer's machine; prod.py refuses to start without one.
SECRET_KEY = _SECRET_KEY or "dev-only-insecure-key-composer-console"

# Daphne serves the app directly: WhiteNoise serves the static files from their source
# folders (the staticfiles finders) under their plain names, so a fresh clone needs no
# collectstatic and no manifest. It reads them once at start-up; with COMPOSER_DEBUG on,
# on every request, so that an edited stylesheet shows without a restart.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG
# Nothing is collected here, so STATIC_ROOT does not exist: WhiteNoise's warning about it
# would only alarm whoever reads the console's output.
warnings.filterwarnings("ignore", message=f"No directory at: {re.escape(str(STATIC_ROOT))}")

# Notification e-mails are printed by the workers (on the console `make run` shows) rather
# than sent, unless EMAIL_BACKEND names another backend.
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND") or "django.core.mail.backends.console.EmailBackend"

# The SQLite file and the embedded Redis live here; a fresh clone has no var/ yet.
VAR_DIR.mkdir(parents=True, exist_ok=True)

"""Production: PostgreSQL, Redis, several web processes and workers, all set by environment."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from composer.settings.base import *  # noqa: F403
from composer.settings.base import DEBUG, INSTALLED_APPS, SECRET_KEY, SIMULATOR_APP
from composer.settings.env import env_bool

if not DEBUG and not SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY must be set when COMPOSER_DEBUG is off")

# No simulator in production unless asked for (a staging console demoing with it, say): the
# simulated manager, its fault injection and /api/v1/simulator/ are not there otherwise.
COMPOSER_SIMULATOR = env_bool("COMPOSER_SIMULATOR", False)
INSTALLED_APPS = [app for app in INSTALLED_APPS if app != SIMULATOR_APP]
if COMPOSER_SIMULATOR:
    INSTALLED_APPS.append(SIMULATOR_APP)

SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
SECURE_CONTENT_TYPE_NOSNIFF = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

"""Production: PostgreSQL, Redis, several web processes and workers, all set by environment."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from composer.settings.base import *  # noqa: F403
from composer.settings.base import DEBUG, SECRET_KEY
from composer.settings.env import env_bool

if not DEBUG and not SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY must be set when COMPOSER_DEBUG is off")

SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
SECURE_CONTENT_TYPE_NOSNIFF = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

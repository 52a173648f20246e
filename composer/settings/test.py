"""Test settings: DATABASE_URL and REDIS_URL name the real services in CI.

Without them the suite runs on SQLite, and tests that need Redis start an embedded one
(see tests/conftest.py).
"""

from __future__ import annotations

from composer.settings.base import *  # noqa: F403

DEBUG = False
SECRET_KEY = "test-only-key"  # noqa: S105 - tests never leave the machine
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
ALLOWED_HOSTS = ["*"]
CELERY_TASK_ALWAYS_EAGER = True
CELERY_TASK_EAGER_PROPAGATES = True
COMPOSER_SIMULATOR_LATENCY_SCALE = 0.0
LOGGING = {"version": 1, "disable_existing_loggers": False}

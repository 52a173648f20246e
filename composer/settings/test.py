"""Test settings: DATABASE_URL and REDIS_URL name the real services in CI.

Without them the suite runs on a SQLite file (a file, not memory, so that a real Celery
worker process can share the test database) and tests that need Redis start an embedded
one (see tests/conftest.py).
"""

from __future__ import annotations

import os
import uuid

from composer.settings.base import *  # noqa: F403
from composer.settings.base import DATABASES, VAR_DIR
from composer.settings.env import env_bool, env_list

DEBUG = False
SECRET_KEY = "test-only-key"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Every test signs in from 127.0.0.1 and the validators guess wrong on purpose: the limit of
# wrong Redfish passwords is tested on its own (tests/composer/redfish), with a small one.
COMPOSER_REDFISH_AUTH_FAILURES = 1_000_000
ALLOWED_HOSTS = ["*"]
# A worker process started by a test sets COMPOSER_TEST_EAGER=0 and runs tasks for real.
CELERY_TASK_ALWAYS_EAGER = env_bool("COMPOSER_TEST_EAGER", True)
CELERY_TASK_EAGER_PROPAGATES = True
# No waiting on the simulated manager, except in a worker process a test starts with
# COMPOSER_TEST_LATENCY_SCALE (slow binds, to kill a worker in the middle of one).
COMPOSER_SIMULATOR_LATENCY_SCALE = float(os.environ.get("COMPOSER_TEST_LATENCY_SCALE", "0"))
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    VAR_DIR.mkdir(parents=True, exist_ok=True)  # a fresh clone has no var/ yet
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-composer.sqlite3")}
# Test runs sharing one Redis server (CI, parallel runs) must not hear each other's events;
# set in the environment so that the worker processes a test starts share the run's prefix.
COMPOSER_EVENTS_CHANNEL_PREFIX = os.environ.setdefault(
    "COMPOSER_EVENTS_CHANNEL_PREFIX", f"composer.test.{uuid.uuid4().hex[:12]}"
)
# Websocket and event tests run on the real Redis pub/sub layer when REDIS_URL names one (CI),
# with this run's own prefix (above). Without it, the in-memory layer; the websocket tests
# then point the pub/sub layer at an embedded Redis themselves.
if os.environ.get("REDIS_URL"):
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {
                "hosts": [os.environ["REDIS_URL"]],
                "prefix": COMPOSER_EVENTS_CHANNEL_PREFIX,
            },
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
# A fixed key for the tests' managers' credentials (never used anywhere else), unless the
# environment names keys (a test of rotation sets its own through `settings`).
COMPOSER_CREDENTIALS_KEYS = env_list(
    "COMPOSER_CREDENTIALS_KEYS", ["QUs3a1RmQ2hvc2VuRm9yVGhlVGVzdHNPbmx5MTIzNDU="]
)
COMPOSER_PROBE_TIMEOUT_S = 5
# Quiet (pytest captures records itself), unless a process a test starts asks for a log
# format: a web process whose JSON lines the test reads.
if not os.environ.get("COMPOSER_LOG_FORMAT"):
    LOGGING = {"version": 1, "disable_existing_loggers": False}
# Static files straight from the source folders: tests never run collectstatic.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
# Throttle counters and other cached values must not leak between test runs through a
# shared Redis: each test process keeps its own.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

"""Settings of the benchmarks: production-like (DEBUG off), on a throwaway database.

The database is DATABASE_URL when set (its `test_` twin is created and dropped, as the test
runner does), else a SQLite file under var/bench/ that is deleted afterwards.
"""

from __future__ import annotations

from composer.settings.base import *  # noqa: F403
from composer.settings.base import DATABASES, VAR_DIR

DEBUG = False
SECRET_KEY = "bench-only-key"  # never leaves the machine
ALLOWED_HOSTS = ["*"]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
BENCH_DIR = VAR_DIR / "bench"
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["NAME"] = str(BENCH_DIR / "bench.sqlite3")
    DATABASES["default"]["TEST"] = {"NAME": str(BENCH_DIR / "test-bench.sqlite3")}
# Quiet: a benchmark's output is its table; request warnings would only add noise and time.
LOGGING = {"version": 1, "disable_existing_loggers": False, "root": {"level": "ERROR"}}

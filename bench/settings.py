"""Settings of the benchmarks: production-like (DEBUG off), on a throwaway database.

The database is DATABASE_URL when set (its `test_` twin is created and dropped, as the test
runner does), else a SQLite file under var/bench/ that is deleted afterwards.
"""

from __future__ import annotations

from composer.settings.base import *  # noqa: F403
from composer.settings.base import DATABASES, VAR_DIR
from composer.settings.env import env_bool, env_list

DEBUG = False
SECRET_KEY = "bench-only-key"  # never leaves the machine
ALLOWED_HOSTS = ["*"]
# A Redfish manager's credentials are stored encrypted, as in production; this key encrypts
# only the simulated service's account, in a throwaway database.
COMPOSER_CREDENTIALS_KEYS = env_list(
    "COMPOSER_CREDENTIALS_KEYS", ["YmVuY2gtb25seS1jcmVkZW50aWFscy1rZXktMDAwMDA="]
)
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
BENCH_DIR = VAR_DIR / "bench"
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A process a benchmark starts (a worker, a web server) is handed the throwaway file
    # itself with BENCH_CHILD=1 and must use it as named.
    if not env_bool("BENCH_CHILD", False):
        DATABASES["default"]["NAME"] = str(BENCH_DIR / "bench.sqlite3")
    DATABASES["default"]["TEST"] = {"NAME": str(BENCH_DIR / "test-bench.sqlite3")}
# Quiet: a benchmark's output is its table; request warnings would only add noise and time.
# Errors still reach stderr (a server error in a web process a benchmark started lands in
# that process's log).
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler", "level": "ERROR"}},
    "root": {"level": "ERROR", "handlers": ["stderr"]},
}

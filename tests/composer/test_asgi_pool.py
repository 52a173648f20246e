"""Web (ASGI) processes on PostgreSQL get a connection pool; other processes never do.

Each case is a fresh interpreter: the settings read the environment once, when they load.
No database is reached (the URL names none that answers).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from composer.settings.base import BASE_DIR

PROBE = (
    "import json, os, sys\n"
    "if sys.argv[1] == 'asgi':\n"
    "    import composer.asgi\n"
    "else:\n"
    "    import django; django.setup()\n"
    "from django.conf import settings\n"
    "db = settings.DATABASES['default']\n"
    "print(json.dumps({'pool': db.get('OPTIONS', {}).get('pool'),"
    " 'max_age': db['CONN_MAX_AGE'], 'leaked': 'COMPOSER_ASGI' in os.environ}))\n"
)


def probe(entry: str, **env: str) -> dict[str, object]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("COMPOSER_DB_POOL")}
    environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "composer.settings.test",
            "DATABASE_URL": "postgres://nobody@127.0.0.1:1/nothing",
            **env,
        }
    )
    out = subprocess.run(
        [sys.executable, "-c", PROBE, entry],
        env=environ,
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_an_asgi_process_gets_a_pool_and_leaves_no_flag_for_its_children() -> None:
    seen = probe("asgi")
    assert seen["pool"] and seen["max_age"] == 0
    assert seen["leaked"] is False


@pytest.mark.parametrize(
    ("entry", "env"),
    [("plain", {}), ("asgi", {"COMPOSER_DB_POOL": "0"})],
    ids=["a worker or command", "turned off"],
)
def test_other_processes_and_an_override_get_no_pool(entry: str, env: dict[str, str]) -> None:
    seen = probe(entry, **env)
    assert seen["pool"] is None and seen["max_age"] != 0


def test_sqlite_never_gets_a_pool() -> None:
    assert probe("asgi", DATABASE_URL="sqlite:///:memory:")["pool"] is None

"""On SQLite (the embedded default of `make run`), web, worker and beat write one file. A
transaction that reads first and writes later must wait for another writer rather than fail
with "database is locked": every transaction takes the write lock when it begins
(`transaction_mode: IMMEDIATE`), and waits up to the busy timeout for it.

Whatever database the suite runs on, this runs the project's settings on a SQLite file of
its own, in a process of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import threading, time
import django
django.setup()
from django.conf import settings
from django.db import connection, transaction

options = settings.DATABASES["default"]["OPTIONS"]
print("mode", options.get("transaction_mode"), "timeout", options.get("timeout"))
with connection.cursor() as cursor:
    cursor.execute("CREATE TABLE probe (id INTEGER PRIMARY KEY, name TEXT)")
    cursor.execute("INSERT INTO probe VALUES (1, 'start')")
connection.close()
barrier, errors = threading.Barrier(2), []

def read_then_write(name):
    try:
        barrier.wait(timeout=5)  # both begin at once
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT name FROM probe WHERE id = 1")  # read first
            time.sleep(0.2)  # the other one reads meanwhile
            cursor.execute("UPDATE probe SET name = %s WHERE id = 1", [name])
    except Exception as exc:
        errors.append(repr(exc))
    finally:
        connection.close()

threads = [threading.Thread(target=read_then_write, args=(n,)) for n in "ab"]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join(timeout=30)
print("errors", errors)
"""


def test_two_sqlite_transactions_that_read_then_write_both_succeed(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "composer.settings.dev",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'probe.sqlite3'}",
        "COMPOSER_VAR_DIR": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "mode IMMEDIATE timeout 20" in done.stdout
    assert "errors []" in done.stdout, done.stdout

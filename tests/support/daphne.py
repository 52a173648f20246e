"""`daphne composer.asgi:application` in a process of its own, as in production.

For what only the real server shows (composer.asgi_server) and for the API fuzz
(tests/fuzz): the process uses the test settings on the database named by `database`
(a Django DATABASES entry), so it sees what the caller wrote there.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from composer.embedded import free_port
from tests.support.worker import database_url

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def daphne_running(
    database: dict[str, Any], *, log_path: Path, timeout_s: float = 60.0
) -> Iterator[int]:
    """Start Daphne on a free port of 127.0.0.1, wait until it listens, yield the port; stop
    it afterwards. Its output goes to `log_path` (shown when it fails to start)."""
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "composer.settings.test",
        "DATABASE_URL": database_url(database),
        "PYTHONUNBUFFERED": "1",
    }
    argv = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port)]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [*argv, "composer.asgi:application"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"daphne exited:\n{log_path.read_text(errors='replace')}")
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError("daphne did not start listening") from None
                    time.sleep(0.2)
            yield port
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

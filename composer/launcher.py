"""`make run`: the whole console on one machine with one command.

Starts (in order) an embedded Redis when REDIS_URL is unset, migrates, loads the demo data
centre (idempotent), then runs a Celery worker, Celery beat and the ASGI server (Daphne)
as child processes. Each child runs in its own process group; Ctrl-C or SIGTERM stops them
all and waits for them, so nothing is left running. A child that dies stops the rest.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
log = logging.getLogger("composer.launcher")


class Launcher:
    """Owns the child processes and tears them down together."""

    def __init__(self) -> None:
        self.children: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.stopping = False

    def spawn(self, name: str, argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        """Start a child in its own process group; refused once a stop was requested, so a
        Ctrl-C during start-up never leaves a process started after it."""
        if self.stopping:
            raise Interrupted(name)
        process = subprocess.Popen(argv, cwd=ROOT, env=env, start_new_session=True)
        self.children.append((name, process))
        log.info("started %s (pid %s)", name, process.pid)
        return process

    def request_stop(self, *_: object) -> None:
        """The signal handler: only note the request; the main loop tears down."""
        self.stopping = True

    def teardown(self) -> None:
        """Stop the children newest first (web, beat, worker, then Redis, which they use).

        Each gets SIGTERM to its whole process group and a grace period, then SIGKILL; the
        group is killed at the end in any case, so Celery's pool processes go with it.
        Safe to call more than once: each child is stopped once.
        """
        self.stopping = True
        if self.children:
            log.info("stopping %d processes", len(self.children))
        while self.children:
            name, process = self.children.pop()
            _signal_group(process, signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                log.warning("%s did not stop in time; killing it", name)
                _signal_group(process, signal.SIGKILL)
                process.wait()
            _signal_group(process, signal.SIGKILL)

    def watch(self) -> int:
        """Block until a child exits or a stop is requested; return the exit code."""
        while not self.stopping:
            for name, process in self.children:
                code = process.poll()
                if code is not None:
                    log.error("%s exited with code %s; stopping the console", name, code)
                    return code or 1
            time.sleep(0.5)
        return 0


class Interrupted(Exception):
    """A stop was requested while the console was still starting."""


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


def _manage(env: dict[str, str], *args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True)


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    env = dict(os.environ)
    env.setdefault("DJANGO_SETTINGS_MODULE", "composer.settings.dev")
    env["PYTHONUNBUFFERED"] = "1"
    var_dir = Path(env.get("COMPOSER_VAR_DIR", ROOT / "var"))
    var_dir.mkdir(parents=True, exist_ok=True)
    port = env.get("PORT", "8000")
    launcher = Launcher()
    signal.signal(signal.SIGINT, launcher.request_stop)
    signal.signal(signal.SIGTERM, launcher.request_stop)
    try:
        if not env.get("REDIS_URL"):
            from composer.embedded import start_redis

            redis_process, url = start_redis(var_dir / "redis")
            launcher.children.append(("redis", redis_process))
            env["REDIS_URL"] = url
            log.info("embedded Redis at %s (pid %s)", url, redis_process.pid)
        _manage(env, "migrate", "--noinput")
        _manage(env, "seed_demo")
        if launcher.stopping:
            raise Interrupted("start-up")
        celery = [sys.executable, "-m", "celery", "-A", "composer"]
        launcher.spawn(
            "worker", [*celery, "worker", "--loglevel", "INFO", "--concurrency", "2"], env
        )
        launcher.spawn(
            "beat",
            [
                *celery,
                "beat",
                "--loglevel",
                "INFO",
                "--schedule",
                str(var_dir / "celerybeat-schedule"),
            ],
            env,
        )
        launcher.spawn(
            "web",
            [
                sys.executable,
                "-m",
                "daphne",
                "-b",
                "127.0.0.1",
                "-p",
                port,
                "composer.asgi:application",
            ],
            env,
        )
        password = env.get("COMPOSER_DEMO_PASSWORD", "demo")
        banner = (
            f"\n  Composer is running at http://127.0.0.1:{port}/\n"
            f"  Logins (password {password!r}): admin (operator), alice (Acme), carol (Globex)\n"
            f"  API docs: http://127.0.0.1:{port}/api/docs/   Press Ctrl-C to stop.\n"
        )
        sys.stderr.write(banner)
        return launcher.watch()
    except Interrupted:
        log.info("interrupted while starting")
        return 0
    except (subprocess.CalledProcessError, OSError, RuntimeError) as exc:
        if launcher.stopping:
            log.info("interrupted while starting")
            return 0
        log.error("could not start the console: %s", exc)
        return 1
    finally:
        launcher.teardown()


if __name__ == "__main__":
    sys.exit(main())

"""Start and stop a real Celery worker process for integration tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from kombu import pools as kombu_pools

from composer import celery_app

ROOT = Path(__file__).resolve().parents[2]


def spawn_logged(
    argv: list[str], *, env: dict[str, str], log_path: Path
) -> subprocess.Popen[bytes]:
    """Start `argv` in the repository, in a process group of its own, its output (stdout and
    stderr) written to `log_path`."""
    with log_path.open("wb") as log:
        return subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )


def process_stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a process `spawn_logged` started, and its children (its session): SIGTERM, then
    SIGKILL after 15 seconds."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def process_env(redis_url: str, database: dict[str, Any]) -> dict[str, str]:
    """The environment of a product process (a worker, beat, the Kubernetes controller)
    started by a test: this test's database and Redis, test settings, no eager tasks."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "composer.settings.test",
        "COMPOSER_TEST_EAGER": "0",
        "DATABASE_URL": database_url(database),
        "REDIS_URL": redis_url,
        "PYTHONUNBUFFERED": "1",
    }


def database_url(settings_dict: dict[str, Any]) -> str:
    """The DATABASE_URL that names the database this test process is using."""
    engine = settings_dict["ENGINE"]
    name = settings_dict["NAME"]
    if engine.endswith("sqlite3"):
        return f"sqlite:///{name}"
    if engine.endswith("postgresql"):
        user = quote(settings_dict.get("USER") or "")
        password = settings_dict.get("PASSWORD") or ""
        auth = f"{user}:{quote(password)}@" if password else (f"{user}@" if user else "")
        host = settings_dict.get("HOST") or "127.0.0.1"
        port = settings_dict.get("PORT") or 5432
        return f"postgres://{auth}{host}:{port}/{name}"
    raise ValueError(f"no worker support for database engine {engine}")


def run_race(
    target: Any, jobs: list[dict[str, Any]], *, wait_s: float = 120
) -> list[tuple[Any, Any, str]]:
    """Run `target(database_url, barrier, results, job)` in one spawned process per job, all
    released together at a barrier, on this test's database; their outcomes (each
    `(id, state, error)`), in the order they came. Fails on a child that crashed or
    reported an error."""
    import multiprocessing

    from django.db import connection

    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(jobs))
    results = ctx.Queue()
    url = database_url(connection.settings_dict)
    processes = [ctx.Process(target=target, args=(url, barrier, results, job)) for job in jobs]
    for process in processes:
        process.start()
    outcomes = [results.get(timeout=wait_s) for _ in jobs]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    assert not [o for o in outcomes if o[2]], outcomes
    return outcomes


@dataclass
class WorkerProcess:
    """A running `celery -A composer worker`; `log()` returns what it printed so far."""

    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    @classmethod
    @contextmanager
    def start(
        cls,
        *,
        redis_url: str,
        database: dict[str, Any],
        timeout_s: float = 60.0,
        queues: str = "celery,housekeeping",
        concurrency: int = 2,
        name: str = "",
        env: dict[str, str] | None = None,
        beat: bool = False,
    ) -> Iterator[WorkerProcess]:
        """Start a worker (`name`: its node name and log file, for several at once; by
        default named after its queues; `env`: more environment; `beat`: a `celery beat`
        process instead, ready once it started), wait until it is ready, point this process's
        Celery app at the same broker with eager mode off; stop the process and restore the
        app afterwards.

        A worker consumes both queues by default (job tasks on "celery", beat's housekeeping
        on "housekeeping"), so one worker runs everything a test sends."""
        env = {**process_env(redis_url, database), **(env or {})}
        name = name or f"test-{queues.replace(',', '-')}"
        folder = Path(os.environ.get("TMPDIR", "/tmp"))
        log_path = folder / f"composer-{name}-{os.getpid()}.log"
        log_file = log_path.open("wb")
        if beat:
            command = ["beat", "--loglevel", "INFO", "--schedule", str(log_path) + ".schedule"]
            ready = "beat: Starting..."
        else:
            command = [
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                str(concurrency),
                "--pool",
                "prefork",
                "--queues",
                queues,
                "--hostname",
                f"{name}-{os.getpid()}@%h",
                "--without-mingle",
                "--without-gossip",
            ]
            ready = "ready."
        process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "composer", *command],
            cwd=ROOT,
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
        old = {
            "task_always_eager": celery_app.conf.task_always_eager,
            "broker_url": celery_app.conf.broker_url,
        }
        _reset_connections()
        celery_app.conf.update(task_always_eager=False, broker_url=redis_url)
        worker = cls(process=process, log_path=log_path)
        try:
            deadline = time.monotonic() + timeout_s
            while ready not in worker.log():
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"celery worker did not start:\n{worker.log()}")
                time.sleep(0.2)
            yield worker
        finally:
            celery_app.conf.update(**old)
            _reset_connections()
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log_file.close()


def _reset_connections() -> None:
    """Drop the app's cached broker connections so the next send uses the current URL."""
    kombu_pools.reset()
    # Private attributes, which celery-types does not describe.
    celery_app._pool = None  # type: ignore[attr-defined]
    celery_app.amqp._producer_pool = None  # type: ignore[attr-defined]

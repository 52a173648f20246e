"""Processes a benchmark starts: web servers, Celery workers and its own Redis.

Shared by the benchmarks that measure through real processes (bench_e2e, bench_fanout,
bench_redfish).
Needs no Django: `redis_for_bench` runs before `django.setup()` when the settings must
read the Redis it starts.
"""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

from composer.embedded import free_port, start_redis

ROOT = Path(__file__).resolve().parent.parent


def database_url(settings_dict: dict[str, Any]) -> str:
    """The DATABASE_URL of the throwaway database this process has just created."""
    name = settings_dict["NAME"]
    if settings_dict["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{name}"
    user = quote(settings_dict.get("USER") or "")
    password = settings_dict.get("PASSWORD") or ""
    auth = f"{user}:{quote(password)}@" if password else (f"{user}@" if user else "")
    host = settings_dict.get("HOST") or "127.0.0.1"
    return f"postgres://{auth}{host}:{settings_dict.get('PORT') or 5432}/{name}"


@dataclass
class Child:
    """A process the benchmark started (in its own session) and the file it logs to."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        """SIGTERM to its own process group (a prefork worker's pool children included)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def spawn(name: str, argv: list[str], env: dict[str, str], folder: Path) -> Child:
    log_path = folder / f"{name}.log"
    with log_path.open("wb") as out:
        process = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    return Child(name, process, log_path)


def wait_until(child: Child, ready: Callable[[], bool], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        if child.process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{child.name} did not start:\n{child.log()[-3000:]}")
        time.sleep(0.1)


def answers_http(port: int) -> bool:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        conn.request("GET", "/api/v1/")
        conn.getresponse().read()
        conn.close()
        return True
    except OSError:
        return False


@contextmanager
def services(
    *, database: str, redis: str, workers: int, web: int, folder: Path, label: str = "bench"
) -> Iterator[list[int]]:
    """`web` daphne processes and `workers` Celery workers on `database` and `redis`; yields
    the web ports. Everything started here is stopped on the way out, whatever happens."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "bench.settings",
        "DATABASE_URL": database,
        "REDIS_URL": redis,
        "BENCH_CHILD": "1",
        "PYTHONUNBUFFERED": "1",
    }
    children: list[Child] = []
    try:
        for index in range(workers):
            worker = spawn(
                f"worker-{index}",
                [
                    sys.executable, "-m", "celery", "-A", "composer", "worker",
                    "--loglevel", "INFO", "--pool", "prefork", "--concurrency", "1",
                    "--queues", "celery,housekeeping",
                    "--hostname", f"{label}-{index}-{os.getpid()}@%h",
                    "--without-mingle", "--without-gossip",
                ],
                env,
                folder,
            )  # fmt: skip
            children.append(worker)
        ports = []
        for index in range(web):
            port = free_port()
            server = spawn(
                f"web-{index}",
                [sys.executable, "-m", "daphne", "-v", "0", "-b", "127.0.0.1", "-p", str(port),
                 "composer.asgi:application"],
                env,
                folder,
            )  # fmt: skip
            children.append(server)
            ports.append(port)
        for child in children:
            if child.name.startswith("worker"):
                wait_until(child, partial(_logged_ready, child))
        for child, port in zip(
            [c for c in children if c.name.startswith("web")], ports, strict=True
        ):
            wait_until(child, partial(answers_http, port))
        yield ports
    finally:
        for child in reversed(children):
            child.stop()


def answers_redfish(port: int) -> bool:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        conn.request("GET", "/redfish")
        ok = conn.getresponse().status == 200
        conn.close()
        return ok
    except OSError:
        return False


@contextmanager
def redfish_service(*, database: str, fabric: str, folder: Path) -> Iterator[str]:
    """The simulated fabric `fabric` served as Redfish by `manage.py simulator_redfish`, in
    a process of its own as a real manager would be (not a thread sharing the client's
    interpreter); yields its base URL. Stopped on the way out, whatever happens."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "bench.settings",
        "DATABASE_URL": database,
        "BENCH_CHILD": "1",
        "PYTHONUNBUFFERED": "1",
    }
    port = free_port()
    child = spawn(
        "redfish",
        [sys.executable, "manage.py", "simulator_redfish", "--fabric", fabric,
         "--port", str(port)],
        env,
        folder,
    )  # fmt: skip
    try:
        wait_until(child, lambda: answers_redfish(port))
        yield f"http://127.0.0.1:{port}"
    finally:
        child.stop()


@contextmanager
def redis_for_bench(folder: Path, *, url: str | None = None) -> Iterator[str]:
    """`url` when given, else a private embedded redis-server for this run."""
    if url:
        yield url
        return
    process, started = start_redis(folder / "redis")
    try:
        yield started
    finally:
        process.terminate()
        process.wait(timeout=10)


def _logged_ready(child: Child) -> bool:
    """Whether a worker has said in its log that it is ready."""
    return "ready." in child.log()

"""The production layout on this machine, under a supervisor that restarts what dies.

One Redis of its own (restartable on the same port, no persistence), `web` daphne
processes (`composer.asgi`) on fixed ports, `workers` Celery workers (prefork, `concurrency`
processes each), Celery beat, and a `housekeeping` worker (`-Q housekeeping`) when the
settings route tasks to that queue (`CELERY_TASK_ROUTES`) or `--housekeeping yes` asks for
one. The supervisor restarts a process that died after `restart_delay_s`, as systemd's
`Restart=always` would; before it does, it kills whatever is left of the dead process's
group (a worker's orphaned pool children), as systemd's default `KillMode=control-group`
does when a unit's main process dies.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.processes import ROOT, answers_http
from composer.embedded import free_port, start_redis


def housekeeping_routed(routes: Any) -> bool:
    """Whether the settings' CELERY_TASK_ROUTES send any task to a `housekeeping` queue."""
    if isinstance(routes, dict):
        return any(
            isinstance(route, dict) and route.get("queue") == "housekeeping"
            for route in routes.values()
        )
    return "housekeeping" in repr(routes)


@dataclass
class Proc:
    """One supervised process: how to start it, its current incarnation, its restarts."""

    name: str
    argv: list[str]
    kind: str  # "web", "worker", "beat"
    port: int | None = None
    process: subprocess.Popen[bytes] | None = None
    incarnation: int = 0
    restarts: list[float] = field(default_factory=list)  # time.time() of each restart

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


class Layout:
    """Starts, supervises and stops every process of the layout."""

    def __init__(
        self,
        *,
        folder: Path,
        database: str,
        web: int,
        workers: int,
        concurrency: int,
        housekeeping: bool,
        env: dict[str, str],
        restart_delay_s: float = 1.0,
    ) -> None:
        self.folder = folder
        self.restart_delay_s = restart_delay_s
        self.lock = threading.RLock()
        self.stopping = threading.Event()
        self.redis_port = free_port()
        self.redis_url = f"redis://127.0.0.1:{self.redis_port}/0"
        self.redis: subprocess.Popen[bytes] | None = None
        self.env = {
            **os.environ,
            **env,
            "DJANGO_SETTINGS_MODULE": "bench.settings",
            "DATABASE_URL": database,
            "REDIS_URL": self.redis_url,
            "BENCH_CHILD": "1",
            "PYTHONUNBUFFERED": "1",
        }
        celery = [sys.executable, "-m", "celery", "-A", "composer"]
        self.procs: list[Proc] = []
        for index in range(workers):
            self.procs.append(
                Proc(
                    f"worker-{index}",
                    [*celery, "worker", "--loglevel", "INFO", "--pool", "prefork",
                     "--concurrency", str(concurrency), "--hostname", f"chaos-{index}@%h",
                     "--without-mingle", "--without-gossip"],
                    "worker",
                )
            )  # fmt: skip
        if housekeeping:
            self.procs.append(
                Proc(
                    "worker-housekeeping",
                    [*celery, "worker", "-Q", "housekeeping", "--loglevel", "INFO",
                     "--pool", "prefork", "--concurrency", "1",
                     "--hostname", "chaos-housekeeping@%h", "--without-mingle",
                     "--without-gossip"],
                    "worker",
                )
            )  # fmt: skip
        self.procs.append(
            Proc(
                "beat",
                [*celery, "beat", "--loglevel", "INFO", "--schedule", str(folder / "beat")],
                "beat",
            )
        )
        for index in range(web):
            port = free_port()
            self.procs.append(
                Proc(
                    f"web-{index}",
                    [sys.executable, "-m", "daphne", "-v", "0", "-b", "127.0.0.1", "-p",
                     str(port), "composer.asgi:application"],
                    "web",
                    port=port,
                )
            )  # fmt: skip
        self.thread = threading.Thread(target=self._supervise, name="supervisor", daemon=True)

    # --- processes ---------------------------------------------------------------------------

    def of_kind(self, kind: str) -> list[Proc]:
        return [p for p in self.procs if p.kind == kind]

    @property
    def web_ports(self) -> list[int]:
        return [p.port for p in self.of_kind("web") if p.port]

    def log_path(self, proc: Proc) -> Path:
        return self.folder / f"{proc.name}.{proc.incarnation}.log"

    def _start(self, proc: Proc) -> None:
        proc.incarnation += 1
        with self.log_path(proc).open("wb") as out:
            proc.process = subprocess.Popen(
                proc.argv, cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip

    def ready(self, proc: Proc) -> bool:
        """A worker logged `ready.`, a web process answers HTTP; beat counts once started."""
        if not proc.alive():
            return False
        if proc.kind == "worker":
            return "ready." in self.log_path(proc).read_text(errors="replace")
        if proc.kind == "web" and proc.port:
            return answers_http(proc.port)
        return True

    def wait_ready(self, timeout_s: float = 90.0) -> None:
        deadline = time.monotonic() + timeout_s
        for proc in self.procs:
            while not self.ready(proc):
                if time.monotonic() > deadline:
                    log = self.log_path(proc).read_text(errors="replace")[-3000:]
                    raise RuntimeError(f"{proc.name} did not start:\n{log}")
                time.sleep(0.2)

    @staticmethod
    def kill_group(proc: Proc) -> None:
        """SIGKILL to what is left of the process's group (its pool children)."""
        if proc.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.process.pid, signal.SIGKILL)
        proc.process.wait()

    def _supervise(self) -> None:
        while not self.stopping.is_set():
            for proc in self.procs:
                with self.lock:
                    if proc.alive() or self.stopping.is_set():
                        continue
                self.kill_group(proc)  # systemd's KillMode=control-group
                time.sleep(self.restart_delay_s)
                with self.lock:
                    if self.stopping.is_set():
                        return
                    self._start(proc)
                    proc.restarts.append(time.time())
            time.sleep(0.1)

    # --- Redis -------------------------------------------------------------------------------

    def start_redis(self) -> None:
        self.redis, _ = start_redis(self.folder / "redis", port=self.redis_port)

    def restart_redis(self) -> float:
        """SIGKILL Redis and start a new, empty one on the same port; when it died."""
        assert self.redis is not None
        self.redis.kill()
        died = time.time()
        self.redis.wait()
        time.sleep(self.restart_delay_s)
        self.start_redis()
        return died

    # --- the whole -------------------------------------------------------------------------

    def start(self) -> None:
        self.start_redis()
        for proc in self.procs:
            self._start(proc)
        self.wait_ready()
        self.thread.start()

    def stop(self) -> None:
        """SIGTERM to every process group, SIGKILL to what is left after 20 s; then Redis."""
        self.stopping.set()
        if self.thread.is_alive():
            self.thread.join(timeout=10)
        for proc in reversed(self.procs):
            if proc.process is not None and proc.process.poll() is None:
                try:
                    os.killpg(proc.process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    continue
        for proc in reversed(self.procs):
            if proc.process is None:
                continue
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.process.wait(timeout=20)
            self.kill_group(proc)
        if self.redis is not None:
            self.redis.terminate()
            try:
                self.redis.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.redis.kill()
                self.redis.wait()

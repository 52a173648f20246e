"""The disruptions: kill -9 of a worker's main process, of a pool child, of a web process;
a Redis restart; the database connections terminated.

Each is made at a random moment while compositions are in a transitional state (the burst
under way), and recorded with the compositions that were transitional at that moment,
read from the database. The supervisor (`layout`) restarts what died; Celery's main
process replaces a pool child itself; Redis is restarted here on the same port, empty.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from django.db import connection
from django.utils import timezone

from bench.chaos.layout import Layout, Proc
from bench.chaos.load import STUCK_AFTER_S, TRANSITIONAL, db_retry
from composer.models import StateChange

# The order disruptions come in, repeated: process kills (what "kills" counts) with a
# database-connection purge and a Redis restart among them.
# Both outages come early, so that a short run (`--kills 5`) has made every kind.
CYCLE: tuple[str, ...] = (
    "worker-main",
    "pool-child",
    "web",
    "database",
    "worker-main",
    "redis",
    "pool-child",
    "worker-main",
    "pool-child",
    "web",
)
KILLS = frozenset({"worker-main", "pool-child", "web"})
LABELS = {
    "worker-main": "kill -9 of a Celery worker's main process",
    "pool-child": "kill -9 of a Celery pool child",
    "web": "kill -9 of the web process",
    "redis": "Redis restarted (killed, empty on the same port)",
    "database": "database connections terminated (pg_terminate_backend)",
}


@dataclass
class Disruption:
    """One disruption: what, to which process, when (time.time()), and the compositions
    that were transitional at that moment."""

    kind: str
    target: str
    at: float
    touched: list[int] = field(default_factory=list)
    detail: str = ""


def children_of(pid: int) -> list[int]:
    """The pids whose parent is `pid` (a Celery worker's pool children), from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces; split after its closing paren.
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def transitional_now() -> list[int]:
    """Compositions mid-step now: in a transitional state they entered less than
    STUCK_AFTER_S ago (one stuck since an earlier disruption is counted as stuck, once)."""
    since = timezone.now() - timedelta(seconds=STUCK_AFTER_S)
    return db_retry(
        lambda: sorted(
            set(
                StateChange.objects.filter(
                    at__gte=since, composition__state__in=TRANSITIONAL
                ).values_list("composition_id", flat=True)
            )
        )
    )


class Chaos(threading.Thread):
    """Makes `kills` process kills (and the outages between them), one every `interval_s`
    (jittered), each at a random moment while something is transitional."""

    def __init__(self, layout: Layout, *, kills: int, interval_s: float, seed: int) -> None:
        super().__init__(name="chaos", daemon=True)
        self.layout = layout
        self.kills = kills
        self.interval_s = interval_s
        self.random = random.Random(seed)
        self.done: list[Disruption] = []
        self.stopping = threading.Event()
        self.errors: list[str] = []

    def kill_count(self) -> int:
        return sum(1 for d in self.done if d.kind in KILLS)

    def run(self) -> None:
        try:
            step = 0
            while self.kill_count() < self.kills and not self.stopping.is_set():
                kind = CYCLE[step % len(CYCLE)]
                step += 1
                self.stopping.wait(self.interval_s * self.random.uniform(0.6, 1.4))
                if self.stopping.is_set():
                    break
                self._when_busy()
                touched = transitional_now()
                disruption = self._make(kind)
                if disruption is None:
                    continue
                disruption.touched = touched
                self.done.append(disruption)
        except Exception as exc:
            self.errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            connection.close()

    def _when_busy(self, limit_s: float = 8.0) -> None:
        """Wait (a little) for a moment when some composition is transitional, then a random
        fraction of a second more, so that the kill lands mid-step rather than on its edge."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline and not self.stopping.is_set():
            if transitional_now():
                break
            time.sleep(0.2)
        time.sleep(self.random.uniform(0.0, 1.0))

    def _make(self, kind: str) -> Disruption | None:
        if kind == "worker-main":
            proc = self.random.choice(self.layout.of_kind("worker"))
            return self._kill(proc, proc.pid, kind, "main process")
        if kind == "pool-child":
            workers = [p for p in self.layout.of_kind("worker") if p.alive()]
            self.random.shuffle(workers)
            for proc in workers:
                children = children_of(proc.pid)
                if children:
                    return self._kill(proc, self.random.choice(children), kind, "pool child")
            return None
        if kind == "web":
            proc = self.random.choice(self.layout.of_kind("web"))
            return self._kill(proc, proc.pid, kind, "")
        if kind == "redis":
            return Disruption(kind, "redis", self.layout.restart_redis())
        if kind == "database":
            return self._terminate_connections()
        raise ValueError(kind)

    def _kill(self, proc: Proc, pid: int, kind: str, what: str) -> Disruption | None:
        if not proc.alive():
            return None
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return None
        return Disruption(kind, proc.name, time.time(), detail=f"{what} {pid}".strip())

    def _terminate_connections(self) -> Disruption:
        """Every other connection to the run's database ends (the harness's own included:
        its threads reconnect), as a database failover or a proxy restart would."""
        at = time.time()

        def terminate() -> int:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
                return int(cursor.fetchone()[0])

        count = db_retry(terminate)
        return Disruption("database", "postgresql", at, detail=f"{count} connections")

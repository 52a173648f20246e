"""The load: compose, heal and decompose bursts through the HTTP API, with driver faults.

A tenant member's API token composes; an operator's token injects device faults through
the simulator's API (`POST /api/v1/simulator/faults/`, which queues a health poll: the
compositions holding a failed GPU degrade and, since they ask for `self_heal`, heal). Every
POST carries an Idempotency-Key and is retried while the web process is down (a client
keeps trying, as any API client behind a restarting server would). Before some bursts the
simulated manager is told to time out binds or fail unbinds transiently
(`store.operation_fault_set`, what `manage.py sim_operation_fault` does).
"""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from django.db import InterfaceError, OperationalError, close_old_connections, connection

from composer.choices import CompositionState
from composer.models import Allocation, Composition
from fabric.simulator import store

T = TypeVar("T")
S = CompositionState
TRANSITIONAL = frozenset({S.REQUESTED, S.PLACING, S.BINDING, S.HEALING, S.DECOMPOSING})
SETTLED = frozenset({S.READY, S.DEGRADED, S.FAILED, S.RELEASED, S.REJECTED})
# Longer than this in a transitional state in one stretch: stuck (the target allows none).
STUCK_AFTER_S = 60.0
# 2 GPUs (two bindings) and a few host cores; heals itself when a GPU fails.
SPEC: dict[str, Any] = {"items": [{"kind": "gpu", "count": 2}], "cores": 4, "self_heal": True}


def db_retry(call: Callable[[], T], attempts: int = 5) -> T:
    """`call()`, again on a fresh connection when the database dropped this one (the
    harness terminates every connection now and then, its own included)."""
    for attempt in range(attempts):
        try:
            return call()
        except (OperationalError, InterfaceError):
            connection.close()
            if attempt == attempts - 1:
                raise
            time.sleep(0.5)
    raise AssertionError("unreachable")


class Api:
    """HTTP/1.1 to the web processes with a token; retried while they are down, and after
    the wait a 503's Retry-After asks for."""

    def __init__(self, ports: list[int], token: str, *, patience_s: float = 60.0) -> None:
        self.ports = ports
        self.token = token
        self.patience_s = patience_s
        self.answers: dict[int, int] = {}  # status -> count
        self.lock = threading.Lock()

    def call(self, method: str, path: str, body: Any = None, key: str = "") -> tuple[int, Any]:
        headers = {"Authorization": f"Token {self.token}", "Content-Type": "application/json"}
        if key:
            headers["Idempotency-Key"] = key
        payload = json.dumps(body).encode() if body is not None else None
        deadline = time.monotonic() + self.patience_s
        attempt = 0
        while True:
            port = self.ports[attempt % len(self.ports)]
            attempt += 1
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                conn.request(method, path, payload, headers)
                response = conn.getresponse()
                data = response.read()
                conn.close()
            except (OSError, http.client.HTTPException):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
                continue
            with self.lock:
                self.answers[response.status] = self.answers.get(response.status, 0) + 1
            retry_after = response.getheader("Retry-After")
            if response.status == 503 and retry_after and time.monotonic() < deadline:
                # Away for a moment (the database): try again when told, as a client should.
                time.sleep(min(float(retry_after), 5.0))
                continue
            try:
                return response.status, json.loads(data) if data else None
            except ValueError:
                return response.status, data[:200].decode(errors="replace")


class Load(threading.Thread):
    """Bursts, one after the other until stopped: compose `burst`, fail a GPU of some ready
    compositions (heal burst), decompose the oldest so that about `keep` stay composed."""

    def __init__(
        self,
        *,
        member: Api,
        operator: Api,
        manager: str,
        fabric: str,
        burst: int,
        keep: int,
        seed: int,
    ) -> None:
        super().__init__(name="load", daemon=True)
        self.member, self.operator = member, operator
        self.manager, self.fabric = manager, fabric
        self.burst, self.keep = burst, keep
        self.random = random.Random(seed)
        self.stopping = threading.Event()
        self.counts = {"compose": 0, "decompose": 0, "heal": 0, "faults": 0, "refused": 0}
        self.refusals: list[str] = []
        self.failed_devices: list[str] = []
        self.errors: list[str] = []
        self.round = 0

    def run(self) -> None:
        pool = ThreadPoolExecutor(4, thread_name_prefix="client")
        try:
            while not self.stopping.is_set():
                self.round += 1
                self._driver_faults()
                ids = self._compose_burst(pool)
                self._settle(ids, 15)
                self._heal_burst(pool)
                self._decompose_burst(pool)
        except Exception as exc:
            self.errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            pool.shutdown(wait=True)
            connection.close()

    def _refused(self, what: str, status: int, body: Any) -> None:
        self.counts["refused"] += 1
        if len(self.refusals) < 20:
            self.refusals.append(f"{what}: {status} {str(body)[:160]}")

    def _driver_faults(self) -> None:
        """Every third round binds time out; every fourth, unbinds fail transiently."""
        fabric = db_retry(lambda: store.fabric_get(self.fabric))
        if self.round % 3 == 0:
            db_retry(
                lambda: store.operation_fault_set(
                    fabric=fabric, operation="bind", mode="timeout", count=2
                )
            )
            self.counts["faults"] += 1
        if self.round % 4 == 0:
            db_retry(
                lambda: store.operation_fault_set(
                    fabric=fabric, operation="unbind", mode="transient", count=2
                )
            )
            self.counts["faults"] += 1

    def _compose_burst(self, pool: ThreadPoolExecutor) -> list[int]:
        def compose(n: int) -> int | None:
            name = f"chaos-{self.round}-{n}"
            status, body = self.member.call(
                "POST", "/api/v1/compositions/", {"name": name, "spec": SPEC}, key=name
            )
            if status != 202:
                self._refused("compose", status, body)
                return None
            self.counts["compose"] += 1
            return int(body["id"])

        return [pk for pk in pool.map(compose, range(self.burst)) if pk]

    def _settle(self, ids: list[int], limit_s: float) -> None:
        """Wait until `ids` are settled, at most `limit_s` (a stuck one is not waited for)."""
        deadline = time.monotonic() + limit_s
        while ids and time.monotonic() < deadline and not self.stopping.is_set():
            close_old_connections()
            busy = db_retry(
                lambda: Composition.objects.filter(pk__in=ids, state__in=TRANSITIONAL).exists()
            )
            if not busy:
                return
            time.sleep(0.5)

    def _ready(self) -> list[int]:
        return db_retry(
            lambda: list(
                Composition.objects.filter(state=S.READY, name__startswith="chaos-")
                .order_by("pk")
                .values_list("pk", flat=True)
            )
        )

    def _heal_burst(self, pool: ThreadPoolExecutor) -> None:
        """Recover the GPUs failed last time, then fail one GPU of a few ready compositions."""
        for name in self.failed_devices:
            self._fault(name, "recover")
        self.failed_devices = []
        ready = self._ready()
        chosen = self.random.sample(ready, min(len(ready), max(1, self.burst // 3)))
        names = db_retry(
            lambda: [
                name
                for pk in chosen
                for name in Allocation.objects.filter(
                    composition_id=pk, released_at__isnull=True, device__kind="gpu"
                ).values_list("device__name", flat=True)[:1]
            ]
        )
        list(pool.map(lambda name: self._fault(name, "fail"), names))
        self.failed_devices = names
        self.counts["heal"] += len(names)
        self._settle(chosen, 10)

    def _fault(self, device: str, action: str) -> None:
        status, body = self.operator.call(
            "POST",
            "/api/v1/simulator/faults/",
            {"target_type": "device", "target_id": device, "action": action,
             "manager": self.manager},
        )  # fmt: skip
        if status not in (200, 202):
            self._refused(f"fault {action}", status, body)

    def _decompose_burst(self, pool: ThreadPoolExecutor) -> None:
        composed = db_retry(
            lambda: list(
                Composition.objects.filter(
                    state__in=(S.READY, S.DEGRADED), name__startswith="chaos-"
                )
                .order_by("pk")
                .values_list("pk", flat=True)
            )
        )
        victims = composed[: max(0, len(composed) - self.keep)]

        def decompose(pk: int) -> int | None:
            status, body = self.member.call(
                "POST", f"/api/v1/compositions/{pk}/decompose/", {}, key=f"d-{pk}"
            )
            if status != 202:
                self._refused("decompose", status, body)
                return None
            self.counts["decompose"] += 1
            return pk

        done = [pk for pk in pool.map(decompose, victims) if pk]
        self._settle(done, 10)

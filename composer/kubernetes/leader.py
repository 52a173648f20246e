"""Leader election over a `coordination.k8s.io/v1` Lease, as client-go's leaderelection
does it: one replica holds the Lease and renews it; the others wait until it has not been
renewed for its duration, then one of them takes it over (the API server's
resourceVersion decides who, when several try at once). Only the leader reconciles, so two
replicas never compose the same claim at the same time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from composer.kubernetes.api import Conflict, KubeApi

__all__ = ["Elector"]

_STAMP = "%Y-%m-%dT%H:%M:%S.%fZ"  # MicroTime, as the API writes it


@dataclass
class Elector:
    """Whether `identity` leads, tried once per pass (`lead`)."""

    api: KubeApi
    namespace: str
    name: str
    identity: str
    duration_s: int = 15
    clock: Callable[[], datetime] = timezone.now

    def lead(self) -> bool:
        """Acquire or renew the Lease; True while this replica holds it."""
        now = self.clock()
        lease = self.api.lease_get(self.namespace, self.name)
        try:
            if lease is None:
                self.api.lease_create(self.namespace, self._body(None, now, now, 0))
                return True
            spec = lease.get("spec") or {}
            holder = spec.get("holderIdentity")
            if holder == self.identity:
                acquired = _parse(spec.get("acquireTime")) or now
                transitions = int(spec.get("leaseTransitions") or 0)
                self.api.lease_replace(
                    self.namespace, self._body(lease, acquired, now, transitions)
                )
                return True
            renewed = _parse(spec.get("renewTime"))
            duration = timedelta(seconds=int(spec.get("leaseDurationSeconds") or self.duration_s))
            if holder and renewed is not None and renewed + duration > now:
                return False  # another replica leads and is alive
            transitions = int(spec.get("leaseTransitions") or 0) + 1
            self.api.lease_replace(self.namespace, self._body(lease, now, now, transitions))
            return True
        except Conflict:
            return False  # another replica wrote it first: it leads this round

    def _body(
        self, lease: dict[str, Any] | None, acquired: datetime, renewed: datetime, transitions: int
    ) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if lease is not None:
            metadata["resourceVersion"] = (lease.get("metadata") or {}).get("resourceVersion")
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": metadata,
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": self.duration_s,
                "acquireTime": acquired.strftime(_STAMP),
                "renewTime": renewed.strftime(_STAMP),
                "leaseTransitions": transitions,
            },
        }


def _parse(value: Any) -> datetime | None:
    if not value:
        return None
    text = str(value).replace("Z", "+00:00")
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None

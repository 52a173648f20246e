"""Leader election over a `coordination.k8s.io/v1` Lease, as client-go's leaderelection
does it: one replica holds the Lease and renews it; the others wait until it has not been
renewed for its duration, then one of them takes it over (the API server's
resourceVersion decides who, when several try at once). Only the leader reconciles, so two
replicas never compose the same claim at the same time.

Expiry is judged on this replica's own clock, from when it last saw the Lease change (its
holder or renew time), never by comparing the holder's renewTime with the local clock: two
machines' clocks may disagree by more than a Lease's duration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
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
    # What the Lease said when this replica last saw it change, and when (its own clock).
    _seen: tuple[Any, Any] | None = field(default=None, init=False, repr=False)
    _seen_at: datetime | None = field(default=None, init=False, repr=False)

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
            record = (holder, spec.get("renewTime"))
            if record != self._seen or self._seen_at is None:
                self._seen, self._seen_at = record, now
            duration = timedelta(seconds=int(spec.get("leaseDurationSeconds") or self.duration_s))
            if holder and self._seen_at + duration > now:
                return False  # another replica leads and was alive within the duration
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

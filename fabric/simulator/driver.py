"""The simulated fabric manager's driver: a first-class driver whose "hardware" is the database.

It behaves like a real manager where it matters to the console: every call takes time,
calls can fail transiently, permanently or by timing out (injected per operation), binds
are serialised per device by a row lock so that many workers cannot double-bind, and
injected element faults are reported on the element they were injected on, as a real
manager reports "enclosure failed": what they take with them the console derives from its
own topology (fabric.health.propagation). The manager's own rule still follows them: it
refuses to bind a device or host that is failed or unpowered. The sensor values of its
health readings are modelled in `fabric.simulator.metrics`.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import fields as dataclass_fields
from typing import Any, TypeVar

from django.apps import apps
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Sum

from fabric.drivers.base import (
    Binding,
    DeviceInfo,
    DriverError,
    DriverTimeout,
    EnclosureInfo,
    HealthReading,
    HostInfo,
    Inventory,
    LinkInfo,
    PortInfo,
    PowerFeedInfo,
    ProbeReport,
    RackInfo,
    SwitchInfo,
)
from fabric.kinds import is_sliced
from fabric.simulator import store
from fabric.simulator.metrics import element_metrics
from fabric.simulator.models import SimulatedBinding, SimulatedElement, SimulatedFabric
from fabric.simulator.propagation import CRITICAL, Effective, effective_health, own_health

logger = logging.getLogger(__name__)

Kind = SimulatedElement.Kind
_INFO_BY_KIND: dict[str, type[Any]] = {
    Kind.RACK: RackInfo,
    Kind.POWER_FEED: PowerFeedInfo,
    Kind.SWITCH: SwitchInfo,
    Kind.HOST: HostInfo,
    Kind.ENCLOSURE: EnclosureInfo,
    Kind.DEVICE: DeviceInfo,
    Kind.PORT: PortInfo,
    Kind.LINK: LinkInfo,
}
_FIELD_NAMES: dict[type[Any], frozenset[str]] = {
    cls: frozenset(f.name for f in dataclass_fields(cls)) for cls in _INFO_BY_KIND.values()
}

InfoT = TypeVar("InfoT")


def sleep(seconds: float) -> None:
    """Wait out a simulated latency; a module function so tests can observe or patch it."""
    if seconds > 0:
        time.sleep(seconds)


def _info(cls: type[InfoT], element: SimulatedElement, effective: Effective, **extra: Any) -> InfoT:
    """Build a reported dataclass from an element's stored data, ignoring unknown keys."""
    names = _FIELD_NAMES[cls]
    kwargs = {key: value for key, value in (element.data or {}).items() if key in names}
    kwargs.update(external_id=element.external_id, health=effective.health, **extra)
    return cls(**kwargs)


class SimulatedDriver:
    """Driver for a simulated fabric manager whose state is in the Simulated* tables.

    `settings["fabric"]` names the SimulatedFabric (e.g. {"fabric": "demo"}); the endpoint
    is ignored. Construction is free: nothing is read until an operation is called, and
    every operation reads the current state, so instances may be short-lived.
    """

    def __init__(
        self,
        *,
        endpoint: str = "",
        settings: Mapping[str, Any] | None = None,
        credentials: Mapping[str, str] | None = None,
    ) -> None:
        # `credentials` is accepted like every driver's; the simulated manager asks none.
        if not apps.is_installed("fabric.simulator"):
            raise DriverError(
                "Driver 'simulated' is not installed here: this console runs without the "
                "simulator (COMPOSER_SIMULATOR=0).",
                permanent=True,
            )
        self.endpoint = endpoint
        self.settings = dict(settings or {})
        self.fabric_name = str(self.settings.get("fabric") or "")
        self._feeds: dict[str, str] = {}  # element -> the power feed its row named last

    def __repr__(self) -> str:
        return f"SimulatedDriver(fabric={self.fabric_name!r})"

    # -- the operation envelope: latency, injected operation faults -------------------------

    def _begin(self, operation: str) -> tuple[SimulatedFabric, bool]:
        """Start an operation: consume an injected fault, wait the latency.

        Returns the fabric and whether the call must end in a timeout after doing its work
        (the reply was "lost"). Raises DriverError for injected transient/permanent faults.
        """
        if not self.fabric_name:
            raise DriverError(
                'The simulated driver needs settings {"fabric": "<name>"}.', permanent=True
            )
        fabric = store.fabric_get(self.fabric_name)
        mode = store.operation_fault_take(fabric, operation)
        if mode == "timeout":
            sleep(store.latency_seconds(fabric, "timeout"))
            return fabric, True
        sleep(store.latency_seconds(fabric, operation))
        if mode == "transient":
            raise DriverError(
                f"Simulated {operation} failed: fabric manager busy (injected).", permanent=False
            )
        if mode == "permanent":
            raise DriverError(
                f"Simulated {operation} refused by the fabric manager (injected).", permanent=True
            )
        return fabric, False

    @staticmethod
    def _timed_out(operation: str) -> DriverTimeout:
        return DriverTimeout(
            f"Simulated {operation} timed out (injected); the operation may have completed."
        )

    # -- reads --------------------------------------------------------------------------

    def _elements(self, fabric: SimulatedFabric) -> list[SimulatedElement]:
        return list(
            SimulatedElement.objects.filter(fabric=fabric, is_present=True)
            .only("kind", "external_id", "data", "fault", "updated_at")
            .order_by("kind", "external_id")
        )

    def discover(self) -> Inventory:
        """Report every present element with its own health (its injected fault alone).

        Links report their state (up / degraded / down) from their own fault.
        Raises DriverError on injected faults or a missing fabric.
        """
        fabric, timed_out = self._begin("discover")
        elements = self._elements(fabric)
        buckets: dict[str, list[Any]] = {kind: [] for kind in _INFO_BY_KIND}
        for element in elements:
            cls = _INFO_BY_KIND.get(element.kind)
            if cls is None:
                continue
            eff = own_health(element)
            extra = {"state": eff.link_state} if element.kind == Kind.LINK else {}
            buckets[element.kind].append(_info(cls, element, eff, **extra))
        if timed_out:
            raise self._timed_out("discover")
        inventory = Inventory(
            racks=tuple(buckets[Kind.RACK]),
            power_feeds=tuple(buckets[Kind.POWER_FEED]),
            switches=tuple(buckets[Kind.SWITCH]),
            hosts=tuple(buckets[Kind.HOST]),
            enclosures=tuple(buckets[Kind.ENCLOSURE]),
            devices=tuple(buckets[Kind.DEVICE]),
            ports=tuple(buckets[Kind.PORT]),
            links=tuple(buckets[Kind.LINK]),
        )
        logger.debug("simulated fabric %s discovered %s", fabric.name, inventory.counts())
        return inventory

    def probe(self) -> ProbeReport:
        """A discovery, reported as the connection test: the simulated manager has no
        sign-in; it binds devices one by one and reports every element's latency."""
        inventory = self.discover()
        return ProbeReport(
            service=f"simulated fabric {self.fabric_name}",
            counts=inventory.counts(),
            composition_methods=("bind",),
        )

    def bindings(self) -> list[Binding]:
        """Every binding the simulated manager holds."""
        fabric, timed_out = self._begin("bindings")
        result = [
            Binding(
                binding_id=b.binding_id,
                device_id=b.device_id,
                host_id=b.host_id,
                size_gib=b.size_gib,
            )
            for b in store.bindings_for(fabric)
        ]
        if timed_out:
            raise self._timed_out("bindings")
        return result

    def health(self) -> list[HealthReading]:
        """A reading for every present element: its own health and sensor metrics.

        Two queries (elements, bound devices) whatever the size: polls run every few seconds.
        """
        fabric, timed_out = self._begin("health")
        elements = self._elements(fabric)
        bound = set(
            SimulatedBinding.objects.filter(fabric=fabric).values_list("device_id", flat=True)
        )
        ports = {e.external_id: e.data or {} for e in elements if e.kind == Kind.PORT}
        now = time.time()
        readings = []
        for element in elements:
            eff = own_health(element)
            if element.kind == Kind.LINK:
                state = eff.link_state
            else:
                state = "unavailable" if eff.health == CRITICAL else "enabled"
            # The model's choices and own_health keep kind and health within the
            # reading's literals; the columns are typed str.
            readings.append(
                HealthReading(
                    target_kind=element.kind,  # type: ignore[arg-type]
                    external_id=element.external_id,
                    health=eff.health,  # type: ignore[arg-type]
                    state=state,
                    detail=eff.detail,
                    metrics=element_metrics(
                        element, eff, bound=element.external_id in bound, ports=ports, now=now
                    ),
                )
            )
        if timed_out:
            raise self._timed_out("health")
        return readings

    # -- writes -------------------------------------------------------------------------

    def _lock_device(self, fabric: SimulatedFabric, device_id: str) -> SimulatedElement:
        """Lock the device's row for the rest of the transaction: binds of it serialise here.

        PostgreSQL honours SELECT ... FOR UPDATE. SQLite ignores it, so there a write on the
        row takes the database's write lock first; either way a second worker binding the
        same device waits, then sees the first one's binding.
        """
        rows = SimulatedElement.objects.filter(
            fabric=fabric, kind=Kind.DEVICE, external_id=device_id, is_present=True
        )
        if connection.vendor == "sqlite":
            rows.update(fault=F("fault"))
        device = rows.select_for_update().first()
        if device is None:
            raise DriverError(f"Unknown device {device_id!r}.", permanent=True)
        return device

    def bind(self, *, device_id: str, host_id: str, size_gib: int | None = None) -> Binding:
        """Bind a whole device, or a `size_gib` slice of a CXL memory device, to a host.

        Idempotent: the same device (same slice size) on the same host returns the binding
        that exists. A host holds at most one slice of a given memory device; resizing is
        unbind + bind. Raises a permanent DriverError when the device or host is unknown or
        failed, the device is bound elsewhere, or the slice does not fit.
        """
        fabric, timed_out = self._begin("bind")
        if size_gib is not None and size_gib <= 0:
            raise DriverError(f"size_gib must be positive; got {size_gib}.", permanent=True)
        try:
            with transaction.atomic():
                device = self._lock_device(fabric, device_id)
                binding = self._bind_locked(fabric, device, host_id, size_gib)
        except IntegrityError as exc:
            # The database constraint caught what the lock should have prevented.
            raise DriverError(f"Device {device_id!r} is already bound.", permanent=True) from exc
        if timed_out:
            raise self._timed_out("bind")
        return binding

    def _host_and_health(
        self, fabric: SimulatedFabric, device: SimulatedElement, host_id: str
    ) -> tuple[SimulatedElement, dict[str, Effective]]:
        """The host, and the effective health of it and of `device`.

        Propagation needs the device's enclosure and that enclosure's power feed, and the
        host's power feed. Every row is read fresh; which feed powers what is remembered
        by this instance (one job), so its later binds read the host and all those
        ancestors in one plain query, and a feed it has not seen yet costs a second one.
        """
        enclosure = device.data.get("enclosure_id") or ""
        wanted = {host_id, enclosure, device.data.get("power_feed_id") or ""}
        wanted |= {self._feeds.get(host_id, ""), self._feeds.get(enclosure, "")}
        wanted.discard("")
        rows = {r.external_id: r for r in self._rows(fabric, wanted)}
        for element in (host_id, enclosure):
            if element in rows:
                self._feeds[element] = rows[element].data.get("power_feed_id") or ""
        missing = {self._feeds.get(e, "") for e in (host_id, enclosure)} - set(rows) - {""}
        if missing:
            rows.update((r.external_id, r) for r in self._rows(fabric, missing))
        host = rows.get(host_id)
        if host is None or host.kind != Kind.HOST or not host.is_present:
            raise DriverError(f"Unknown host {host_id!r}.", permanent=True)
        effective = effective_health([device, *rows.values()])
        return host, {e.external_id: effective[e.external_id] for e in (device, host)}

    @staticmethod
    def _rows(fabric: SimulatedFabric, external_ids: set[str]) -> list[SimulatedElement]:
        return list(SimulatedElement.objects.filter(fabric=fabric, external_id__in=external_ids))

    def _bind_locked(
        self,
        fabric: SimulatedFabric,
        device: SimulatedElement,
        host_id: str,
        size_gib: int | None,
    ) -> Binding:
        existing = list(
            SimulatedBinding.objects.filter(fabric=fabric, device_id=device.external_id)
        )
        partitionable = is_sliced(str(device.data.get("kind")))
        if size_gib is not None and not partitionable:
            raise DriverError(
                f"Device {device.external_id!r} ({device.data.get('kind')}) is not partitionable; "
                "bind it whole (size_gib=None).",
                permanent=True,
            )
        for other in existing:
            if other.host_id == host_id:
                if other.size_gib == size_gib:
                    return _binding(other)
                raise DriverError(
                    f"Host {host_id!r} already holds a {other.size_gib or 'whole'}"
                    f"{' GiB' if other.size_gib else ''} binding of {device.external_id!r}; "
                    "unbind it before binding a different size.",
                    permanent=True,
                )
        if existing and (size_gib is None or any(b.size_gib is None for b in existing)):
            holders = sorted({b.host_id for b in existing})
            raise DriverError(
                f"Device {device.external_id!r} is already bound to {', '.join(holders)}.",
                permanent=True,
            )
        if size_gib is not None:
            capacity = int(device.data.get("memory_gib") or 0)
            used = (
                SimulatedBinding.objects.filter(
                    fabric=fabric, device_id=device.external_id
                ).aggregate(total=Sum("size_gib"))["total"]
                or 0
            )
            if used + size_gib > capacity:
                raise DriverError(
                    f"Device {device.external_id!r} has {capacity - used} GiB free of {capacity} "
                    f"GiB; cannot bind {size_gib} GiB.",
                    permanent=True,
                )
        host, effective = self._host_and_health(fabric, device, host_id)
        for element in (device, host):
            eff = effective[element.external_id]
            if eff.health == CRITICAL:
                raise DriverError(
                    f"{element.kind.capitalize()} {element.external_id!r} is failed "
                    f"({eff.detail}).",
                    permanent=True,
                )
        row = SimulatedBinding.objects.create(
            fabric=fabric,
            binding_id=f"b-{uuid.uuid4().hex[:16]}",
            device_id=device.external_id,
            host_id=host.external_id,
            size_gib=size_gib,
        )
        logger.info(
            "simulated fabric %s bound %s to %s%s",
            fabric.name,
            device.external_id,
            host.external_id,
            f" ({size_gib} GiB)" if size_gib else "",
        )
        return _binding(row)

    def unbind(self, *, binding_id: str) -> None:
        """Remove a binding; an unknown id is not an error (it may already be gone)."""
        fabric, timed_out = self._begin("unbind")
        deleted, _ = SimulatedBinding.objects.filter(fabric=fabric, binding_id=binding_id).delete()
        if deleted:
            logger.info("simulated fabric %s unbound %s", fabric.name, binding_id)
        if timed_out:
            raise self._timed_out("unbind")


def _binding(row: SimulatedBinding) -> Binding:
    return Binding(
        binding_id=row.binding_id,
        device_id=row.device_id,
        host_id=row.host_id,
        size_gib=row.size_gib,
    )

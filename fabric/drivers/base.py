"""The one interface every fabric driver implements, and the shapes of what drivers report.

A driver turns a fabric manager's own API (Redfish, a vendor REST API, the simulated
manager) into these frozen dataclasses. Nothing above the driver layer ever sees a vendor
payload: inventory sync, health polling and the composition jobs talk only in these terms.

References between reported objects use the manager's external ids, never console primary
keys: a driver knows nothing about the console's tables. Inventory sync resolves them.

A driver reports what the manager says and nothing more: each element's own health, not
what a fault takes with it (the console derives that from the topology it holds:
fabric.health.propagation). Racks, power feeds and link latency are optional: a manager
that has no racks or power feeds reports none (and elements name none), a switch, host or
enclosure whose place in its rack is not given reports `rack_unit` None (the lowest unit it
occupies, counted from 1 at the bottom, with `height_u` units above it), and a link whose
latency the manager does not give reports `latency_ns` 0 (or `attributes
["latency_reported"]` False); placement then estimates it from hop counts and says so.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

# Plain string literals rather than the Django TextChoices, so that the driver layer can be
# imported and type-checked without Django; the values are the same as fabric.choices.
HealthValue = Literal["ok", "warning", "critical", "unknown"]
OwnerKind = Literal["switch", "host", "enclosure"]
TargetKind = Literal["rack", "power_feed", "switch", "host", "enclosure", "device", "port", "link"]

# One rack unit (EIA-310) in millimetres: how a height in mm (Redfish `HeightMm`) becomes units.
RACK_UNIT_MM = 44.45
# A rack's height where its manager does not give one.
DEFAULT_RACK_HEIGHT_U = 42


class DriverError(Exception):
    """A fabric manager refused or failed an operation.

    `permanent` says whether trying again can help: a timeout or a busy manager is
    transient (the job retries with back-off), a refused request (device already bound,
    unknown host, not enough capacity) is permanent (the job fails and rolls back).
    """

    def __init__(self, message: str, *, permanent: bool) -> None:
        super().__init__(message)
        self.message = message
        self.permanent = permanent

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, permanent={self.permanent})"


class DriverTimeout(DriverError):
    """The manager did not answer in time. Transient; the operation may or may not have happened.

    Callers that bind must reconcile with `bindings()` after a timeout: the binding may
    exist even though the call failed.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, permanent=False)


@dataclass(frozen=True, slots=True)
class RackInfo:
    """A rack as the manager reports it; `height_u` its height in rack units
    (`DEFAULT_RACK_HEIGHT_U` where the manager does not say)."""

    external_id: str
    name: str
    location: str = ""
    height_u: int = DEFAULT_RACK_HEIGHT_U
    health: HealthValue = "unknown"
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PowerFeedInfo:
    """A power feed (PDU circuit); `rack_id` is the external id of the rack it supplies."""

    external_id: str
    name: str
    rack_id: str | None = None
    capacity_kw: float = 0.0
    health: HealthValue = "unknown"
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SwitchInfo:
    """A PCIe or CXL switch (`protocol` "pcie" | "cxl", `tier` "spine" | "leaf")."""

    external_id: str
    name: str
    protocol: str
    tier: str = "leaf"
    vendor: str = ""
    model: str = ""
    serial: str = ""
    firmware: str = ""
    rack_id: str | None = None
    power_feed_id: str | None = None
    rack_unit: int | None = None
    height_u: int = 1
    health: HealthValue = "unknown"
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HostInfo:
    """A compute node that compositions are built on."""

    external_id: str
    name: str
    vendor: str = ""
    model: str = ""
    serial: str = ""
    cores: int = 0
    memory_gib: int = 0
    rack_id: str | None = None
    power_feed_id: str | None = None
    rack_unit: int | None = None
    height_u: int = 1
    health: HealthValue = "unknown"
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EnclosureInfo:
    """A box of devices (`kind` one of fabric.choices.EnclosureKind)."""

    external_id: str
    name: str
    kind: str
    vendor: str = ""
    model: str = ""
    serial: str = ""
    slots: int = 0
    rack_id: str | None = None
    power_feed_id: str | None = None
    rack_unit: int | None = None
    height_u: int = 1
    health: HealthValue = "unknown"
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    """One poolable device (`kind` one of fabric.choices.DeviceKind) in an enclosure."""

    external_id: str
    name: str
    kind: str
    vendor: str = ""
    model: str = ""
    serial: str = ""
    firmware: str = ""
    enclosure_id: str | None = None
    slot: int = 0
    memory_gib: int = 0
    capacity_gb: int = 0
    health: HealthValue = "unknown"
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PortInfo:
    """A port owned by exactly one switch, host or enclosure (`owner_kind`, `owner_id`)."""

    external_id: str
    name: str
    owner_kind: OwnerKind
    owner_id: str
    role: str
    number: int = 0
    lanes: int = 16
    speed_gts: float = 32.0
    health: HealthValue = "unknown"
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LinkInfo:
    """A link between two ports; `state` "up" | "degraded" | "down", bandwidth in GB/s.

    `latency_ns` 0 means the manager gives no latency for it (so does
    `attributes["latency_reported"]` False, whatever the figure): never a guess of the
    driver's; the console estimates it from hop counts where it needs one."""

    external_id: str
    a_port_id: str
    b_port_id: str
    latency_ns: int = 0
    bandwidth_gbps: float = 0.0
    state: str = "up"
    health: HealthValue = "unknown"
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Inventory:
    """Everything a manager reports in one discovery, in dependency order."""

    racks: tuple[RackInfo, ...] = ()
    power_feeds: tuple[PowerFeedInfo, ...] = ()
    switches: tuple[SwitchInfo, ...] = ()
    hosts: tuple[HostInfo, ...] = ()
    enclosures: tuple[EnclosureInfo, ...] = ()
    devices: tuple[DeviceInfo, ...] = ()
    ports: tuple[PortInfo, ...] = ()
    links: tuple[LinkInfo, ...] = ()

    def counts(self) -> dict[str, int]:
        """How many of each kind; for logs and job results."""
        return {
            "racks": len(self.racks),
            "power_feeds": len(self.power_feeds),
            "switches": len(self.switches),
            "hosts": len(self.hosts),
            "enclosures": len(self.enclosures),
            "devices": len(self.devices),
            "ports": len(self.ports),
            "links": len(self.links),
        }

    def dangling_references(self) -> Iterator[str]:
        """Yield a description of every reference to an external id that was not reported.

        A consistent report yields nothing; the driver contract tests assert that, and
        inventory sync logs what it yields (and stores the reference as empty).
        """
        racks = {r.external_id for r in self.racks}
        feeds = {f.external_id for f in self.power_feeds}
        owners: dict[str, set[str]] = {
            "switch": {s.external_id for s in self.switches},
            "host": {h.external_id for h in self.hosts},
            "enclosure": {e.external_id for e in self.enclosures},
        }
        ports = {p.external_id for p in self.ports}
        for feed in self.power_feeds:
            if feed.rack_id is not None and feed.rack_id not in racks:
                yield f"power feed {feed.external_id}: unknown rack {feed.rack_id}"
        for kind, items in (
            ("switch", self.switches),
            ("host", self.hosts),
            ("enclosure", self.enclosures),
        ):
            for item in items:
                if item.rack_id is not None and item.rack_id not in racks:
                    yield f"{kind} {item.external_id}: unknown rack {item.rack_id}"
                if item.power_feed_id is not None and item.power_feed_id not in feeds:
                    yield f"{kind} {item.external_id}: unknown power feed {item.power_feed_id}"
        for device in self.devices:
            if device.enclosure_id is not None and device.enclosure_id not in owners["enclosure"]:
                yield f"device {device.external_id}: unknown enclosure {device.enclosure_id}"
        for port in self.ports:
            if port.owner_id not in owners.get(port.owner_kind, set()):
                yield f"port {port.external_id}: unknown {port.owner_kind} {port.owner_id}"
        for link in self.links:
            for end in (link.a_port_id, link.b_port_id):
                if end not in ports:
                    yield f"link {link.external_id}: unknown port {end}"


@dataclass(frozen=True, slots=True)
class Binding:
    """A device bound to a host by the manager.

    `size_gib` is None for a whole device, or the size of a CXL memory slice.
    """

    binding_id: str
    device_id: str
    host_id: str
    size_gib: int | None = None


@dataclass(frozen=True, slots=True)
class HealthReading:
    """The health of one element at one moment, as the manager reports it.

    `state` is the element's operational state in the manager's words ("up", "down",
    "enabled"...), `detail` says why it is not ok (e.g. "power feed pdu-a-1 failed"),
    `metrics` carries numbers for the health rules (fabric.health.conditions), by these names
    when the manager has them: temperature_c; correctable_errors, uncorrectable_errors,
    poison_count, link_errors, link_retrains (counts in the manager's current period);
    link_width and link_width_max (lanes), link_speed_gts and link_speed_max_gts;
    power_on (1 or 0); utilisation_pct. Any other number (power_w, ...) is stored as is.
    """

    target_kind: TargetKind
    external_id: str
    health: HealthValue
    state: str = ""
    detail: str = ""
    metrics: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ProbeReport:
    """What a connection test found: the manager answered, signed in, and reports this.

    `service` names what answered in the manager's words ("Redfish 1.17.0, Contoso
    Composer 2.3", "simulated fabric demo"); `counts` is `Inventory.counts()` of a
    discovery; `composition_methods` the ways it composes that the driver will use (for
    Redfish: "expandable", "specific", "compose-action"); `notes` anything an operator
    should know before relying on it (no latency reported, no power feeds, TLS off...).
    """

    service: str
    counts: Mapping[str, int]
    composition_methods: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


Credentials = Mapping[str, str]
"""A manager's secrets as its driver receives them, decrypted: e.g. {"username": ...,
"password": ...} or {"token": ...}. Only the driver ever sees them; never logged."""


@runtime_checkable
class FabricDriver(Protocol):
    """What the console needs from a fabric manager. One instance serves one manager.

    Implementations are constructed as `Driver(endpoint=..., settings=...,
    credentials=...)` by `fabric.drivers.registry.get_driver`, must be safe to construct
    per call (no connection is opened in `__init__`), and raise `DriverError` for every failure the
    caller should handle; anything else is a bug. A compose job calls `bind` for several
    devices at once from threads of its own (COMPOSER_BIND_PARALLELISM), on one instance:
    it must be safe to call so.
    """

    def discover(self) -> Inventory:
        """Report everything the manager knows: racks down to links, each with its own
        current health as the manager reports it.

        Racks, power feeds and link latency only where the manager has them. Faults are not
        propagated: an enclosure that failed is reported failed, its devices as the manager
        reads them; the console derives the rest. Read-only. Raises DriverError when the
        manager cannot be read.
        """
        ...

    def bind(self, *, device_id: str, host_id: str, size_gib: int | None = None) -> Binding:
        """Bind a device (or a `size_gib` slice of a CXL memory device) to a host.

        Idempotent: binding the same device to the same host again returns the existing
        binding. Raises a permanent DriverError when the device is bound to another host,
        is failed or unknown, or a memory slice does not fit the free capacity.
        """
        ...

    def unbind(self, *, binding_id: str) -> None:
        """Remove a binding. Idempotent: an unknown binding id is not an error."""
        ...

    def bindings(self) -> list[Binding]:
        """Every binding the manager currently holds; the truth that reconciliation uses."""
        ...

    def health(self) -> list[HealthReading]:
        """A health reading for every element the manager can read, with its own health
        and metrics: the raw readings. Not propagated: a manager that reports only
        "enclosure failed" (or "power feed failed", "switch failed", ...) is enough, since the
        console's health poll derives what the fault takes with it from the topology it holds
        (fabric.health.propagation) and gives an element it could not read what it inherits.
        Read-only. Raises DriverError when the manager cannot be read."""
        ...

    def probe(self) -> ProbeReport:
        """Sign in and read enough to say what the manager is and what it holds: the
        console's "Test connection". Raises DriverError saying exactly what failed
        (unreachable, refused credentials, a certificate that does not verify, not a
        service this driver speaks)."""
        ...

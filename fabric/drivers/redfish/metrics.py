"""Numbers for the health rules from a Redfish service's metrics resources, where it has them.

Why apart from the walk: discovery needs none of this, and a poll reads it only for the
elements it reports. Every read follows a link the element itself gives (`Metrics`:
ProcessorMetrics, MemoryMetrics, DriveMetrics, PortMetrics...; `EnvironmentMetrics`:
temperature and power), never a guessed path; an element that links to neither gets no
metrics (an empty mapping, nothing invented), apart from what its own resource states (a
port's `ActiveWidth` and `Width`). The reads are bounded: at most `max_reads` per poll
(setting `metrics_max_reads`), and an element linking to both resources is read once with
`$expand` where the service root advertises it.

Names are the metric vocabulary of fabric.drivers.base.HealthReading.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from fabric.drivers.base import DriverError
from fabric.drivers.redfish.mapping import rid
from fabric.drivers.redfish.reader import Reader, Resource, ref
from fabric.drivers.redfish.walk import Snapshot

logger = logging.getLogger(__name__)

DEFAULT_MAX_READS = 256  # per poll: a few hundred elements, far under a poll's time limit
_LINKS = ("Metrics", "EnvironmentMetrics")


def max_reads_of(settings: Mapping[str, Any]) -> int:
    """The setting `metrics_max_reads` (0 turns metrics reads off)."""
    value = settings.get("metrics_max_reads", DEFAULT_MAX_READS)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DriverError(
            f"Setting metrics_max_reads must be a whole number, 0 or more; got {value!r}.",
            permanent=True,
        )
    return int(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _reading(value: Any) -> float | None:
    """A Sensor excerpt's `Reading` ({"Reading": 41.5}), or a plain number."""
    if isinstance(value, Mapping):
        return _number(value.get("Reading"))
    return _number(value)


def _mapping(value: Any) -> Mapping[str, Any]:
    """`value` where it is an object, else nothing: a service's malformed property (a string
    or a list where Redfish has an object) leaves its numbers out, not the poll failed."""
    return value if isinstance(value, Mapping) else {}


def _sum(*values: Any) -> float | None:
    numbers = [n for n in (_number(v) for v in values) if n is not None]
    return sum(numbers) if numbers else None


def _put(out: dict[str, float], name: str, value: float | None) -> None:
    if value is not None and name not in out:
        out[name] = value


def from_resource(resource: Mapping[str, Any]) -> dict[str, float]:
    """The numbers one metrics resource (or an element itself) states, by our names.

    EnvironmentMetrics: TemperatureCelsius, PowerWatts. ProcessorMetrics: BandwidthPercent,
    error counts of its cache and cores, PCIeErrors. MemoryMetrics: CurrentPeriod ECC
    counts. DriveMetrics: I/O error counts, NVMe SMART temperature. PortMetrics (and
    PCIeErrors anywhere): link errors and recoveries. A Port: ActiveWidth and Width.
    """
    out: dict[str, float] = {}
    _put(out, "temperature_c", _reading(resource.get("TemperatureCelsius")))
    _put(out, "power_w", _reading(resource.get("PowerWatts")))
    _put(out, "power_w", _number(resource.get("ConsumedPowerWatt")))
    _put(out, "utilisation_pct", _number(resource.get("BandwidthPercent")))
    period = _mapping(resource.get("CurrentPeriod"))
    cache = _mapping(_mapping(resource.get("CacheMetricsTotal")).get("CurrentPeriod"))
    _put(
        out,
        "correctable_errors",
        _sum(
            period.get("CorrectableECCErrorCount"),
            cache.get("CorrectableECCErrorCount"),
            resource.get("CorrectableCoreErrorCount"),
            resource.get("CorrectableIOReadErrorCount"),
            resource.get("CorrectableIOWriteErrorCount"),
        ),
    )
    _put(
        out,
        "uncorrectable_errors",
        _sum(
            period.get("UncorrectableECCErrorCount"),
            cache.get("UncorrectableECCErrorCount"),
            resource.get("UncorrectableCoreErrorCount"),
            resource.get("UncorrectableIOReadErrorCount"),
            resource.get("UncorrectableIOWriteErrorCount"),
        ),
    )
    smart = _mapping(resource.get("NVMeSMART"))
    _put(out, "temperature_c", _number(smart.get("CompositeTemperatureCelsius")))
    pcie = _mapping(resource.get("PCIeErrors"))
    _put(
        out,
        "link_errors",
        _sum(
            pcie.get("CorrectableErrorCount"),
            pcie.get("NonFatalErrorCount"),
            pcie.get("FatalErrorCount"),
        ),
    )
    _put(out, "link_retrains", _number(pcie.get("L0ToRecoveryCount")))
    if str(resource.get("@odata.type") or "").startswith("#Port."):
        _put(out, "link_width", _number(resource.get("ActiveWidth")))
        _put(out, "link_width_max", _number(resource.get("Width")))
    return out


def elements_of(snap: Snapshot) -> list[tuple[str, dict[str, Any]]]:
    """Every element's own resource by its id (the readings' external ids)."""
    resources = [
        *snap.chassis,
        *snap.systems,
        *(switch for _, switch in snap.switches),
        *(port for ports in snap.switch_ports.values() for port in ports),
        *(port for ports in snap.owned_ports.values() for port in ports),
        *(r for _, r in (*snap.processors, *snap.drives, *snap.network, *snap.pcie_devices)),
        *(r for _, r in snap.memory_domains),
    ]
    return list({rid(r): r for r in resources if rid(r)}.items())


class MetricsReader:
    """Reads the metrics of a poll's elements through one reader, at most `max_reads`.

    A metrics read that fails (5xx, a 400 on `$expand`, a timeout) leaves that element
    without those numbers and the poll goes on: its Status readings are what matter most.
    After MAX_FAILURES failures in a row the rest are not asked for this poll, so that a
    service that stopped answering cannot hold a poll for `max_reads` timeouts."""

    MAX_FAILURES = 5

    def __init__(self, reader: Reader, *, max_reads: int) -> None:
        self.reader = reader
        self.max_reads = max_reads
        self.reads = 0
        self.skipped = 0
        self.failed = 0
        self._failing = 0  # failures in a row
        self._error = ""  # the last failure's message, for the poll's one log line

    def _read(self, path: str, args: Mapping[str, str] | None = None) -> Resource | None:
        if self.reads >= self.max_reads or self._failing >= self.MAX_FAILURES:
            self.skipped += 1
            return None
        self.reads += 1
        session = self.reader.session
        try:
            reply = session.request("GET", path, args=dict(args) if args else None)
            if reply.status == 404:
                return None  # linked but absent: no metrics, not a failed poll
            session.check(reply, f"read {path}")
        except DriverError as exc:
            self.failed += 1
            self._failing += 1
            self._error = exc.message
            return None
        self._failing = 0
        return reply.body if isinstance(reply.body, Mapping) else None

    def linked(self, element: Resource) -> list[Resource]:
        """The metrics resources `element` links to: expanded in one read when it links to
        both and the service expands, else one read each."""
        paths = {name: ref(element.get(name)) for name in _LINKS}
        wanted = [name for name, path in paths.items() if path]
        if len(wanted) > 1 and self.reader.expand and element.get("@odata.id"):
            whole = self._read(str(element["@odata.id"]), {"$expand": self.reader.expand})
            inline = [whole.get(n) for n in wanted] if whole else []  # else one read each
            if inline and all(isinstance(v, Mapping) and len(v) > 1 for v in inline):
                return [dict(v) for v in inline if isinstance(v, Mapping)]
        found = []
        for name in wanted:
            resource = self._read(str(paths[name]))
            if resource is not None:
                found.append(resource)
        return found

    def of(self, elements: Iterable[tuple[str, Resource]]) -> dict[str, dict[str, float]]:
        """Metrics by element id; elements with none are left out."""
        found: dict[str, dict[str, float]] = {}
        for element_id, element in elements:
            numbers = from_resource(element)
            for resource in self.linked(element):
                for name, value in from_resource(resource).items():
                    numbers.setdefault(name, value)
            if numbers:
                found[element_id] = numbers
        if self.failed:
            logger.warning(
                "redfish %s: %d metrics reads failed this poll, their elements go without "
                "those numbers (the last: %s)",
                self.reader.session.endpoint,
                self.failed,
                self._error,
            )
        if self.skipped and self.max_reads:  # 0: the operator turned them off
            logger.warning(
                "redfish %s: %d metrics resources not read this poll (metrics_max_reads %d%s)",
                self.reader.session.endpoint,
                self.skipped,
                self.max_reads,
                f", or {self.MAX_FAILURES} failures in a row" if self.failed else "",
            )
        return found

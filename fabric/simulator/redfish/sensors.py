"""The simulator's modelled sensor values served as standard Redfish metrics resources.

The numbers are those of fabric.simulator.metrics, the ones the simulated driver's health
readings carry, so the Redfish driver reads the same values through the protocol:

- a GPU or other accelerator (Processor): `Metrics` -> ProcessorMetrics (BandwidthPercent;
  ECC counts of the current period in CacheMetricsTotal) and `EnvironmentMetrics`
  (temperature, power);
- an NVMe drive (Drive), a switch, an enclosure (Chassis): `EnvironmentMetrics`;
- a cabled port: `Metrics` -> PortMetrics (its link's errors and retrains in PCIeErrors),
  and its `ActiveWidth` (rendered with the port, fabric.py) the link's trained width.

CXL memory (a MemoryDomain), NICs (a NetworkInterface) and hosts (a ComputerSystem) have
no metrics property in their schemas as served here, so they get none. Why computed at
each GET rather than kept in the rendered tree: the values move with time (error counters
grow after a fault) and with bindings (a bound device draws more), while the tree is kept
until an element changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from fabric.kinds import find
from fabric.redfish_render.build import Resource, ref, resource
from fabric.simulator.metrics import element_metrics
from fabric.simulator.models import SimulatedBinding as Binding
from fabric.simulator.propagation import own_health
from fabric.simulator.redfish import paths
from fabric.simulator.redfish.world import Element, World

ENVIRONMENT = "EnvironmentMetrics"
PROCESSOR = "ProcessorMetrics"
PORT = "Metrics"  # a port's PortMetrics


def links(path: str, *, environment: bool = True, metrics: str = "") -> dict[str, Any]:
    """The properties linking the element at `path` to its metrics resources (`metrics`:
    the last segment of its `Metrics` resource, "" for none)."""
    found: dict[str, Any] = {}
    if metrics:
        found["Metrics"] = ref(f"{path}/{metrics}")
    if environment:
        found["EnvironmentMetrics"] = ref(f"{path}/{ENVIRONMENT}")
    return found


def link_numbers(link: Element, ports: dict[str, dict[str, Any]], now: float) -> dict[str, float]:
    """The modelled numbers of one link (width, errors, retrains)."""
    return element_metrics(link, own_health(link), ports=ports, now=now)


@dataclass(frozen=True, slots=True)
class _Source:
    """What one metrics resource is read from: the element, and which schema to render."""

    element: Element
    schema: str


class Sensors:
    """The metrics resources of one world's elements, by path; their values are computed
    when read. Kept across binds (`elements`: the world's, shared by the worlds that differ
    only in their bindings), as the rendering of the elements is."""

    def __init__(self, world: World) -> None:
        self.elements = world.by_id
        self.ports = {p.external_id: p.data for p in world.of("port")}
        self.sources: dict[str, _Source] = {}
        for device in world.of("device"):
            kind = str(device.get("kind"))
            shown = find(kind)
            if shown is None or shown.sliced or shown.redfish.block_type == "Network":
                continue  # a memory domain, a network interface: no sensors of their own
            path = paths.device(device.external_id, kind, str(device.get("enclosure_id")))
            self.sources[f"{path}/{ENVIRONMENT}"] = _Source(device, ENVIRONMENT)
            if shown.redfish.part_type == "Processor":  # a GPU, an accelerator; not a drive
                self.sources[f"{path}/{PROCESSOR}"] = _Source(device, PROCESSOR)
        for switch in world.of("switch"):
            self.sources[f"{paths.switch(switch.external_id)}/{ENVIRONMENT}"] = _Source(
                switch, ENVIRONMENT
            )
        for enclosure in world.of("enclosure"):
            self.sources[f"{paths.chassis(enclosure.external_id)}/{ENVIRONMENT}"] = _Source(
                enclosure, ENVIRONMENT
            )
        by_id = {p.external_id: p for p in world.of("port")}
        for link in world.of("link"):
            for end in (link.get("a_port_id"), link.get("b_port_id")):
                port = by_id.get(str(end))
                if port is not None:
                    self.sources[f"{port_path(port)}/{PORT}"] = _Source(link, PORT)

    def get(self, path: str, now: float, bindings: Iterable[Binding]) -> Resource | None:
        """The metrics resource at `path` as it reads at `now` with `bindings` (a bound
        device works harder), or None if there is none."""
        source = self.sources.get(path)
        if source is None:
            return None
        element = source.element
        numbers = element_metrics(
            element,
            own_health(element),
            bound=any(b.device_id == element.external_id for b in bindings),
            ports=self.ports,
            now=now,
        )
        name = f"{element.get('name') or element.external_id}"
        if source.schema == PROCESSOR:
            return resource(
                path,
                f"Metrics of {name}",
                PROCESSOR,
                BandwidthPercent=numbers.get("utilisation_pct", 0.0),
                CacheMetricsTotal={
                    "CurrentPeriod": {
                        "CorrectableECCErrorCount": int(numbers.get("correctable_errors", 0)),
                        "UncorrectableECCErrorCount": int(numbers.get("uncorrectable_errors", 0)),
                    }
                },
            )
        if source.schema == PORT:
            return resource(
                path,
                f"Metrics of the port's link {name}",
                "PortMetrics",
                PCIeErrors={
                    "CorrectableErrorCount": int(numbers.get("link_errors", 0)),
                    "L0ToRecoveryCount": int(numbers.get("link_retrains", 0)),
                },
            )
        body = resource(path, f"Environment of {name}", ENVIRONMENT)
        if "temperature_c" in numbers:  # a powered-off element has no temperature to read
            body["TemperatureCelsius"] = {"Reading": numbers["temperature_c"]}
        if "power_w" in numbers:
            body["PowerWatts"] = {"Reading": numbers["power_w"]}
        return body


def port_path(port: Element) -> str:
    """A port's Redfish path (as fabric.py renders it)."""
    name = str(port.get("name") or port.external_id.rsplit("/", 1)[-1])
    return paths.port(str(port.get("owner_kind")), str(port.get("owner_id")), name)

"""Which devices of a composition are lost: failed, gone, or cut off from its host.

"Lost" is read from the console tables, as the fabric side writes them (inventory sync and
the health poller update `Device.health`/`state` and `Link.state`):

- the device failed: health CRITICAL;
- the device is gone: state ABSENT (or no longer in the topology at all);
- the device is cut off: no working path from the composition's host to its enclosure
  (a failed switch or link leaves the device itself healthy, but the host cannot reach
  it; `fabric.topology` never routes over a link that is down).

A degraded link (reduced width) loses nothing, and neither does a device at WARNING: the
composition keeps working. The periodic health reconcile and the heal job use this one
definition, so what degrades a composition is what heals it.

Failure is read from `health`, never from the FAILED state: inventory sync sets FAILED from
a critical health, but only the health poll follows the device every few seconds, and the
state stays FAILED until the next sync (minutes) after the device is back. Judged by the
state, a composition would stay degraded, and a heal would replace a device that works,
long after the poll saw it recover.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from composer.models import Allocation, Composition
from fabric.choices import DeviceState, Health
from fabric.topology.graph import FabricGraph, reachable_devices, reachable_enclosures
from fabric.topology.load import load_graph

__all__ = [
    "DeviceProblem",
    "DeviceStatus",
    "composition_device_status",
    "composition_unhealthy_devices",
    "compositions_unhealthy_devices",
]


@dataclass(frozen=True, slots=True)
class DeviceProblem:
    """One active allocation whose device is lost, and why ("failed", "cut off from ...")."""

    allocation_id: int
    device_id: int
    device_name: str
    why: str

    def sentence(self) -> str:
        """How logs and audit reasons name it: "gpu-a-01-1 (failed)"."""
        return f"{self.device_name} ({self.why})"


def compositions_unhealthy_devices(
    compositions: Iterable[Composition], *, graph: FabricGraph | None = None
) -> dict[int, list[DeviceProblem]]:
    """The lost devices of each composition (by id; compositions with none are left out).

    Two queries plus the topology (`load_graph`, eight queries, unless `graph` is given),
    and one path search per distinct host, whatever the number of compositions.
    """
    hosts = {c.pk: c.host_id for c in compositions}
    if not hosts:
        return {}
    rows = list(
        Allocation.objects.filter(composition_id__in=list(hosts), released_at__isnull=True)
        .order_by("composition_id", "pk")
        .values_list("pk", "composition_id", "device_id", "device__name")
    )
    if not rows:
        return {}
    graph = graph if graph is not None else load_graph()
    reach: dict[int, frozenset[str] | None] = {}
    found: dict[int, list[DeviceProblem]] = defaultdict(list)
    for allocation_id, composition_id, device_id, name in rows:
        host_id = hosts[composition_id]
        if host_id is not None and host_id not in reach:
            reach[host_id] = _reachable(graph, host_id)
        why = _why(graph, device_id, reach.get(host_id) if host_id is not None else None, host_id)
        if why:
            found[composition_id].append(DeviceProblem(allocation_id, device_id, name, why))
    return dict(found)


def composition_unhealthy_devices(
    composition: Composition, *, graph: FabricGraph | None = None
) -> list[DeviceProblem]:
    """The lost devices of one composition (its active allocations), in allocation order."""
    return compositions_unhealthy_devices([composition], graph=graph).get(composition.pk, [])


@dataclass(frozen=True, slots=True)
class DeviceStatus:
    """How one held device is doing now, as its composition's page shows it.

    A tenant may see all of it: the device's health, whether the composition's host reaches
    it, and its best working path's latency and bottleneck; nothing names a switch or link.
    `reachable` is None when it is not judged (no host yet, or the host has left the
    fabric); `lost` says why the device is lost for the composition (the same words and
    the same rule as the composition's own reason, `DeviceProblem.why`), or "".
    """

    health: str
    reachable: bool | None
    lost: str
    latency_ns: int | None = None
    bottleneck_gbps: float | None = None


def composition_device_status(
    composition: Composition, *, graph: FabricGraph | None = None
) -> dict[int, DeviceStatus]:
    """The status of each active allocation's device, by allocation id.

    One query plus the topology of the host's fabric manager only (`load_graph`, eight
    queries, unless `graph` is given: the page and its live partial render this every few
    seconds, and a host reaches nothing beyond its own manager's fabric) and one path search
    from the composition's host; nothing when nothing is held.
    """
    rows = list(
        Allocation.objects.filter(composition=composition, released_at__isnull=True).values_list(
            "pk", "device_id", "composition__host__manager_id", "device__manager_id"
        )
    )
    if not rows:
        return {}
    if graph is None:
        # The host's manager; without a host yet, the devices' own (health alone is judged).
        host_manager = rows[0][2]
        managers = {host_manager} if host_manager is not None else {row[3] for row in rows}
        graph = load_graph(managers=sorted(managers))
    host_id = composition.host_id
    host = f"host:{host_id}" if host_id is not None else None
    paths = reachable_devices(graph, host) if host is not None and host in graph.nodes else None
    reached = (
        frozenset(parent for d in paths if (parent := graph.nodes[d].parent) is not None)
        if paths is not None
        else None
    )
    found: dict[int, DeviceStatus] = {}
    for allocation_id, device_id, *_ in rows:
        node = graph.nodes.get(f"device:{device_id}")
        path = paths.get(f"device:{device_id}") if paths is not None else None
        found[allocation_id] = DeviceStatus(
            health=node.health if node is not None else Health.UNKNOWN,
            reachable=None if paths is None or node is None else path is not None,
            lost=_why(graph, device_id, reached, host_id),
            latency_ns=path.latency_ns if path is not None else None,
            bottleneck_gbps=path.bottleneck_gbps if path is not None else None,
        )
    return found


def _reachable(graph: FabricGraph, host_pk: int) -> frozenset[str] | None:
    """The enclosures the host reaches over working links; None when the host itself is
    not in the topology (absent): then only the devices' own health is judged, since a
    lost host is not a lost device."""
    host = f"host:{host_pk}"
    if host not in graph.nodes:
        return None
    return frozenset(reachable_enclosures(graph, host))


def _why(
    graph: FabricGraph, device_pk: int, reachable: frozenset[str] | None, host_pk: int | None
) -> str:
    node = graph.nodes.get(f"device:{device_pk}")
    if node is None:
        return "absent"
    if node.state == DeviceState.ABSENT:
        return "absent"
    if node.health == Health.CRITICAL:
        return "failed"
    if reachable is not None and node.parent is not None and node.parent not in reachable:
        host = graph.nodes[f"host:{host_pk}"].name
        return f"cut off from {host}: no working path"
    return ""

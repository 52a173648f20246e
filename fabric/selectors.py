"""Reads of the physical world that span relations or aggregate: a fixed number of queries."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum
from django.db.models.functions import Least

from fabric.capacity import Split, capacity_split
from fabric.choices import ComponentState, DeviceState, Health, LinkState
from fabric.kinds import is_sliced, shares_per_device
from fabric.models import (
    ChangeRecord,
    Device,
    Enclosure,
    FailureDomain,
    Host,
    Link,
    Pool,
    Port,
    Switch,
)
from fabric.topology.domains import derive_domains
from fabric.topology.graph import paths_between, reachable_devices, single_points_of_failure
from fabric.topology.load import load_graph
from fabric.topology.radius import domain_impact
from fabric.topology.render import topology_json
from fabric.topology.report import impact_report, paths_report, reachable_report


@dataclass(frozen=True)
class PoolCapacity:
    """Capacity of one pool, in devices — or in GiB for partitionable memory pools, where
    allocated are the GiB its devices' slices hold (`fabric.capacity`, the one definition).
    A shared GPU counts allocated by the fraction its shares hold (thousandths of a device).

    capacity = allocated + free + unavailable; absent devices count nowhere. `devices`: the
    present devices it is made of.
    """

    pool: Pool
    unit: str
    capacity: float
    allocated: float
    free: float
    unavailable: float
    devices: int = 0

    @property
    def allocated_percent(self) -> float:
        return 100.0 * self.allocated / self.capacity if self.capacity else 0.0

    @property
    def free_percent(self) -> float:
        return 100.0 * self.free / self.capacity if self.capacity else 0.0

    @property
    def unavailable_percent(self) -> float:
        return 100.0 * self.unavailable / self.capacity if self.capacity else 0.0


def pool_capacities(*, pools: QuerySet[Pool] | None = None) -> list[PoolCapacity]:
    """Capacity, allocated and free of each pool, in two queries whatever the device count.

    The devices are summed per (pool, state, health) in SQL and each group split by
    `fabric.capacity.capacity_split`, whose definition is linear in the sums.
    """
    pool_list = list((pools if pools is not None else Pool.objects.all()).select_related("rack"))
    rows = (
        Device.objects.filter(pool__in=[p.pk for p in pool_list])
        .exclude(state=DeviceState.ABSENT)
        .values("pool_id", "state", "health")
        .annotate(
            devices=Count("id"),
            gib=Sum("memory_gib"),
            # Per device, never more than it has (a sync may report it smaller meanwhile).
            held_gib=Sum(Least("allocated_gib", "memory_gib")),
            # Still bound to a host: held, whatever the state (a shared one by its shares).
            bound=Count("bound_host", filter=Q(allocated_shares=0)),
            shared=Count("id", filter=Q(allocated_shares__gt=0)),
            held_shares=Sum("allocated_shares"),
        )
    )
    splits: dict[int, Split] = defaultdict(Split)
    counts: dict[int, int] = defaultdict(int)
    memory_pools = {p.pk for p in pool_list if is_sliced(p.kind)}
    shares = {p.pk: shares_per_device(p.kind) for p in pool_list}
    for row in rows:
        pool_id = row["pool_id"]
        counts[pool_id] += row["devices"]
        splits[pool_id] += capacity_split(
            partitionable=pool_id in memory_pools,
            state=row["state"],
            health=row["health"],
            devices=row["devices"],
            memory_gib=row["gib"] or 0,
            allocated_gib=row["held_gib"] or 0,
            bound=row["bound"],
            shares=shares[pool_id],
            shared=row["shared"],
            allocated_shares=row["held_shares"] or 0,
        )
    result = []
    for pool in pool_list:
        split = splits[pool.pk]
        result.append(
            PoolCapacity(
                pool=pool,
                unit="GiB" if pool.pk in memory_pools else "devices",
                capacity=split.capacity,
                allocated=split.allocated,
                free=split.free,
                unavailable=split.unavailable,
                devices=counts[pool.pk],
            )
        )
    return result


def pool_capacity(*, pool: Pool) -> PoolCapacity:
    """Capacity of one pool (see `pool_capacities`)."""
    return pool_capacities(pools=Pool.objects.filter(pk=pool.pk))[0]


@dataclass(frozen=True)
class HealthSummary:
    """Device counts by health, across the present inventory."""

    ok: int
    warning: int
    critical: int
    unknown: int

    @property
    def total(self) -> int:
        return self.ok + self.warning + self.critical + self.unknown


def device_health_summary() -> HealthSummary:
    """How many present devices are healthy, degraded, failed or unread; one query."""
    counts = dict(
        Device.objects.exclude(state=DeviceState.ABSENT)
        .values_list("health")
        .annotate(n=Count("id"))
        .values_list("health", "n")
    )
    return HealthSummary(
        ok=counts.get(Health.OK, 0),
        warning=counts.get(Health.WARNING, 0),
        critical=counts.get(Health.CRITICAL, 0),
        unknown=counts.get(Health.UNKNOWN, 0),
    )


# --- Console pages: summaries, breakdowns, ports and their links ----------------------------


@dataclass(frozen=True)
class ComponentCounts:
    """How many present switches, hosts or enclosures there are, and how many need attention."""

    total: int
    warning: int
    critical: int
    maintenance: int


@dataclass(frozen=True)
class FabricSummary:
    """The operator's overview of the physical world (absent rows count nowhere)."""

    hosts: ComponentCounts
    enclosures: ComponentCounts
    switches: ComponentCounts
    links_total: int
    links_degraded: int
    links_down: int


def fabric_summary() -> FabricSummary:
    """Counts of hosts, enclosures, switches and links by health and state; four queries."""

    def counts(model: type[Host] | type[Enclosure] | type[Switch]) -> ComponentCounts:
        rows = (
            model.objects.exclude(state=ComponentState.ABSENT)
            .values_list("state", "health")
            .annotate(n=Count("id"))
        )
        total = warning = critical = maintenance = 0
        for state, health, n in rows:
            total += n
            warning += n if health == Health.WARNING else 0
            critical += n if health == Health.CRITICAL else 0
            maintenance += n if state == ComponentState.MAINTENANCE else 0
        return ComponentCounts(
            total=total, warning=warning, critical=critical, maintenance=maintenance
        )

    links = dict(
        Link.objects.filter(is_present=True)
        .values_list("state")
        .annotate(n=Count("id"))
        .values_list("state", "n")
    )
    return FabricSummary(
        hosts=counts(Host),
        enclosures=counts(Enclosure),
        switches=counts(Switch),
        links_total=sum(links.values()),
        links_degraded=links.get(LinkState.DEGRADED, 0),
        links_down=links.get(LinkState.DOWN, 0),
    )


@dataclass(frozen=True)
class ModelStateCount:
    """Devices of one model in one state within a pool, with their memory in GiB."""

    model: str
    state: str
    devices: int
    gib: int


def pool_device_breakdown(*, pool: Pool) -> list[ModelStateCount]:
    """The pool's present devices grouped by model and state, largest groups first; one query."""
    rows = (
        Device.objects.filter(pool=pool)
        .exclude(state=DeviceState.ABSENT)
        .values("model", "state")
        .annotate(devices=Count("id"), gib=Sum("memory_gib"))
        .order_by("model", "state")
    )
    return [
        ModelStateCount(model=r["model"], state=r["state"], devices=r["devices"], gib=r["gib"] or 0)
        for r in rows
    ]


@dataclass(frozen=True)
class ManagerCounts:
    """What one fabric manager reports (present rows only)."""

    switches: int = 0
    hosts: int = 0
    enclosures: int = 0
    devices: int = 0
    links: int = 0


def manager_inventory_counts(*, manager_ids: list[int] | None = None) -> dict[int, ManagerCounts]:
    """Switches, hosts, enclosures, devices and links per manager; five queries, whatever the size.

    Grouped counts per table rather than one query with five joins, which would multiply rows.
    """
    per_table: dict[str, dict[int, int]] = {}
    sources: dict[str, QuerySet[Any]] = {
        "switches": Switch.objects.exclude(state=ComponentState.ABSENT),
        "hosts": Host.objects.exclude(state=ComponentState.ABSENT),
        "enclosures": Enclosure.objects.exclude(state=ComponentState.ABSENT),
        "devices": Device.objects.exclude(state=DeviceState.ABSENT),
        "links": Link.objects.filter(is_present=True),
    }
    for name, queryset in sources.items():
        if manager_ids is not None:
            queryset = queryset.filter(manager_id__in=manager_ids)
        grouped = queryset.values_list("manager_id").annotate(n=Count("id"))
        per_table[name] = dict(grouped.values_list("manager_id", "n"))
    ids = set(manager_ids or []) | {pk for table in per_table.values() for pk in table}
    return {
        pk: ManagerCounts(**{name: table.get(pk, 0) for name, table in per_table.items()})
        for pk in ids
    }


@dataclass(frozen=True)
class PortLink:
    """A port, and the link on it (if any) seen from this port's side: its peer port."""

    port: Port
    link: Link | None
    peer: Port | None


def port_links(*, ports: QuerySet[Port]) -> list[PortLink]:
    """Each port with its link and the peer port (and the peer's owner); two queries.

    A port carries at most one present link; when a stale, absent link is also on record the
    present one wins. Ports without a link are listed with `link=None`.
    """
    port_list = list(ports.select_related("switch", "host", "enclosure"))
    ids = [p.pk for p in port_list]
    owner_joins = [
        f"{side}_port__{owner}" for side in ("a", "b") for owner in ("switch", "host", "enclosure")
    ]
    links = (
        Link.objects.filter(Q(a_port_id__in=ids) | Q(b_port_id__in=ids))
        .select_related(*owner_joins)
        .order_by("-is_present", "id")
    )
    by_port: dict[int, tuple[Link, Port]] = {}
    for link in links:
        for mine, peer in ((link.a_port, link.b_port), (link.b_port, link.a_port)):
            if mine.pk in ids and mine.pk not in by_port:
                by_port[mine.pk] = (link, peer)
    result = []
    for port in port_list:
        port_link, port_peer = by_port.get(port.pk, (None, None))
        result.append(PortLink(port=port, link=port_link, peer=port_peer))
    return result


def change_history(*, target_type: str, target_id: int) -> QuerySet[ChangeRecord]:
    """The change records of one fabric object, newest first (with the acting user)."""
    return ChangeRecord.objects.filter(target_type=target_type, target_id=target_id).select_related(
        "actor"
    )


# --- Topology and failure domains ------------------------------------------------------------
# One load of the graph per call (a fixed number of queries), then pure functions.


def topology_payload(
    *,
    managers: Sequence[int] | None = None,
    racks: Sequence[int] | None = None,
    collapse: bool | None = None,
) -> dict[str, Any]:
    """The topology JSON the page draws and the API serves (see fabric.topology.render)."""
    return topology_json(load_graph(managers=managers, racks=racks), collapse=collapse)


def failure_domain_impact(*, domains: Sequence[FailureDomain]) -> dict[str, Any]:
    """The blast radius of `domains` failing together (a what-if: nothing is injected).

    The graph is loaded for the domains' fabric managers and measured with the domains' own
    links working (`fabric.topology.radius.domain_impact`, as an alert and the stored
    counts are); a domain whose element has left the fabric since the last refresh
    contributes nothing.
    """

    graph = load_graph(managers=sorted({d.manager_id for d in domains}))
    specs = {spec.key: spec for spec in derive_domains(graph)}
    chosen = [specs[d.key] for d in domains if d.key in specs]
    graph, impact = domain_impact(graph, chosen)
    rows = [{"id": d.pk, "key": d.key, "kind": d.kind, "name": d.name} for d in domains]
    return impact_report(graph, impact, domains=rows)


def host_paths(
    *, host: Host, device: Device | None = None, max_latency_ns: int | None = None
) -> dict[str, Any]:
    """Paths from `host` to `device`, or every device `host` reaches (within a ceiling)."""

    graph = load_graph(managers=[host.manager_id])
    host_id = f"host:{host.pk}"
    if host_id not in graph.nodes:
        raise Host.DoesNotExist(f"host {host.pk} is not in the fabric graph")
    if device is None:
        reach = reachable_devices(graph, host_id, max_latency_ns=max_latency_ns)
        return reachable_report(graph, host_id, reach, max_latency_ns=max_latency_ns)
    device_id = f"device:{device.pk}"
    if device_id not in graph.nodes:
        raise Device.DoesNotExist(f"device {device.pk} is not in the fabric graph")
    paths = paths_between(graph, host_id, device_id)
    single_points = single_points_of_failure(graph, host_id, device_id)
    return paths_report(graph, host_id, device_id, paths, single_points)

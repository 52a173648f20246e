"""load_graph(): the fabric's current state, read from the console tables into a FabricGraph.

The only database access of `fabric.topology`: eight queries whatever the size (managers,
racks, power feeds, switches, hosts, enclosures, devices, links; five when `lean`, for
placement), each a `values_list()`, so no model instance is built (10,000 devices load in a
few tens of milliseconds).
Absent rows (state ABSENT, or `is_present` false) are left out, as are links with an absent
port or an end that is not loaded. A link whose manager gives no latency (stored as 0) counts
ESTIMATED_HOP_LATENCY_NS and is marked `latency_estimated`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import QuerySet

from fabric.capacity import capacity_split
from fabric.choices import ComponentState, DeviceState
from fabric.kinds import is_sliced
from fabric.models import Device, Enclosure, FabricManager, Host, Link, PowerFeed, Rack, Switch
from fabric.topology.graph import ESTIMATED_HOP_LATENCY_NS, Edge, FabricGraph, Node, paused_gc

__all__ = ["load_graph"]


def _ref(kind: str, pk: int | None) -> str | None:
    return f"{kind}:{pk}" if pk is not None else None


def load_graph(
    *,
    managers: Iterable[int] | None = None,
    racks: Iterable[int] | None = None,
    lean: bool = False,
    device_attributes: bool = False,
) -> FabricGraph:
    """Read the present fabric (of `managers`, or every manager) into a FabricGraph.

    With `racks`, only those racks are kept: their hosts, switches, enclosures and
    devices, the links among them, and the switches outside the racks that they are linked
    to (with only those links). Always eight queries; five when `lean`: no rack nodes and
    no names of managers and power feeds (nodes still carry their rack and feed ids), which
    is all placement reads, on the path of every composition request. With
    `device_attributes`, each device's JSON `attributes` is in its `attrs["attributes"]`
    (read by the same query).
    """
    with paused_gc():
        return _load(
            None if managers is None else list(managers),
            None if racks is None else list(racks),
            lean=lean,
            device_attributes=device_attributes,
        )


def _load(
    manager_ids: list[int] | None,
    rack_ids: list[int] | None,
    *,
    lean: bool,
    device_attributes: bool,
) -> FabricGraph:

    def scoped(qs: QuerySet[Any], rack_field: str | None = "rack_id") -> QuerySet[Any]:
        if manager_ids is not None:
            qs = qs.filter(manager_id__in=manager_ids)
        if rack_ids is not None and rack_field is not None:
            qs = qs.filter(**{f"{rack_field}__in": rack_ids})
        return qs

    manager_names: dict[str, str] = {}
    power_feeds: dict[str, str] = {}
    nodes: list[Node] = []
    if not lean:
        manager_qs = FabricManager.objects.all()
        if manager_ids is not None:
            manager_qs = manager_qs.filter(pk__in=manager_ids)
        manager_names = {f"manager:{pk}": n for pk, n in manager_qs.values_list("pk", "name")}
        feeds = scoped(PowerFeed.objects.filter(is_present=True), None)
        power_feeds = {f"power_feed:{pk}": n for pk, n in feeds.values_list("pk", "name")}
        racks_qs = scoped(Rack.objects.filter(is_present=True), "pk")
        for pk, name, health, manager in racks_qs.values_list("pk", "name", "health", "manager_id"):
            nodes.append(
                Node(f"rack:{pk}", "rack", pk, name, health, "active", manager=f"manager:{manager}")
            )
    rack_nodes = {node.id for node in nodes}

    def placed(kind: str, pk: int, row: tuple[Any, ...], attrs: dict[str, Any]) -> Node:
        """A host, switch or enclosure: (name, health, state, rack, feed, manager, ...)."""
        name, health, state, rack, feed, manager = row[:6]
        rack_id = _ref("rack", rack)
        return Node(
            f"{kind}:{pk}",
            kind,
            pk,
            name,
            health,
            state,
            rack=rack_id,
            parent=rack_id if rack_id in rack_nodes else None,
            power_feed=_ref("power_feed", feed),
            manager=f"manager:{manager}",
            attrs=attrs,
        )

    common = ("name", "health", "state", "rack_id", "power_feed_id", "manager_id")
    # Switches are read whole when filtering by rack: those outside it linked into it stay.
    switches = scoped(Switch.objects.exclude(state=ComponentState.ABSENT), None)
    for pk, *row in switches.values_list("pk", *common, "protocol", "tier", "model"):
        attrs = {"protocol": row[6], "tier": row[7], "model": row[8]}
        nodes.append(placed("switch", pk, tuple(row), attrs))
    hosts = scoped(Host.objects.exclude(state=ComponentState.ABSENT))
    for pk, *row in hosts.values_list("pk", *common, "cores", "memory_gib"):
        nodes.append(placed("host", pk, tuple(row), {"cores": row[6], "memory_gib": row[7]}))
    enclosures: dict[int, Node] = {}
    enclosure_qs = scoped(Enclosure.objects.exclude(state=ComponentState.ABSENT))
    for pk, *row in enclosure_qs.values_list("pk", *common, "kind", "model"):
        node = placed("enclosure", pk, tuple(row), {"enclosure_kind": row[6], "model": row[7]})
        enclosures[pk] = node
        nodes.append(node)

    devices = scoped(Device.objects.exclude(state=DeviceState.ABSENT), "enclosure__rack_id")
    columns = (
        "pk", "name", "health", "state", "enclosure_id", "manager_id", "kind", "model",
        "memory_gib", "capacity_gb", "pool_id", "pool__name", "bound_host_id", "allocated_gib",
        "allocated_shares", "shared_host_id",
    )  # fmt: skip
    for row in devices.values_list(*columns, *(("attributes",) if device_attributes else ())):
        pk, name, health, state, enclosure_pk, manager, kind, model = row[:8]
        memory, capacity, pool, pool_name, bound_host, allocated = row[8:14]
        held_shares, shared_host = row[14:16]
        enclosure = enclosures.get(enclosure_pk) if enclosure_pk is not None else None
        if enclosure_pk is not None and enclosure is None:
            continue  # its enclosure is absent (or outside the racks asked for)
        attrs = {
            "device_kind": kind,
            "model": model,
            "memory_gib": memory,
            "capacity_gb": capacity,
            "pool": pool,
            "pool_name": pool_name or "",
            "bound_host": _ref("host", bound_host),
        }
        if is_sliced(kind):
            # The GiB its slices hold and those still free (fabric.capacity).
            split = capacity_split(
                partitionable=True,
                state=state,
                health=health,
                memory_gib=memory,
                allocated_gib=allocated,
            )
            attrs["allocated_gib"], attrs["free_gib"] = split.allocated, split.free
        if held_shares:
            # A shared GPU: the shares its compositions hold, all on `shared_host`.
            attrs["allocated_shares"] = held_shares
            attrs["shared_host"] = _ref("host", shared_host)
        if device_attributes:
            attrs["attributes"] = row[16]
        nodes.append(
            _device_node(
                f"device:{pk}",
                pk,
                name,
                health,
                state,
                enclosure.rack if enclosure else None,
                enclosure.id if enclosure else None,
                enclosure.power_feed if enclosure else None,
                f"manager:{manager}",
                attrs,
            )
        )

    known = {node.id for node in nodes}
    links = Link.objects.filter(is_present=True, a_port__is_present=True, b_port__is_present=True)
    if manager_ids is not None:
        links = links.filter(manager_id__in=manager_ids)
    # In id order: searches break ties by link order, so the same fabric gives the same
    # paths in every process (and placement's memo of reach meets the same key).
    links = links.order_by("pk")
    edges: list[Edge] = []
    for row in links.values_list(
        "pk", "latency_ns", "bandwidth_gbps", "state", "health",
        "a_port__switch_id", "a_port__host_id", "a_port__enclosure_id",
        "b_port__switch_id", "b_port__host_id", "b_port__enclosure_id",
        "a_port__name", "b_port__name",
    ):  # fmt: skip
        pk, latency, bandwidth, state, health, a_sw, a_host, a_enc, b_sw, b_host, b_enc = row[:11]
        a = _owner(a_sw, a_host, a_enc)
        b = _owner(b_sw, b_host, b_enc)
        if a in known and b in known:
            # 0: the manager gives no latency; a stated estimate per hop stands in for it.
            estimated = not latency
            edges.append(
                Edge(
                    f"link:{pk}",
                    pk,
                    a,
                    b,
                    ESTIMATED_HOP_LATENCY_NS if estimated else latency,
                    bandwidth,
                    state,
                    health,
                    row[11],
                    row[12],
                    estimated,
                )
            )

    if rack_ids is not None:
        nodes, edges = _keep_racks(nodes, edges, {f"rack:{pk}" for pk in rack_ids})
    return FabricGraph(nodes, edges, power_feeds=power_feeds, managers=manager_names)


# The slot descriptors of Node, by name: writing through them is what the frozen dataclass's
# __init__ does, one object.__setattr__ per field at twice the cost. A test checks that
# they are all of Node's fields.
NODE_FIELDS = (
    "id", "kind", "pk", "name", "health", "state", "rack", "parent", "power_feed", "manager",
    "attrs",
)  # fmt: skip
_NODE_SLOTS = tuple(getattr(Node, name).__set__ for name in NODE_FIELDS)


def _device_node(
    node_id: str,
    pk: int,
    name: str,
    health: str,
    state: str,
    rack: str | None,
    parent: str | None,
    power_feed: str | None,
    manager: str,
    attrs: dict[str, Any],
) -> Node:
    """Node(node_id, "device", ...), built without the frozen __init__: a fabric has
    thousands of devices, and this is most of what loading them costs in Python."""
    node = object.__new__(Node)
    s_id, s_kind, s_pk, s_name, s_health, s_state, s_rack, s_parent, s_feed, s_mgr, s_attrs = (
        _NODE_SLOTS
    )
    s_id(node, node_id)
    s_kind(node, "device")
    s_pk(node, pk)
    s_name(node, name)
    s_health(node, health)
    s_state(node, state)
    s_rack(node, rack)
    s_parent(node, parent)
    s_feed(node, power_feed)
    s_mgr(node, manager)
    s_attrs(node, attrs)
    return node


def _owner(switch: int | None, host: int | None, enclosure: int | None) -> str:
    if switch is not None:
        return f"switch:{switch}"
    if host is not None:
        return f"host:{host}"
    return f"enclosure:{enclosure}"


def _keep_racks(
    nodes: list[Node], edges: list[Edge], racks: set[str]
) -> tuple[list[Node], list[Edge]]:
    """Keep the racks' own nodes (everything but switches was filtered in SQL), the links
    touching them, and the outside switches at the far end of those links."""
    inside = {n.id for n in nodes if n.kind != "switch" or n.rack in racks}
    kept_edges = []
    for edge in edges:
        a_in, b_in = edge.a in inside, edge.b in inside
        if (
            (a_in and b_in)
            or (a_in and edge.b.startswith("switch:"))
            or (b_in and edge.a.startswith("switch:"))
        ):
            kept_edges.append(edge)
    linked = {end for edge in kept_edges for end in (edge.a, edge.b)}
    kept_nodes = [n for n in nodes if n.id in inside or n.id in linked]
    return kept_nodes, kept_edges

"""What the Redfish read model of the composition service stands on: the present fabric,
who holds what, and what each caller may see, read once per request.

One `Inventory` answers the resource blocks, the zones and their collections in a fixed
number of queries whatever the fabric's size: the fabric graph (`fabric.topology.load`,
five queries, lean), the live compositions' claims on devices and on hosts (two), and the
caller's tenants' quotas (one, tenants only). It is kept on the request, so `$expand` of a
collection renders every member from the same reads.

Who sees which block (the rule, documented in docs/redfish.md):

- operators see every present device and host, as it is;
- a tenant sees the blocks its own live compositions hold, and the blocks it could be
  given now: devices in a pool, allocatable (`fabric.capacity.is_allocatable`: free and
  not critical; CXL memory with GiB free), of a kind and model none of its quotas closes
  (a quota with a limit of 0), and active hosts whose health is not critical. What other
  tenants hold is never shown: a tenant's view of a shared block (a host, a CXL memory
  device, a GPU held in shares) counts only its own compositions. A GPU partly shared is
  not offered to a tenant holding none of it: its shares go only to its host's compositions.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from composer.choices import ACTIVE_COMPOSITION_STATES, CompositionState
from composer.models import Allocation, Composition, Quota
from composer.redfish.caller import Call, Caller
from fabric.capacity import is_allocatable
from fabric.choices import ComponentState, DeviceState, Health
from fabric.kinds import is_sliced
from fabric.topology.elements import FabricGraph, Node
from fabric.topology.load import load_graph
from fabric.topology.reach import reach_index

# A reservation's claim (a PreviewReserve): it reserves blocks but composes no system.
HELD = CompositionState.HELD
HEALTH = {Health.OK: "OK", Health.WARNING: "Warning", Health.CRITICAL: "Critical"}
# Compositions whose claims a block shows: the active ones and reservations' holds.
CLAIMING_STATES = sorted({*ACTIVE_COMPOSITION_STATES, HELD})  # HELD is active too
T = TypeVar("T")


@dataclass(frozen=True)
class Hold:
    """One live composition's claim on a block (a device, a slice of one, or a host)."""

    composition: int
    tenant: int
    state: str

    @property
    def is_reservation(self) -> bool:
        return self.state == HELD


def status(node: Node) -> dict[str, Any]:
    """A block's (or chassis') `Status`: failed or critical elements are offline, those in
    maintenance on standby; Health is absent where the manager never said."""
    if node.state == DeviceState.FAILED or node.health == Health.CRITICAL:
        state = "UnavailableOffline"
    elif node.state == DeviceState.MAINTENANCE:
        state = "StandbyOffline"
    else:
        state = "Enabled"
    return {"State": state, "Health": HEALTH.get(node.health)}  # type: ignore[call-overload]


def closed_kinds(caller: Caller) -> dict[int, set[tuple[str, str]]]:
    """Per tenant of the caller, the (kind, model) its quotas close (a limit of 0); a
    blank model closes every model of the kind. One query."""
    closed: dict[int, set[tuple[str, str]]] = {t: set() for t in caller.tenant_ids}
    rows = Quota.objects.filter(tenant_id__in=caller.tenant_ids).values_list(
        "tenant_id", "kind", "model", "max_count", "max_memory_gib", "max_storage_tb"
    )
    for tenant, kind, model, count, memory, storage in rows:
        if 0 in (count, memory) or storage == 0:
            closed[tenant].add((kind, model))
    return closed


def drawable(
    caller: Caller, closed: dict[int, set[tuple[str, str]]], kind: str, model: str
) -> bool:
    """May one of the caller's tenants draw a device of this kind and model?"""
    return any(
        (kind, "") not in shut and (kind, model) not in shut
        for tenant, shut in closed.items()
        if tenant in caller.tenant_ids
    )


def device_offered(
    caller: Caller,
    closed: dict[int, set[tuple[str, str]]],
    *,
    kind: str,
    model: str,
    pool: int | None,
    state: str,
    health: str,
    free_gib: int,
) -> bool:
    """Whether a tenant caller may be given this device now (see the module's rule)."""
    return (
        pool is not None
        and is_allocatable(
            partitionable=is_sliced(kind), state=state, health=health, free_gib=free_gib
        )
        and drawable(caller, closed, kind, model)
    )


def host_offered(state: str, health: str) -> bool:
    """Whether a tenant caller may compose on this host now."""
    return state == ComponentState.ACTIVE and health != Health.CRITICAL


@dataclass
class Inventory:
    """The present devices and hosts, what holds them, and the zones, as `caller` sees
    them. Build it with `inventory(call)`."""

    caller: Caller
    graph: FabricGraph
    holds: dict[str, list[Hold]]  # "device:<pk>" or "host:<pk>" -> live claims
    closed: dict[int, set[tuple[str, str]]]
    _zones: dict[str, list[str]] | None = field(default=None, repr=False)
    _zones_of: dict[str, list[str]] = field(default_factory=dict, repr=False)

    def claims(self, node_id: str) -> list[Hold]:
        """The claims on a block the caller may know of: all for operators, its
        tenants' own for a tenant."""
        found = self.holds.get(node_id, [])
        return found if self.caller.operator else [h for h in found if self.sees(h)]

    def sees(self, hold: Hold) -> bool:
        return self.caller.sees_tenant(hold.tenant)

    def visible(self, node: Node) -> bool:
        """Whether the caller sees `node` (a device or host) as a resource block."""
        if self.caller.operator:
            return True
        if not self.caller.tenant_ids:
            return False  # a member of no active tenant composes nothing
        if self.claims(node.id):
            return True
        if node.kind == "host":
            return host_offered(node.state, node.health)
        attrs = node.attrs
        return device_offered(
            self.caller,
            self.closed,
            kind=attrs["device_kind"],
            model=attrs["model"],
            pool=attrs["pool"],
            state=node.state,
            health=node.health,
            free_gib=attrs.get("free_gib", 0),
        )

    def blocks(self) -> list[Node]:
        """The blocks the caller sees: hosts first, then devices, each by name."""
        found = [
            node
            for kind in ("host", "device")
            for node in sorted(self.graph.of_kind(kind), key=lambda n: (n.name, n.pk))
            if self.visible(node)
        ]
        return found

    def node(self, node_id: str) -> Node | None:
        return self.graph.nodes.get(node_id)

    def zones(self) -> dict[str, list[str]]:
        """Every zone (`zone_id`) and the hosts and enclosures in it: one zone per set of
        switches joined by working links (and per host cabled straight to an enclosure),
        holding the hosts and enclosures cabled to them. Zones without a host are left out:
        nothing can be composed there."""
        if self._zones is None:
            index = reach_index(self.graph)
            members: dict[str, list[str]] = {}
            for component, kinds in index.members.items():
                if not kinds["host"]:
                    continue
                switches = index.comp_switches.get(component)
                key = zone_id(component, switches)
                members[key] = sorted(kinds["host"]) + sorted(kinds["enclosure"])
            self._zones = dict(sorted(members.items(), key=lambda item: _zone_order(item[0])))
            for zone, ends in self._zones.items():
                for end in ends:
                    self._zones_of.setdefault(end, []).append(zone)
        return self._zones

    def zones_of(self, node: Node) -> list[str]:
        """The zones a block is in: a host's own, a device's enclosure's."""
        end = node.id if node.kind == "host" else node.parent
        self.zones()
        return list(self._zones_of.get(end, ())) if end else []


def zone_id(component: str, switches: list[str] | None) -> str:
    """A zone's id: the lowest database id of its switches (stable while that switch stays
    in it), or "link-<id>" for a host cabled straight to an enclosure."""
    if switches:
        return str(min(int(s.split(":", 1)[1]) for s in switches))
    return "link-" + component.split(":", 1)[1]


def _zone_order(key: str) -> tuple[int, int]:
    return (0, int(key)) if key.isdigit() else (1, int(key.split("-", 1)[1]))


def per_request(call: Call, name: str, build: Callable[[Caller], T]) -> T:
    """`build(caller)`, computed once per request and caller: `$expand` renders every
    member of a collection from the same reads. Never kept past the request."""
    holder: Any = call.request if call.request is not None else call
    kept: dict[str, tuple[Caller, Any]] = holder.__dict__.setdefault("_composer_redfish", {})
    known = kept.get(name)
    if known is not None and known[0] is call.caller:
        return cast(T, known[1])
    built = build(call.caller)
    kept[name] = (call.caller, built)
    return built


def per_request_kept(call: Call, name: str) -> Any:
    """What `per_request(call, name, ...)` already built for this request and caller, or
    None: a member read alone does not build the whole collection, a member read for
    the collection's `$expand` finds it."""
    holder: Any = call.request if call.request is not None else call
    known = holder.__dict__.get("_composer_redfish", {}).get(name)
    return known[1] if known is not None and known[0] is call.caller else None


def inventory(call: Call) -> Inventory:
    """The caller's Inventory, read once per request."""
    return per_request(call, "inventory", _read)


def _read(caller: Caller) -> Inventory:
    graph = load_graph(lean=True)
    holds: dict[str, list[Hold]] = defaultdict(list)
    claims = Allocation.objects.filter(
        released_at__isnull=True, composition__state__in=CLAIMING_STATES
    ).values_list("device_id", "composition_id", "composition__tenant_id", "composition__state")
    for device, composition, tenant, state in claims.order_by("composition_id"):
        hold = Hold(composition, tenant, state)
        if hold not in holds[f"device:{device}"]:
            holds[f"device:{device}"].append(hold)
    hosted = Composition.objects.filter(state__in=CLAIMING_STATES, host__isnull=False).values_list(
        "host_id", "pk", "tenant_id", "state"
    )
    for host, composition, tenant, state in hosted.order_by("pk"):
        holds[f"host:{host}"].append(Hold(composition, tenant, state))
    closed = {} if caller.operator else closed_kinds(caller)
    return Inventory(caller=caller, graph=graph, holds=dict(holds), closed=closed)

"""Placing a composition request: the snapshot it is placed on, the placement, the plan as JSON.

Kept apart from `composer.services.compositions`, which writes the request, because the heal
job (`composer.services.heal.spares`) places spares the same way: on the same snapshot of
the free inventory, under the same advisory lock. Reads only; nothing here writes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from django.utils import timezone

import composer.placement.policies as policies
from composer.choices import ACTIVE_COMPOSITION_STATES
from composer.errors import SpecError
from composer.models import Allocation, Composition, Tenant
from composer.placement.audience import note_as_json
from composer.placement.engine import place
from composer.placement.load import build_snapshot
from composer.placement.request import DevicePick, Placement, PlacementRequest, Rejection
from composer.placement.snapshot import Snapshot
from composer.placement.workload import from_specs
from composer.selectors.bookings import booked_between
from composer.services.allocations import Claim
from composer.services.booking_holds import snapshot_less_booked
from composer.services.composition_pins import Pin, pins_as_request, pins_unusable
from composer.services.snapshot_cache import snapshot_reused
from composer.specs import spec_to_request
from fabric.models import Host

__all__ = [
    "PLACEMENT_LOCK_KEY",
    "composition_place",
    "pick_as_dict",
    "place_on",
    "placement_as_dict",
    "placement_claims",
    "placement_request",
    "placement_snapshot",
    "snapshot_pk",
]

# One placement decision at a time (PostgreSQL advisory lock, held to commit): a request
# that lost a claim then re-places on a snapshot that includes the winner's claim, so
# concurrent requests get every free device instead of colliding on the same first choice.
PLACEMENT_LOCK_KEY = 0x0C0_3905_E  # arbitrary, fixed: "composer placement"


def placement_snapshot(*, honour_bookings: bool = True) -> Snapshot:
    """The free inventory (memory devices less the GiB their slices hold, as the tables
    show) less what compositions hold but the tables do not show as taken: host cores and
    memory, and the uplink bandwidth of devices claimed but not bound yet (a hold's, a
    compose's in flight), so a second request cannot take the budget a hold needs; plus
    who holds which switch and enclosure (critical isolation), and which memory devices
    already hold a slice for which host (one slice of a device per host).

    With `honour_bookings` (the default), less everything booked windows hold from now on
    (`composer.services.booking_holds`): a composition made now has no end, so a device a
    booking needs later is not given to it (rule 7). Off only for an operator's audited
    override, and for the booking admission, which takes each window's holds itself.

    What precedes the bookings is kept while the inventory has not changed
    (`composer.services.snapshot_cache`): the admission of a booking, the most frequent
    caller, then places on it without reading the inventory again."""
    snapshot = snapshot_reused(_base_snapshot)
    if honour_bookings:
        snapshot = snapshot_less_booked(snapshot, booked_between(timezone.now(), None))
    return snapshot


def _base_snapshot() -> Snapshot:
    """The snapshot of `placement_snapshot` before bookings: reads only the tables the
    inventory generation watches (devices, hosts, enclosures, switches, links, ports, pools,
    compositions and allocations)."""
    active = (
        Allocation.objects.filter(released_at__isnull=True)
        .select_related("device", "composition")
        .only(
            "gib",
            "device__id",
            "device__enclosure_id",
            "composition__tenant_id",
            "composition__spec",
            "composition__host_id",
        )
    )
    sliced: dict[str, set[str]] = defaultdict(set)
    claimed: dict[str, set[str]] = defaultdict(set)  # host -> devices its compositions claim
    held: list[tuple[str, str, bool]] = []  # (enclosure, tenant, critical)
    for allocation in active:
        device = allocation.device
        key = f"device:{device.pk}"
        if allocation.composition.host_id is not None:
            claimed[f"host:{allocation.composition.host_id}"].add(key)
            if allocation.gib:
                sliced[f"host:{allocation.composition.host_id}"].add(key)
        held.append(
            (
                f"enclosure:{device.enclosure_id}",
                str(allocation.composition.tenant_id),
                bool((allocation.composition.spec or {}).get("critical")),
            )
        )
    cores: dict[str, int] = defaultdict(int)
    host_memory: dict[str, int] = defaultdict(int)
    specs = []
    for host_id, spec in Composition.objects.filter(
        state__in=ACTIVE_COMPOSITION_STATES, host__isnull=False
    ).values_list("host_id", "spec"):
        cores[f"host:{host_id}"] += int((spec or {}).get("cores") or 0)
        host_memory[f"host:{host_id}"] += int((spec or {}).get("host_memory_gib") or 0)
        specs.append(spec or {})
    # Taken as the snapshot is built (what `Snapshot.taking` would do, without building twice).
    snapshot = build_snapshot(cores=cores, host_memory_gib=host_memory, claimed=claimed)
    # The shapes live compositions have are the ones the default policy keeps room for.
    snapshot = replace(snapshot, workload=from_specs(specs))
    holders: dict[str, set[str]] = defaultdict(set)
    critical: dict[str, str] = {}
    for enclosure, tenant, is_critical in held:
        info = snapshot.enclosures.get(enclosure)
        for domain in (enclosure, *(info.switches if info else ())):
            holders[domain].add(tenant)
            if is_critical:
                critical[domain] = tenant
    if holders:
        snapshot = replace(
            snapshot,
            holders={k: frozenset(v) for k, v in holders.items()},
            critical=critical,
            sliced={k: frozenset(v) for k, v in sliced.items()},
        )
    return snapshot


def _tenant_hosts(tenant: Tenant) -> frozenset[str]:
    """The hosts (snapshot ids) the tenant's active compositions are on: a request spreads
    away from them unless its policy packs (`Policy.spreads_hosts`)."""
    hosts = (
        Composition.objects.filter(
            tenant=tenant, state__in=ACTIVE_COMPOSITION_STATES, host__isnull=False
        )
        .values_list("host_id", flat=True)
        .distinct()
    )
    return frozenset(f"host:{pk}" for pk in hosts)


def _spreads_hosts(spec: Mapping[str, Any]) -> bool:
    """Whether the spec's policy spreads compositions across hosts (an unknown one is the
    engine's to refuse: it is read as spreading, as before it reaches the engine)."""
    policy = policies.choice(str(spec["policy"]))
    return policy is None or policy.spreads_hosts


def placement_request(
    tenant: Tenant, spec: Mapping[str, Any], host: Host | None, pins: Sequence[Pin] = ()
) -> PlacementRequest:
    """The engine's request for `spec` of `tenant` (on `host`, with the devices it names)."""
    return spec_to_request(
        spec,
        host=f"host:{host.pk}" if host else None,
        tenant=str(tenant.pk),
        tenant_hosts=_tenant_hosts(tenant) if _spreads_hosts(spec) else frozenset(),
        pinned=pins_as_request(pins),
    )


def place_on(
    snapshot: Snapshot, request: PlacementRequest, host: Host | None, pins: Sequence[Pin] = ()
) -> Placement | Rejection:
    """Place `request` on `snapshot`: the host asked for must be in it, the devices named
    usable. Raises SpecError (field "spec") when the engine finds the request invalid."""
    if host is not None and request.host not in snapshot.hosts:
        return Rejection("no_capacity", f"Host {host.name} is not usable now (not active).")
    unusable = pins_unusable(pins, snapshot)
    if unusable is not None:
        return unusable
    outcome = place(request, snapshot)
    if isinstance(outcome, Rejection) and outcome.code == "invalid":
        raise SpecError(outcome.message, field="spec")
    return outcome


def composition_place(
    tenant: Tenant,
    spec: Mapping[str, Any],
    host: Host | None,
    pins: Sequence[Pin] = (),
    *,
    honour_bookings: bool = True,
) -> Placement | Rejection:
    """Place `spec` for `tenant` (on `host` when the request fixes it, with the devices it
    names: `pins`, from `composer.services.composition_pins.pins_resolve`) on a fresh
    snapshot, leaving out what bookings hold unless an operator overrides them. Raises
    SpecError (field "spec") when the engine finds the request invalid."""
    request = placement_request(tenant, spec, host, pins)
    return place_on(placement_snapshot(honour_bookings=honour_bookings), request, host, pins)


def pick_as_dict(pick: DevicePick) -> dict[str, Any]:
    """One chosen device (or slice) as the JSON a plan stores."""
    return {
        "device": pick.device,
        "name": pick.name,
        "kind": pick.kind,
        "enclosure": pick.enclosure,
        "latency_ns": pick.latency_ns,
        "bottleneck_gbps": pick.bottleneck_gbps,
        "gib": pick.gib,
        "share": pick.share,
    }


def placement_claims(outcome: Placement) -> list[Claim]:
    """What to claim for a plan: its whole devices, its shares (two shares of one request
    on the same device are one claim of their sum: a composition holds one allocation per
    device) and its memory slices."""
    shares: dict[str, int] = defaultdict(int)
    claims = []
    for pick in outcome.devices:
        if pick.share is None:
            claims.append(Claim(snapshot_pk(pick.device)))
        else:
            shares[pick.device] += pick.share
    claims += [Claim(snapshot_pk(device), share=share) for device, share in shares.items()]
    return claims + [Claim(snapshot_pk(p.device), p.gib) for p in outcome.memory]


def placement_as_dict(outcome: Placement | Rejection) -> dict[str, Any]:
    """A plan or a rejection as JSON (stored on the composition; pages and the API show it
    through `composer.placement.audience.plan_for`, in the reader's words)."""
    funnel = [list(step) for step in outcome.funnel]
    if isinstance(outcome, Rejection):
        return {
            "ok": False,
            "code": outcome.code,
            "message": outcome.message,
            "funnel": funnel,
            "nearest": note_as_json(outcome.nearest),
        }
    return {
        "ok": True,
        "host": outcome.host,
        "host_name": outcome.host_name,
        "devices": [pick_as_dict(p) for p in outcome.devices],
        "memory": [pick_as_dict(p) for p in outcome.memory],
        "score": outcome.score,
        "explanation": [note_as_json(note) for note in outcome.explanation],
        "funnel": funnel,
    }


def snapshot_pk(ref: str) -> int:
    """The primary key in a snapshot id such as "device:12"."""
    return int(ref.rsplit(":", 1)[1])

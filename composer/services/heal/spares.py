"""Placing and claiming the spare that replaces one lost device (see the package docstring)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

import composer.placement.policies as policies
from composer.errors import ClaimConflict
from composer.joblog import for_tenants
from composer.models import Allocation, Composition, Job
from composer.placement.engine import place
from composer.placement.request import DeviceItem, Placement, PlacementRequest, Rejection
from composer.placement.snapshot import Snapshot
from composer.selectors.health import DeviceProblem
from composer.services.allocations import allocations_claim
from composer.services.composition_placement import (
    PLACEMENT_LOCK_KEY,
    pick_as_dict,
    placement_claims,
    placement_snapshot,
)
from composer.services.heal.common import (
    HEALING_KEY,
    HealRejected,
    healing_records,
)
from fabric import kinds
from fabric.kinds import is_sliced, shares_per_device
from fabric.models import Device, Host

logger = logging.getLogger(__name__)

__all__ = ["pick_words", "snapshot_without", "spare_claim", "spare_exclusions"]


def _placement_lock() -> None:
    """The request path's lock (held to commit): one placement decision at a time."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [PLACEMENT_LOCK_KEY])


def spare_claim(
    job: Job, composition: Composition, problem: DeviceProblem, host: Host, source: str
) -> dict[str, Any]:
    """Place and claim the spare for one lost allocation; record it; return the record.

    The claim and the record are one transaction: a crash leaves both or neither. Raises
    HealRejected when there is no spare (nothing written).
    """
    lost = Allocation.objects.select_related("device").get(pk=problem.allocation_id)
    with transaction.atomic():
        locked = (
            Composition.objects.select_for_update().select_related("tenant").get(pk=composition.pk)
        )
        _placement_lock()
        records = healing_records(locked)
        for attempt in (1, 2):
            request, snapshot, what = _replacement_request(locked, lost, host, records)
            outcome = place(request, snapshot)
            if isinstance(outcome, Rejection):
                raise HealRejected(_no_spare(what, request, outcome, host, locked, lost, records))
            claims = placement_claims(outcome)  # whole devices, a share, a slice
            try:
                created = allocations_claim(
                    composition=locked, claims=claims, host=host, actor=job.requested_by
                )
            except ClaimConflict as exc:
                logger.info("the spare for %s was taken (%s); placing again", lost.device.name, exc)
                if attempt == 2:
                    raise HealRejected(
                        f"The spares chosen for {lost.device.name} were taken by concurrent "
                        "requests twice; try healing again."
                    ) from exc
                continue
            picks = [pick_as_dict(p) for p in (*outcome.devices, *outcome.memory)]
            record = {
                "failed": lost.pk,
                "device": f"device:{lost.device_id}",
                "name": lost.device.name,
                "gib": lost.gib,
                "share": lost.share,
                "why": problem.why,
                "replacements": [a.pk for a in created],
                "picks": picks,
                "job": job.pk,
            }
            placement = {**(locked.placement or {}), HEALING_KEY: [*records, record]}
            Composition.objects.filter(pk=locked.pk).update(
                placement=placement, updated_at=timezone.now()
            )
            composition.placement = placement
            logger.info(
                "spare for %s: %s (%s)",
                lost.device.name,
                ", ".join(pick_words(p) for p in picks),
                ", ".join(f"{p['latency_ns']} ns" for p in picks),
                extra=for_tenants(),
            )
            return record
    raise AssertionError("unreachable")  # pragma: no cover


def pick_words(pick: dict[str, Any]) -> str:
    """How a heal's log and the plan's explanation name a spare picked (`pick_as_dict`):
    "gpu-a-01-2", "mem-a-01-1 200 GiB", "a 250/1000 share of gpu-a-01-2"."""
    if pick.get("share"):
        return f"a {pick['share']}/{shares_per_device(pick['kind'])} share of {pick['name']}"
    return pick["name"] + (f" {pick['gib']} GiB" if pick.get("gib") else "")


def _what(lost: Allocation, item: DeviceItem | None) -> str:
    """How the spare sought is named: "GPU of model L40S 48GB", "256 GiB of CXL memory",
    "250/1000 share of a GPU"."""
    if item is None:
        return f"{lost.gib} GiB of {kinds.kind(lost.device.kind).amount_of}"
    text = kinds.label(item.kind) + (f" of model {item.model}" if item.model else "")
    if item.share is not None:
        text = f"{item.share}/{shares_per_device(item.kind)} share of a {text}"
    if item.minima:
        text += " with " + ", ".join(f"{k} >= {v:g}" for k, v in sorted(item.minima.items()))
    return text


def _item_for(
    spec: dict[str, Any], device: Device, share: int | None = None
) -> tuple[DeviceItem, int | None]:
    """The spec item `device` was placed for (and its index), else a like-for-like item
    (an NVMe drive for `storage_tb`: one at least as large). With `share` (what the lost
    allocation held), a share of that size of one device, from a share item of the spec
    (the one asking for that size first): a composition that held a share gets a share
    again. A share of a whole device's worth (two share items that landed on one device)
    is asked for as a whole device: no share is that large."""
    whole = shares_per_device(device.kind)
    if share is not None and share >= whole:
        share = None
    numbers = {k: v for k, v in (device.attributes or {}).items() if isinstance(v, int | float)}
    numbers.update(memory_gib=device.memory_gib or 0, capacity_gb=device.capacity_gb or 0)
    fallback: tuple[DeviceItem, int | None] | None = None
    items = list(enumerate(spec.get("items") or []))
    if share is not None:  # the share items, the one of this very size first
        items.sort(key=lambda pair: pair[1].get("share") != share)
    for index, item in items:
        model, minima = item.get("model") or None, dict(item.get("minima") or {})
        if item.get("kind") != device.kind or (model and model != device.model):
            continue
        if (item.get("share") is not None) != (share is not None):
            continue
        candidate = (DeviceItem(device.kind, 1, model, minima, share), index)
        if all(numbers.get(k, 0) >= v for k, v in minima.items()):
            return candidate
        fallback = fallback or candidate
    if fallback is not None:
        return fallback
    if kinds.kind(device.kind).measure == "gb":  # a drive: like for like in capacity
        return DeviceItem(device.kind, 1, None, {"capacity_gb": device.capacity_gb or 0}), None
    return DeviceItem(device.kind, 1, device.model or None, {}, share), None


def snapshot_without(snapshot: Snapshot, drop: set[str]) -> Snapshot:
    """`snapshot` with the devices `drop` out of reach: whole ones taken, partly shared ones
    with all of their free shares taken (`Snapshot.taking` never takes a shared device
    whole: its other shares are held). Used by heal and by resize, which place on the
    composition's host with some devices ruled out by its own rules."""
    devices = snapshot.devices
    shared = {d: devices[d] for d in drop if d in devices and devices[d].shared_host}
    return snapshot.taking(
        devices=drop - set(shared),
        shares={d: (info.shared_host or "", info.shares_free) for d, info in shared.items()},
    )


def spare_exclusions(
    snapshot: Snapshot,
    *,
    kind: str,
    policy: str,
    spread_from: Sequence[str],
    together_with: Sequence[str],
) -> set[str]:
    """The devices of `kind` in `snapshot` that may not replace a lost one. Pure.

    `spread_from`: the enclosures of the item's devices the composition keeps; the policy
    named `policy` says which spares break it next to them (`Policy.spare_excluded`: under
    "enclosure" (or "switch") a spare may not share an enclosure (or a switch) with them).
    `together_with`: with "same switch", the enclosures of every item device kept; a spare
    must hang off a switch they all share. The engine places one device at a time, so it
    cannot see these rules across the kept devices: they are applied here instead.
    """
    enclosures = snapshot.enclosures

    def switches(enclosure: str) -> set[str]:
        info = enclosures.get(enclosure)
        return set(info.switches) if info else set()

    rule = policies.choice(policy) or policies.NONE
    taken = set(spread_from)
    taken_switches = set().union(*(switches(e) for e in taken)) if taken else set()
    shared: set[str] | None = None
    for enclosure in together_with:
        if enclosure in enclosures:
            shared = switches(enclosure) if shared is None else shared & switches(enclosure)
    out: set[str] = set()
    for device in snapshot.devices.values():
        if device.kind != kind:
            continue
        around = switches(device.enclosure)
        if rule.spare_excluded(device.enclosure, around, taken, taken_switches) or (
            shared is not None and not around & shared
        ):
            out.add(device.id)
    return out


def _replacement_request(
    composition: Composition,
    lost: Allocation,
    host: Host,
    records: Sequence[dict[str, Any]],
    *,
    relax: frozenset[str] = frozenset(),
) -> tuple[PlacementRequest, Snapshot, str]:
    """The engine's request for one spare, and the snapshot it may choose from.

    `relax` drops rules ("latency", "rules", "pool") to look for the nearest alternative.
    """
    spec = composition.spec or {}
    device = lost.device
    snapshot = placement_snapshot()
    host_ref = f"host:{host.pk}"
    if host_ref not in snapshot.hosts:
        raise HealRejected(
            f"Host {host.name} is not usable now (not active); no device can be replaced."
        )
    item, index = (None, None) if lost.gib else _item_for(spec, device, lost.share)
    kind = item.kind if item is not None else device.kind  # none: a slice of memory
    replacing = {lost.pk} | {r["failed"] for r in records}
    kept = [
        a
        for a in Allocation.objects.select_related("device").filter(
            composition=composition, released_at__isnull=True
        )
        if a.pk not in replacing
    ]
    drop: set[str] = set()
    # A share is exempt from the spread and same-switch rules, as the engine places it.
    if item is not None and index is not None and item.share is None and "rules" not in relax:
        items = spec.get("items") or []
        asked = {i["kind"] for i in items}
        same_item = [
            f"enclosure:{a.device.enclosure_id}"
            for a in kept
            if not a.gib
            and a.device.kind == kind
            and _item_for(spec, a.device, a.share)[1] == index
        ]
        together = [
            f"enclosure:{a.device.enclosure_id}"
            for a in kept
            if not a.gib
            and a.device.kind in asked
            and _item_for(spec, a.device, a.share)[1] is not None
        ]
        drop |= spare_exclusions(
            snapshot,
            kind=kind,
            policy=str(spec.get("policy") or "none"),
            spread_from=same_item,
            together_with=together if spec.get("same_switch") else (),
        )
    if device.pool_id is not None and "pool" not in relax:
        # From the same pool: like for like, as the operator grouped the devices.
        drop |= {
            f"device:{pk}"
            for pk in Device.objects.filter(kind=kind)
            .exclude(pool_id=device.pool_id)
            .values_list("pk", flat=True)
        }
    if is_sliced(kind):
        # The manager keeps one slice of a memory device per host.
        drop |= {
            f"device:{pk}"
            for pk in Allocation.objects.filter(
                released_at__isnull=True, gib__isnull=False, composition__host=host
            ).values_list("device_id", flat=True)
        }
    if item is not None and item.share is not None:
        # A composition holds one allocation per device: not a second share of a GPU it
        # holds a share of already (one it keeps, or another lost one's spare).
        drop |= {f"device:{a.device_id}" for a in kept}
    drop &= set(snapshot.devices)
    if drop:
        snapshot = snapshot_without(snapshot, drop)
    request = PlacementRequest(
        items=(item,) if item is not None else (),
        memory_gib=lost.gib or 0,
        host=host_ref,
        max_latency_ns=None if "latency" in relax else spec.get("max_latency_ns"),
        policy="none" if "rules" in relax else str(spec.get("policy") or "none"),
        critical=bool(spec.get("critical")),
        tenant=str(composition.tenant_id),
    )
    return request, snapshot, _what(lost, item)


def _no_spare(
    what: str,
    request: PlacementRequest,
    outcome: Rejection,
    host: Host,
    composition: Composition,
    lost: Allocation,
    records: Sequence[dict[str, Any]],
) -> str:
    """Why no spare exists, for the tenant: what was looked for, under which rules, what the
    engine said, and the nearest alternative ("No spare GPU of model X within 600 ns of
    host h (...) to replace d: ...; nearest alternative: ...")."""
    spec = composition.spec or {}
    rules = []
    chosen = policies.choice(str(spec.get("policy") or "none"))
    if chosen is not None and chosen.spare_words:
        rules.append(chosen.spare_words)
    if spec.get("same_switch"):
        rules.append(policies.SAME_SWITCH.spare_words)
    if lost.device.pool_id is not None:
        rules.append(f"from pool {lost.device.pool.name}" if lost.device.pool else "same pool")
    if request.critical:
        rules.append(policies.CRITICAL.spare_words)
    if request.max_latency_ns:
        text = f"No spare {what} within {request.max_latency_ns} ns of host {host.name}"
    else:
        text = f"No spare {what} that host {host.name} reaches"
    if rules:
        text += f" ({'; '.join(rules)})"
    text += f" to replace {lost.device.name}: {outcome.message.rstrip('.')}"
    return f"{text}; nearest alternative: {_nearest(composition, lost, host, records)}"


def _nearest(
    composition: Composition, lost: Allocation, host: Host, records: Sequence[dict[str, Any]]
) -> str:
    """The closest thing to a spare, found by relaxing the rules one at a time."""
    tries = (
        (frozenset({"latency"}), "over the latency ceiling"),
        (frozenset({"rules"}), "breaking the failure-domain rules"),
        (frozenset({"pool"}), "from another pool"),
        (frozenset({"latency", "rules", "pool"}), "with every rule relaxed"),
    )
    for relax, breaking in tries:
        try:
            request, snapshot, _ = _replacement_request(
                composition, lost, host, records, relax=relax
            )
        except HealRejected:
            break
        outcome = place(request, snapshot)
        if isinstance(outcome, Placement):
            picks = [pick_as_dict(p) for p in (*outcome.devices, *outcome.memory)]
            names = ", ".join(f"{pick_words(p)} at {p['latency_ns']} ns" for p in picks)
            return f"{names}, {breaking}."
    return f"none: nothing of the kind is free that {host.name} reaches; wait for a repair."

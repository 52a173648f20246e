"""Placing what a resize adds, on the composition's own host and under its own rules, and
the plan a preview shows. Reads only; nothing here writes.

The additions are one request to the placement engine, as a composition request is, with
the host fixed: the items to add and the GiB of CXL memory, the composition's latency
ceiling, failure-domain policy, same switch and isolation. The engine applies those rules
among the devices it places; against the devices the composition keeps they are made to
hold the way heal makes them hold for a spare (`composer.services.heal.spare_exclusions`):
the devices that would break them are taken out of the snapshot first. An added device
spreads away from the kept devices of its kind (and model, when it names one); with same
switch, it must hang off a switch every kept device shares. An item that names no model
comes from the pool the composition's devices of its kind come from, when they all come
from one (like for like, as a heal replaces them). A share of a GPU is never of a GPU the
composition holds already; a memory slice never of a memory device it holds a slice of
(the manager keeps one per device and host: the engine's own rule).

A rejection names the rule that blocks and the nearest alternative, found by relaxing the
composition's rules one at a time (latency ceiling, failure-domain rules, pool).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from composer.errors import SpecError
from composer.models import Allocation, Composition
from composer.placement.engine import place
from composer.placement.request import DeviceItem, Note, Placement, PlacementRequest, Rejection
from composer.placement.snapshot import Snapshot
from composer.services.bindings import allocation_words
from composer.services.composition_placement import (
    pick_as_dict,
    placement_as_dict,
    placement_snapshot,
)
from composer.services.heal import pick_words, snapshot_without, spare_exclusions
from composer.services.resize.common import ResizeAsk
from fabric.models import Device

__all__ = ["additions_place", "removal_words", "resize_plan_as_dict"]

_RELAXED = (
    (frozenset({"latency"}), "over the latency ceiling"),
    (frozenset({"rules"}), "breaking the failure-domain rules"),
    (frozenset({"pool"}), "from another pool"),
    (frozenset({"latency", "rules", "pool"}), "with every rule relaxed"),
)


def _enclosure(allocation: Allocation) -> str:
    return f"enclosure:{allocation.device.enclosure_id}"


def _excluded(
    composition: Composition,
    ask: ResizeAsk,
    kept: Sequence[Allocation],
    held: Sequence[Allocation],
    snapshot: Snapshot,
    relax: frozenset[str],
) -> set[str]:
    """The devices of `snapshot` the additions may not take (see the module docstring)."""
    spec = composition.spec or {}
    whole = [i for i in ask.items if i.get("share") is None]
    drop: set[str] = set()
    if whole and "rules" not in relax:
        kinds = {i["kind"] for i in spec.get("items") or []} | {i["kind"] for i in ask.items}
        # Shares and slices are exempt from the spread and same-switch rules, as the engine
        # places them.
        devices = [a for a in kept if a.gib is None and a.share is None]
        together = [_enclosure(a) for a in devices if a.device.kind in kinds]
        for item in whole:
            spread = [
                _enclosure(a)
                for a in devices
                if a.device.kind == item["kind"]
                and (item["model"] is None or a.device.model == item["model"])
            ]
            drop |= spare_exclusions(
                snapshot,
                kind=item["kind"],
                policy=str(spec.get("policy") or "none"),
                spread_from=spread,
                together_with=together if spec.get("same_switch") else (),
            )
    if "pool" not in relax:
        for kind in {i["kind"] for i in ask.items if i["model"] is None}:
            pools = {a.device.pool_id for a in kept if a.gib is None and a.device.kind == kind}
            pool = next(iter(pools)) if len(pools) == 1 else None
            if pool is not None:
                drop |= {
                    f"device:{pk}"
                    for pk in Device.objects.filter(kind=kind)
                    .exclude(pool_id=pool)
                    .values_list("pk", flat=True)
                }
    if any(i.get("share") for i in ask.items):
        # One allocation per device: never a share of a GPU the composition holds.
        drop |= {f"device:{a.device_id}" for a in held}
    return drop & set(snapshot.devices)


def _request(
    composition: Composition,
    ask: ResizeAsk,
    removed: Sequence[Allocation],
    relax: frozenset[str] = frozenset(),
) -> tuple[PlacementRequest, Snapshot]:
    """The engine's request for the additions, and the snapshot it may choose from."""
    spec = composition.spec or {}
    host = composition.host
    assert host is not None  # a ready composition is placed
    snapshot = placement_snapshot()
    held = list(
        Allocation.objects.select_related("device").filter(
            composition=composition, released_at__isnull=True
        )
    )
    going = {a.pk for a in removed}
    kept = [a for a in held if a.pk not in going]
    drop = _excluded(composition, ask, kept, held, snapshot, relax)
    if drop:
        snapshot = snapshot_without(snapshot, drop)
    rules = "rules" not in relax
    request = PlacementRequest(
        items=tuple(
            DeviceItem(i["kind"], i["count"], i["model"], dict(i["minima"]), i.get("share"))
            for i in ask.items
        ),
        memory_gib=ask.memory_gib,
        host=f"host:{host.pk}",
        max_latency_ns=None if "latency" in relax else spec.get("max_latency_ns"),
        policy=str(spec.get("policy") or "none") if rules else "none",
        same_switch=bool(spec.get("same_switch")) and rules,
        critical=bool(spec.get("critical")),
        tenant=str(composition.tenant_id),
    )
    return request, snapshot


def _nearest(
    composition: Composition, ask: ResizeAsk, removed: Sequence[Allocation], fallback: Note
) -> Note:
    """The closest thing to a plan, found by relaxing the composition's rules one at a
    time; the engine's own nearest alternative when none places."""
    spec = composition.spec or {}
    for relax, breaking in _RELAXED:
        if relax == {"latency"} and not spec.get("max_latency_ns"):
            continue
        policy = str(spec.get("policy") or "none")
        if relax == {"rules"} and policy == "none" and not spec.get("same_switch"):
            continue
        outcome = place(*_request(composition, ask, removed, relax))
        if isinstance(outcome, Placement):
            picks = [pick_as_dict(p) for p in (*outcome.devices, *outcome.memory)]
            names = ", ".join(f"{pick_words(p)} at {p['latency_ns']} ns" for p in picks)
            return Note(f"{names}, {breaking}.")
    return fallback


def additions_place(
    composition: Composition, ask: ResizeAsk, removed: Sequence[Allocation]
) -> Placement | Rejection:
    """Place what `ask` adds to `composition` on its host, on a fresh snapshot (the devices
    `removed` are still held: the additions are bound before they go). A rejection carries
    the nearest alternative. Raises SpecError (field "add") when the engine finds the
    additions invalid."""
    host = composition.host
    assert host is not None  # a ready composition is placed
    request, snapshot = _request(composition, ask, removed)
    if request.host not in snapshot.hosts:
        return Rejection(
            "no_capacity",
            f"Host {host.name} is not usable now (not active); nothing can be added to "
            f"{composition.name}.",
        )
    outcome = place(request, snapshot)
    if isinstance(outcome, Rejection):
        if outcome.code == "invalid":
            raise SpecError(outcome.message, field="add")
        outcome = replace(
            outcome,
            message=f"Nothing fits on {host.name} for what {composition.name} would add: "
            f"{outcome.message}",
            nearest=_nearest(composition, ask, removed, outcome.nearest),
        )
    return outcome


def removal_words(removed: Sequence[Allocation]) -> str:
    """What goes, for sentences: "GPU gpu-a-02-1, CXL memory mem-a-01-1 (256 GiB)"."""
    return ", ".join(allocation_words(a) for a in removed)


def resize_plan_as_dict(
    composition: Composition,
    outcome: Placement | Rejection | None,
    removed: Sequence[Allocation],
    spec: dict[str, Any],
) -> dict[str, Any]:
    """A resize's plan as JSON, in the stored shape of a plan (`placement_as_dict`: what is
    added, with its paths and the explanation, or the rejection), plus what is removed
    (`remove`) and the composition's request once resized (`spec`). `outcome` None: the
    resize adds nothing."""
    host = composition.host
    assert host is not None  # a ready composition is placed
    if outcome is None:
        plan: dict[str, Any] = {
            "ok": True,
            "host": f"host:{host.pk}",
            "host_name": host.name,
            "devices": [],
            "memory": [],
            "score": None,
            "explanation": [],
            "funnel": [],
        }
    else:
        plan = placement_as_dict(outcome)
    plan["remove"] = [
        {
            "allocation": a.pk,
            "device": f"device:{a.device_id}",
            "name": a.device.name,
            "kind": a.device.kind,
            "gib": a.gib,
            "share": a.share,
        }
        for a in removed
    ]
    plan["spec"] = spec
    if plan["ok"] and removed:
        when = "once what is added is bound and verified" if outcome is not None else "at once"
        plan["explanation"].append(
            f"Removes {removal_words(removed)}: unbound from {host.name} {when}, then given "
            "back to the pools."
        )
    return plan

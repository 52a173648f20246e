"""What each kind of row must look like, given a discovery report: the eight sync steps.

Devices carry the rules that matter most: their state follows the manager (FAILED when
critical, BOUND when bound whole, FREE otherwise) but keeps an operator's MAINTENANCE
always (short of vanishing), is never FREE while a composition holds the device (its
claims, read under the rows' locks, or the GiB its slices hold) and otherwise keeps the
composer's RESERVED unless the device failed, and their pool is the most specific
matching one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from fabric.capacity import held_state
from fabric.choices import ComponentState, DeviceState, Health, LinkState
from fabric.drivers.base import Binding, Inventory
from fabric.holders import held_states
from fabric.models import Device, Enclosure, Host, Link, Port, PowerFeed, Rack, Switch
from fabric.services.pools import PoolMatcher
from fabric.services.sync.diff import (
    COMPONENT_PRESENCE,
    DEVICE_PRESENCE,
    FLAG_PRESENCE,
    Presence,
    SyncContext,
    sync_kind,
)


def latency_reported(attributes: Mapping[str, Any]) -> bool:
    """Whether a link's latency is the manager's figure: not when its driver says
    `latency_reported` False (the figure is then a placeholder of the manager's)."""
    return attributes.get("latency_reported", True) is not False


# The largest value a rack unit or height column holds (PositiveSmallIntegerField).
_MAX_UNITS = 32767


def clip_units(value: Any) -> int:
    """A reported unit or height as the columns hold it: at least 1, at most `_MAX_UNITS`
    (a manager's nonsense is clipped rather than failing the whole sync)."""
    return min(max(int(value), 1), _MAX_UNITS)


def bindings_by_device(
    bindings: Iterable[Binding],
) -> tuple[dict[str, str], dict[str, list[Binding]]]:
    whole: dict[str, str] = {}
    slices: dict[str, list[Binding]] = defaultdict(list)
    for binding in bindings:
        if binding.size_gib is None:
            whole[binding.device_id] = binding.host_id
        else:
            slices[binding.device_id].append(binding)
    return whole, slices


def device_state(health: str, current: str | None, bound: bool, held: str | None = None) -> str:
    """The state a device must have, given what the manager says and what it was.

    `bound`: the manager reports the device bound to a host (a memory device: at least one
    slice of it). `held`: what the compositions' holdings imply (`fabric.capacity.held_state`
    of their claims and of the GiB its slices hold), so that a held device never becomes
    FREE: one that recovers goes back to RESERVED or BOUND.

    An operator's MAINTENANCE is never cleared by discovery, not even by a failure: the
    health column says it failed, and when it recovers it must not become FREE (and
    placeable) behind the operator's back; only `maintenance_set(on=False)` ends it.
    """
    if current == DeviceState.MAINTENANCE:
        return DeviceState.MAINTENANCE  # an operator took it out of service
    if health == Health.CRITICAL:
        return DeviceState.FAILED
    if bound:
        return DeviceState.BOUND
    if held is not None:
        return held  # a composition holds it (claimed, or a slice still holds GiB)
    if current == DeviceState.RESERVED:
        return DeviceState.RESERVED  # the composer holds it for a composition being built
    return DeviceState.FREE


def apply_inventory(
    ctx: SyncContext, inventory: Inventory, bindings: list[Binding], step: Callable[[str], None]
) -> None:
    """Run the eight kind steps in dependency order."""

    def with_presence(values: dict[str, Any], presence: Presence) -> dict[str, Any]:
        values[presence.field] = presence.present
        return values

    def component_state(obj: Any) -> str:
        # Keep an operator's MAINTENANCE; a row that comes back becomes ACTIVE again.
        if obj is not None and obj.state == ComponentState.MAINTENANCE:
            return ComponentState.MAINTENANCE
        return ComponentState.ACTIVE

    sync_kind(
        ctx,
        key="racks",
        model=Rack,
        presence=FLAG_PRESENCE,
        infos=inventory.racks,
        desired=lambda i, _o: with_presence(
            {
                "name": i.name,
                "location": i.location,
                "height_u": clip_units(i.height_u),
                "health": i.health,
                "attributes": dict(i.attributes),
            },
            FLAG_PRESENCE,
        ),
        label=lambda o: o.name,
    )
    step("racks")
    sync_kind(
        ctx,
        key="power_feeds",
        model=PowerFeed,
        presence=FLAG_PRESENCE,
        infos=inventory.power_feeds,
        desired=lambda i, _o: with_presence(
            {
                "name": i.name,
                "rack_id": ctx.ref("racks", i.rack_id, f"power feed {i.name}"),
                "capacity_kw": float(i.capacity_kw),
                "health": i.health,
                "attributes": dict(i.attributes),
            },
            FLAG_PRESENCE,
        ),
        label=lambda o: o.name,
    )
    step("power_feeds")

    def placed(i: Any, what: str) -> dict[str, Any]:
        rack_id = ctx.ref("racks", i.rack_id, what)
        return {
            "rack_id": rack_id,
            # A unit means nothing outside a rack: only kept while the box sits in one.
            "rack_unit": clip_units(i.rack_unit) if rack_id and i.rack_unit else None,
            "height_u": clip_units(i.height_u),
            "power_feed_id": ctx.ref("power_feeds", i.power_feed_id, what),
        }

    sync_kind(
        ctx,
        key="switches",
        model=Switch,
        presence=COMPONENT_PRESENCE,
        infos=inventory.switches,
        desired=lambda i, o: {
            "name": i.name,
            "vendor": i.vendor,
            "model": i.model,
            "serial": i.serial,
            "firmware": i.firmware,
            "protocol": i.protocol,
            "tier": i.tier,
            **placed(i, f"switch {i.name}"),
            "health": i.health,
            "attributes": dict(i.attributes),
            "state": component_state(o),
        },
        label=lambda o: o.name,
    )
    step("switches")
    sync_kind(
        ctx,
        key="hosts",
        model=Host,
        presence=COMPONENT_PRESENCE,
        infos=inventory.hosts,
        desired=lambda i, o: {
            "name": i.name,
            "vendor": i.vendor,
            "model": i.model,
            "serial": i.serial,
            "cores": int(i.cores),
            "memory_gib": int(i.memory_gib),
            **placed(i, f"host {i.name}"),
            "health": i.health,
            "attributes": dict(i.attributes),
            "state": component_state(o),
        },
        label=lambda o: o.name,
    )
    step("hosts")
    sync_kind(
        ctx,
        key="enclosures",
        model=Enclosure,
        presence=COMPONENT_PRESENCE,
        infos=inventory.enclosures,
        desired=lambda i, o: {
            "name": i.name,
            "kind": i.kind,
            "vendor": i.vendor,
            "model": i.model,
            "serial": i.serial,
            "slots": int(i.slots),
            **placed(i, f"enclosure {i.name}"),
            "health": i.health,
            "attributes": dict(i.attributes),
            "state": component_state(o),
        },
        label=lambda o: o.name,
    )
    ctx.enclosure_racks = dict(
        Enclosure.objects.filter(manager=ctx.manager).values_list("pk", "rack_id")
    )
    step("enclosures")

    whole, slices = bindings_by_device(bindings)
    matcher = PoolMatcher.load()
    ctx.labels["pools"] = dict(matcher.names)
    claims: dict[int, str] = {}  # device -> what the compositions' claims imply

    def claims_read(rows: list[Any]) -> None:
        # Under the rows' locks: a claim, bind or release of them waits for this sync.
        claims.update(held_states([row.pk for row in rows]))

    def held(o: Any) -> str | None:
        if o is None:
            return None
        return held_state(claimed=claims.get(o.pk), allocated_gib=o.allocated_gib)

    def device_values(i: Any, o: Any) -> dict[str, Any]:
        enclosure_id = ctx.ref("enclosures", i.enclosure_id, f"device {i.name}")
        host_ext = whole.get(i.external_id)
        bound_host_id = ctx.ref("hosts", host_ext, f"binding of {i.name}") if host_ext else None
        attributes = dict(i.attributes)
        if i.external_id in slices:
            parts = sorted(slices[i.external_id], key=lambda b: (b.host_id, b.binding_id))
            attributes["bound_gib"] = sum(b.size_gib or 0 for b in parts)
            attributes["slices"] = [{"host": b.host_id, "size_gib": b.size_gib} for b in parts]
        return {
            "name": i.name,
            "kind": i.kind,
            "vendor": i.vendor,
            "model": i.model,
            "serial": i.serial,
            "firmware": i.firmware,
            "enclosure_id": enclosure_id,
            "slot": int(i.slot),
            "memory_gib": int(i.memory_gib),
            "capacity_gb": int(i.capacity_gb),
            "health": i.health,
            "attributes": attributes,
            "state": device_state(
                i.health,
                o.state if o else None,
                host_ext is not None or i.external_id in slices,
                held(o),
            ),
            "bound_host_id": bound_host_id,
            "pool_id": matcher.match(
                kind=i.kind, model=i.model, rack_id=ctx.enclosure_racks.get(enclosure_id or 0)
            ),
        }

    sync_kind(
        ctx,
        key="devices",
        model=Device,
        presence=DEVICE_PRESENCE,
        infos=inventory.devices,
        desired=device_values,
        label=lambda o: o.name,
        vanish_extra=lambda _o: {"bound_host_id": None},
        on_locked=claims_read,
    )
    step("devices")

    owner_keys = {"switch": "switches", "host": "hosts", "enclosure": "enclosures"}

    def port_values(i: Any, _o: Any) -> dict[str, Any] | None:
        owner_key = owner_keys.get(i.owner_kind)
        owner = ctx.ref(owner_key, i.owner_id, f"port {i.external_id}") if owner_key else None
        if owner is None:
            return None  # a port must have exactly one owner: skip it until the owner shows
        return {
            "name": i.name,
            "switch_id": owner if i.owner_kind == "switch" else None,
            "host_id": owner if i.owner_kind == "host" else None,
            "enclosure_id": owner if i.owner_kind == "enclosure" else None,
            "number": int(i.number),
            "role": i.role,
            "lanes": int(i.lanes),
            "speed_gts": float(i.speed_gts),
            "health": i.health,
            "attributes": dict(i.attributes),
            "is_present": True,
        }

    sync_kind(
        ctx,
        key="ports",
        model=Port,
        presence=FLAG_PRESENCE,
        infos=inventory.ports,
        desired=port_values,
        label=lambda o: o.external_id,
    )
    step("ports")

    def link_values(i: Any, _o: Any) -> dict[str, Any] | None:
        a = ctx.ref("ports", i.a_port_id, f"link {i.external_id}")
        b = ctx.ref("ports", i.b_port_id, f"link {i.external_id}")
        if a is None or b is None:
            return None
        return {
            "a_port_id": a,
            "b_port_id": b,
            # 0: the manager gives none (placement estimates it from hop counts, and says so).
            "latency_ns": int(i.latency_ns) if latency_reported(i.attributes) else 0,
            "bandwidth_gbps": float(i.bandwidth_gbps),
            "state": i.state,
            "health": i.health,
            "attributes": dict(i.attributes),
            "is_present": True,
        }

    sync_kind(
        ctx,
        key="links",
        model=Link,
        presence=FLAG_PRESENCE,
        infos=inventory.links,
        desired=link_values,
        label=lambda o: o.external_id,
        vanish_extra=lambda _o: {"state": LinkState.DOWN},
    )
    step("links")

"""`Snapshot.replacing`: a changed snapshot by patching, equal to `Snapshot.build` on the
changed inventory. Pure Python.

Why: `Snapshot.build` derives every index from scratch (every host and device sorted, every
reach group summed), which is right once per decision taken from the database but most of
the time of a stream of decisions on one evolving inventory: a benchmark that replays a
trace pod by pod (bench/packing_product.py), a batch placed one composition after another.
A decision changes a host or two and a few devices, so `replacing` copies the snapshot's
mappings, replaces the entries of the hosts and devices given, and patches only the index
entries they touch: devices per (kind, model) per enclosure, usable devices per enclosure,
partly shared devices per host, free cores, GPUs and shares per reach group, hosts per
reach group in free-core order, the largest host, the fabric's cores per GPU. The result
equals a rebuild field by field and in the order of every mapping
(tests/composer/placement/test_incremental.py compares them on random changes), and starts
with an empty memo, as a rebuilt one does. `departed` (what `taking` took out, for
`returning`) is carried as it was: a caller of `replacing` hands devices back itself.

What it does not patch it rebuilds (same answer, slower): a host that is new or whose name
or switches change (they order the hosts and index the switches), a device kind or
(kind, model) the snapshot has none of, and a `Snapshot` with fields this module does not
know (a field added to the snapshot must be patched here too, or the test that lists them
fails).
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Callable, Iterable, Mapping
from dataclasses import fields, replace
from typing import TYPE_CHECKING, TypeVar

from fabric.kinds import balanced

if TYPE_CHECKING:  # snapshot.py imports this module inside `Snapshot.replacing`
    from composer.placement.snapshot import DeviceInfo, HostInfo, Snapshot

__all__ = ["KNOWN_FIELDS", "replacing"]

# Every field of `Snapshot` this module knows how to carry or patch.
KNOWN_FIELDS = frozenset(
    {
        "hosts",
        "enclosures",
        "devices",
        "reach",
        "switch_names",
        "holders",
        "critical",
        "sliced",
        "oversubscription",
        "host_order",
        "by_kind",
        "by_model",
        "enclosures_by_switch",
        "hosts_by_switch",
        "groups",
        "group_hosts",
        "host_group",
        "enclosure_groups",
        "cores_per_gpu",
        "free_in_enclosure",
        "group_cores",
        "group_gpus",
        "group_shares",
        "group_by_cores",
        "group_cores_sorted",
        "max_cores",
        "memo",
        "shared_on",
        "departed",
        "workload",
    }
)
K = TypeVar("K")


def replacing(
    snapshot: Snapshot,
    hosts: Iterable[HostInfo],
    devices: Iterable[DeviceInfo],
    removed: Iterable[str],
) -> Snapshot:
    """See `Snapshot.replacing`."""
    from composer.placement.snapshot import Snapshot, usable

    new_hosts, new_devices, gone = list(hosts), list(devices), set(removed)
    old_hosts = snapshot.hosts
    if {f.name for f in fields(Snapshot)} != KNOWN_FIELDS or any(
        h.id not in old_hosts
        or (old_hosts[h.id].name, old_hosts[h.id].switches) != (h.name, h.switches)
        for h in new_hosts
    ):
        return _rebuild(snapshot, new_hosts, new_devices, gone)

    device_map = dict(snapshot.devices)
    out: list[DeviceInfo] = []  # index entries to drop
    into: list[DeviceInfo] = []  # index entries to add
    # Partly shared devices are in no whole-device index but in `shared_on`, per host: the
    # hosts whose list a change touches are worked out again.
    sharing: set[str] = set()
    reorder = False  # a device kept whose place in build's order may have changed
    for device in new_devices:
        old = device_map.get(device.id)
        keep = usable(device) and device.id not in gone
        same = old is not None and _slot(old) == _slot(device)
        if old is not None and not (same and keep):
            out.append(old)
        if keep:
            device_map[device.id] = device
            if not same:
                into.append(device)
            # A device replaced keeps its place in the mapping; a new one, or one whose
            # (enclosure, name, id) changed, needs the mapping sorted again (a taken slice
            # or share changes neither: no sort of every device for it).
            reorder = reorder or old is None or _order(old) != _order(device)
        else:
            device_map.pop(device.id, None)
        sharing.update(h for h in (old and old.shared_host, device.shared_host) if h)
    for device_id in gone:
        old = device_map.pop(device_id, None)
        if old is not None:
            out.append(old)
            if old.shared_host:
                sharing.add(old.shared_host)
    out = [d for d in out if d.shared_host is None]
    into = [d for d in into if d.shared_host is None]
    if any(
        d.kind not in snapshot.by_kind or (d.kind, d.model) not in snapshot.by_model for d in into
    ):
        return _rebuild(snapshot, new_hosts, new_devices, gone)
    if reorder:  # build keeps devices by (enclosure, name, id)
        device_map = dict(sorted(device_map.items(), key=lambda kv: _order(kv[1])))

    by_kind = _patched(snapshot.by_kind, out, into, device_map, lambda d: d.kind)
    by_model = _patched(snapshot.by_model, out, into, device_map, lambda d: (d.kind, d.model))
    free_in = dict(snapshot.free_in_enclosure)
    for device in out:
        free_in[device.enclosure] -= 1
        if not free_in[device.enclosure]:
            del free_in[device.enclosure]
    for device in into:
        free_in[device.enclosure] = free_in.get(device.enclosure, 0) + 1
    if into:
        free_in = dict(sorted(free_in.items()))
    kept = balanced()  # the kinds whose balance with cores scoring keeps (GPUs)
    gpu_enclosures = {d.enclosure for d in (*out, *into) if d.kind in kept}
    gpu_indexes = [by_kind.get(k, {}) for k in sorted(kept)]
    group_gpus = list(snapshot.group_gpus)
    for group in {g for e in gpu_enclosures for g in snapshot.enclosure_groups.get(e, ())}:
        group_gpus[group] = sum(
            len(index.get(e, ())) for index in gpu_indexes for e in snapshot.groups[group]
        )

    group_shares = _group_shares(snapshot, device_map, {d.id for d in new_devices} | gone)

    host_map = dict(old_hosts)
    for host in new_hosts:
        host_map[host.id] = host
    group_cores = list(snapshot.group_cores)
    by_cores = list(snapshot.group_by_cores)
    cores_sorted = list(snapshot.group_cores_sorted)
    moved = {h.id for h in new_hosts if h.cores_free != old_hosts[h.id].cores_free}
    for group in {snapshot.host_group[h] for h in moved}:
        members = snapshot.group_hosts[group]
        group_cores[group] = sum(host_map[h].cores_free for h in members)
        order = [h for h in by_cores[group] if h not in moved]
        for h in members:
            if h in moved:
                insort(order, h, key=lambda i: (host_map[i].cores_free, host_map[i].name, i))
        by_cores[group] = tuple(order)
        cores_sorted[group] = tuple(host_map[h].cores_free for h in order)
    gpus = sum(len(v) for index in gpu_indexes for v in index.values())
    cores = sum(h.cores_free for h in host_map.values())
    # What no change of free hosts and devices touches (reach, switches, reach groups,
    # tenants) is the old snapshot's, shared: a snapshot is never changed in place.
    return replace(
        snapshot,
        hosts=host_map,
        devices=device_map,
        by_kind=by_kind,
        by_model=by_model,
        cores_per_gpu=cores / gpus if gpus else 0.0,
        free_in_enclosure=free_in,
        group_cores=tuple(group_cores),
        group_gpus=tuple(group_gpus),
        group_shares=group_shares,
        group_by_cores=tuple(by_cores),
        group_cores_sorted=tuple(cores_sorted),
        max_cores=_max_cores(snapshot, old_hosts, new_hosts, host_map),
        shared_on=_shared_on(snapshot.shared_on, sharing, device_map, new_devices),
        memo=_lineage(snapshot, new_devices, gone),
    )


def _lineage(snapshot: Snapshot, devices: list[DeviceInfo], gone: set[str]) -> dict[object, object]:
    """The patched snapshot's memo: `LINEAGE` (`snapshot`, and the enclosures of every
    device given or removed, before and after), unless `snapshot` has a lineage itself."""
    from composer.placement.snapshot import LINEAGE

    if LINEAGE in snapshot.memo:
        return {}
    old = snapshot.devices
    touched = {d.enclosure for d in devices}
    touched.update(old[d.id].enclosure for d in devices if d.id in old)
    touched.update(old[d].enclosure for d in gone if d in old)
    return {LINEAGE: (snapshot, frozenset(touched))}


def _group_shares(
    snapshot: Snapshot, device_map: Mapping[str, DeviceInfo], touched: set[str]
) -> tuple[int, ...]:
    """`Snapshot.group_shares` patched: each device given or removed takes out the free
    shares it counted before (if it was partly shared) and puts in what it counts now."""
    kept, host_group = balanced(), snapshot.host_group
    shares = list(snapshot.group_shares)
    for device_id in touched:
        for device, sign in ((snapshot.devices.get(device_id), -1), (device_map.get(device_id), 1)):
            if device is None or device.shared_host is None or device.kind not in kept:
                continue
            group = host_group.get(device.shared_host)
            if group is not None:
                shares[group] += sign * device.shares_free
    return tuple(shares)


def _shared_on(
    before: Mapping[str, tuple[str, ...]],
    hosts: set[str],
    device_map: dict[str, DeviceInfo],
    changed: list[DeviceInfo],
) -> Mapping[str, tuple[str, ...]]:
    """`Snapshot.shared_on` with the lists of `hosts` worked out again from the devices they
    held and the devices now shared on them, in build's order: each list by (free shares,
    name, id), the hosts in the order build first meets them (their first device in
    (enclosure, name, id) order)."""
    if not hosts:
        return before
    result = {h: ids for h, ids in before.items() if h not in hosts}
    held: dict[str, set[str]] = {h: set(before.get(h, ())) for h in hosts}
    for device in changed:
        if device.shared_host in held:
            held[device.shared_host].add(device.id)
    for host, ids in held.items():
        now = [device_map[i] for i in ids if i in device_map and device_map[i].shared_host == host]
        if now:
            now.sort(key=lambda d: (d.shares_free, d.name, d.id))
            result[host] = tuple(d.id for d in now)
    return {
        h: result[h]
        for h in sorted(result, key=lambda h: min(_order(device_map[i]) for i in result[h]))
    }


def _slot(device: DeviceInfo) -> tuple[str, str, str, str, bool]:
    """What places a device in the indexes and in the devices' order (a partly shared
    device is in none of the whole-device indexes)."""
    return (device.kind, device.model, device.enclosure, device.name, device.shared_host is None)


def _order(device: DeviceInfo) -> tuple[str, str, str]:
    return (device.enclosure, device.name, device.id)


def _patched(
    index: Mapping[K, Mapping[str, tuple[str, ...]]],
    out: list[DeviceInfo],
    into: list[DeviceInfo],
    device_map: dict[str, DeviceInfo],
    key: Callable[[DeviceInfo], K],
) -> dict[K, Mapping[str, tuple[str, ...]]]:
    """`index` (by_kind or by_model) with `out` dropped and `into` added, in build's order:
    each list by (name, id), enclosures in id order, keys in the order build first meets
    them (their first device in (enclosure, name, id) order)."""
    result: dict[K, Mapping[str, tuple[str, ...]]] = dict(index)
    dropped: dict[tuple[K, str], set[str]] = {}
    added: dict[tuple[K, str], list[str]] = {}
    for device in out:
        dropped.setdefault((key(device), device.enclosure), set()).add(device.id)
    for device in into:
        added.setdefault((key(device), device.enclosure), []).append(device.id)
    if not dropped and not added:
        return result
    copied: dict[K, dict[str, tuple[str, ...]]] = {}
    reordered: set[K] = set()
    for k, enclosure in {*dropped, *added}:
        per = copied.get(k)
        if per is None:
            per = copied[k] = dict(result[k])
            result[k] = per
        drop = dropped.get((k, enclosure), set())
        ids = [i for i in per.get(enclosure, ()) if i not in drop]
        ids += added.get((k, enclosure), [])
        ids.sort(key=lambda i: (device_map[i].name, i))
        if not ids:
            per.pop(enclosure, None)
            continue
        if enclosure not in per:
            reordered.add(k)
        per[enclosure] = tuple(ids)
    for k in reordered:
        result[k] = dict(sorted(copied[k].items()))
    result = {k: v for k, v in result.items() if v}

    def first(k: K) -> tuple[str, str, str]:
        enclosure, ids = next(iter(result[k].items()))
        return (enclosure, device_map[ids[0]].name, ids[0])

    return {k: result[k] for k in sorted(result, key=first)}


def _max_cores(
    snapshot: Snapshot,
    olds: Mapping[str, HostInfo],
    new_hosts: list[HostInfo],
    host_map: dict[str, HostInfo],
) -> int:
    """The most cores any host has: patched unless a host that held it lost some."""
    best = snapshot.max_cores
    for host in new_hosts:
        old = olds[host.id]
        if (
            max(old.cores_total, old.cores_free) == best
            and max(host.cores_total, host.cores_free) < best
        ):
            return max((max(h.cores_total, h.cores_free) for h in host_map.values()), default=0)
    return max([best, *(max(h.cores_total, h.cores_free) for h in new_hosts)])


def _rebuild(
    snapshot: Snapshot, hosts: list[HostInfo], devices: list[DeviceInfo], gone: set[str]
) -> Snapshot:
    """`Snapshot.build` on the changed inventory: what `replacing` falls back to."""
    from composer.placement.snapshot import Snapshot

    host_map = {**snapshot.hosts, **{h.id: h for h in hosts}}
    device_map = {**snapshot.devices, **{d.id: d for d in devices}}
    return Snapshot.build(
        hosts=host_map.values(),
        enclosures=snapshot.enclosures.values(),
        devices=[d for d in device_map.values() if d.id not in gone],
        reach=snapshot.reach,
        switch_names=snapshot.switch_names,
        holders=snapshot.holders,
        critical=snapshot.critical,
        sliced=snapshot.sliced,
        oversubscription=snapshot.oversubscription,
        departed=snapshot.departed,
        workload=snapshot.workload,
    )

"""The inventory snapshot the placement engine decides on: frozen, indexed, pure Python.

A `Snapshot` describes what is free (hosts' cores and memory, usable devices, free GiB of
CXL memory), where it is (enclosure, switches, rack, power feed, failure domains), and how
each host reaches each enclosure (best latency and bottleneck bandwidth), precomputed from
`fabric.topology` so that `place()` does no graph search. `Snapshot.build(...)` derives the
indexes once: free devices per (kind, model) per enclosure and per switch, hosts per switch,
and "reach groups" (hosts that reach the same set of enclosures), so that a decision touches
only candidates.

The records it is built from (`HostInfo`, `EnclosureInfo`, `DeviceInfo`, `Reach`) are
`composer.placement.records`. Nothing here touches the database:
`composer.placement.load.build_snapshot()` is the one function that reads it and calls
`Snapshot.build`. Tests build snapshots by hand. How each
kind is handed out and which kind keeps the cores' balance is fabric's one declaration
(`fabric.kinds`, plain values, no Django).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TypeVar

from composer.placement.records import DeviceInfo, EnclosureInfo, HostInfo, Reach, usable
from composer.placement.shareable import given_back, shared_out
from composer.placement.workload import WorkloadShape
from fabric.kinds import balanced, is_sliced

# The records a snapshot is made of live in composer.placement.records; they are named here
# too, where every caller of the engine has always found them.
__all__ = [
    "LINEAGE",
    "DeviceInfo",
    "EnclosureInfo",
    "HostInfo",
    "Reach",
    "Snapshot",
    "usable",
]

DEFAULT_OVERSUBSCRIPTION = 16.0

# The memo key of a snapshot patched from another (`Snapshot.replacing`): (that snapshot,
# the enclosures any of whose devices changed). Candidate lists of enclosures not changed
# are the other snapshot's (`constraints.item_candidates`), worked out once on it: the
# occurrences of a booking, each the shared base snapshot less a few devices, filter only
# the enclosures their holds touch. One level only: a snapshot patched from one that has a
# lineage gets none (no chain keeps old snapshots alive).
LINEAGE = "lineage"

K = TypeVar("K")


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything placement needs, frozen. Build it with `Snapshot.build`, which derives the
    indexes; never construct the index fields by hand.

    `holders`: switch or enclosure id -> tenants that hold something there (for critical
    isolation); `critical`: switch or enclosure id -> the tenant that holds it critically
    (no other tenant may enter); `sliced`: host id -> the memory devices that already hold
    a slice for that host (a fabric manager keeps one slice of a device per host, so a host
    cannot take a second one). All empty until compositions exist.

    Partly shared devices are in `devices` but in none of the whole-device indexes (by kind,
    by model, free per enclosure, the GPUs a reach group sees): `shared_on` lists them per
    host they are bound to, fewest free shares first, and `group_shares` sums the free
    shares of the GPUs among them per reach group (GPU capacity that wants cores too).
    `departed`: devices `taking` took out (whole, or with nothing left free), as they were
    then, so that `returning` can give them back by id. `workload`: the request shapes the
    fabric expects, with their weights (empty: none known); the default policy's scoring
    keeps room for them.
    """

    hosts: Mapping[str, HostInfo]
    enclosures: Mapping[str, EnclosureInfo]
    devices: Mapping[str, DeviceInfo]
    reach: Mapping[str, Mapping[str, Reach]]  # host -> enclosure -> best path
    switch_names: Mapping[str, str]
    holders: Mapping[str, frozenset[str]]
    critical: Mapping[str, str]
    sliced: Mapping[str, frozenset[str]]
    oversubscription: float
    # --- indexes (derived by build) ---
    host_order: tuple[str, ...]
    by_kind: Mapping[str, Mapping[str, tuple[str, ...]]]  # kind -> enclosure -> devices
    by_model: Mapping[tuple[str, str], Mapping[str, tuple[str, ...]]]
    enclosures_by_switch: Mapping[str, tuple[str, ...]]
    hosts_by_switch: Mapping[str, tuple[str, ...]]
    groups: tuple[frozenset[str], ...]  # reach groups: the enclosures some hosts reach
    group_hosts: tuple[tuple[str, ...], ...]
    host_group: Mapping[str, int]
    enclosure_groups: Mapping[str, tuple[int, ...]]
    cores_per_gpu: float  # the fabric's free cores per free GPU: the balance to keep
    free_in_enclosure: Mapping[str, int]  # usable devices per enclosure
    group_cores: tuple[int, ...]  # free cores of each reach group's hosts
    group_gpus: tuple[int, ...]  # free GPUs each reach group reaches
    group_shares: tuple[int, ...]  # free shares of the GPUs partly shared on a group's hosts
    group_by_cores: tuple[tuple[str, ...], ...]  # each group's hosts, fewest free cores first
    group_cores_sorted: tuple[tuple[int, ...], ...]  # their free cores, for bisection
    max_cores: int  # the most cores any host has: the scale of a core-fit penalty
    shared_on: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    departed: Mapping[str, DeviceInfo] = field(default_factory=dict)
    workload: tuple[WorkloadShape, ...] = ()
    # What decisions on this snapshot share, worked out on first use: candidate lists
    # filtered for a (kind, model, minima, blocked) key (constraints.item_candidates) and
    # what is derived from them, per reach group or per host (shared.py). The snapshot never
    # changes; `taking` builds a new one, whose memo starts empty.
    memo: dict[object, object] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def build(
        cls,
        *,
        hosts: Iterable[HostInfo],
        enclosures: Iterable[EnclosureInfo],
        devices: Iterable[DeviceInfo],
        reach: Mapping[str, Mapping[str, Reach]],
        switch_names: Mapping[str, str] | None = None,
        holders: Mapping[str, frozenset[str]] | None = None,
        critical: Mapping[str, str] | None = None,
        sliced: Mapping[str, frozenset[str]] | None = None,
        oversubscription: float = DEFAULT_OVERSUBSCRIPTION,
        departed: Mapping[str, DeviceInfo] | None = None,
        workload: Iterable[WorkloadShape] = (),
    ) -> Snapshot:
        """A snapshot with its indexes. Devices are kept in id order within an enclosure,
        hosts in name order, so that every decision is deterministic. Partitionable devices
        with no free GiB, and partly shared ones with no free share, are left out."""
        host_map = {h.id: h for h in sorted(hosts, key=lambda h: (h.name, h.id))}
        enclosure_map = {e.id: e for e in enclosures}
        device_map = {
            d.id: d for d in sorted(devices, key=lambda d: (d.enclosure, d.name, d.id)) if usable(d)
        }
        by_kind: dict[str, dict[str, list[str]]] = {}
        by_model: dict[tuple[str, str], dict[str, list[str]]] = {}
        shared_on: dict[str, list[DeviceInfo]] = {}
        for device in device_map.values():
            if device.shared_host is not None:  # never a candidate for a whole device
                shared_on.setdefault(device.shared_host, []).append(device)
                continue
            by_kind.setdefault(device.kind, {}).setdefault(device.enclosure, []).append(device.id)
            by_model.setdefault((device.kind, device.model), {}).setdefault(
                device.enclosure, []
            ).append(device.id)
        enclosures_by_switch: dict[str, list[str]] = {}
        for enclosure in enclosure_map.values():
            for switch in enclosure.switches:
                enclosures_by_switch.setdefault(switch, []).append(enclosure.id)
        hosts_by_switch: dict[str, list[str]] = {}
        for host in host_map.values():
            for switch in host.switches:
                hosts_by_switch.setdefault(switch, []).append(host.id)
        group_index: dict[frozenset[str], int] = {}
        group_hosts: list[list[str]] = []
        host_group: dict[str, int] = {}
        for host_id in host_map:
            key = frozenset(reach.get(host_id, {}))
            index = group_index.setdefault(key, len(group_index))
            if index == len(group_hosts):
                group_hosts.append([])
            group_hosts[index].append(host_id)
            host_group[host_id] = index
        groups = tuple(group_index)
        enclosure_groups: dict[str, list[int]] = {}
        for index, members in enumerate(groups):
            for enclosure_id in members:
                enclosure_groups.setdefault(enclosure_id, []).append(index)
        # The kinds whose balance with cores scoring keeps (GPUs): `gpus` counts them all.
        kept = [by_kind.get(k, {}) for k in sorted(balanced())]
        gpus = sum(len(v) for index in kept for v in index.values())
        free_in_enclosure: dict[str, int] = {}
        for device in device_map.values():
            if device.shared_host is None:
                free_in_enclosure[device.enclosure] = free_in_enclosure.get(device.enclosure, 0) + 1
        group_gpus = tuple(
            sum(len(index.get(e, ())) for index in kept for e in members) for members in groups
        )
        group_cores = tuple(sum(host_map[h].cores_free for h in hs) for hs in group_hosts)
        # The free shares of partly shared GPUs count in their group's GPU capacity
        # (scoring's stranded GPUs) though they are in no whole-device index.
        group_shares = [0] * len(group_hosts)
        balanced_kinds = balanced()
        for host_id, ds in shared_on.items():
            if host_id in host_group:
                group_shares[host_group[host_id]] += sum(
                    d.shares_free for d in ds if d.kind in balanced_kinds
                )
        group_by_cores = tuple(
            tuple(sorted(hs, key=lambda h: (host_map[h].cores_free, host_map[h].name, h)))
            for hs in group_hosts
        )
        cores = sum(h.cores_free for h in host_map.values())
        return cls(
            hosts=host_map,
            enclosures=enclosure_map,
            devices=device_map,
            reach={h: dict(r) for h, r in reach.items()},
            switch_names=dict(switch_names or {}),
            holders=dict(holders or {}),
            critical=dict(critical or {}),
            sliced=dict(sliced or {}),
            oversubscription=oversubscription,
            host_order=tuple(host_map),
            by_kind=_freeze(by_kind),
            by_model=_freeze(by_model),
            enclosures_by_switch={k: tuple(v) for k, v in enclosures_by_switch.items()},
            hosts_by_switch={k: tuple(v) for k, v in hosts_by_switch.items()},
            groups=groups,
            group_hosts=tuple(tuple(v) for v in group_hosts),
            host_group=host_group,
            enclosure_groups={k: tuple(v) for k, v in enclosure_groups.items()},
            cores_per_gpu=cores / gpus if gpus else 0.0,
            free_in_enclosure=free_in_enclosure,
            group_cores=group_cores,
            group_gpus=group_gpus,
            group_shares=tuple(group_shares),
            group_by_cores=group_by_cores,
            group_cores_sorted=tuple(
                tuple(host_map[h].cores_free for h in hs) for hs in group_by_cores
            ),
            max_cores=max((max(h.cores_total, h.cores_free) for h in host_map.values()), default=0),
            shared_on={
                host: tuple(d.id for d in sorted(ds, key=lambda d: (d.shares_free, d.name, d.id)))
                for host, ds in shared_on.items()
            },
            departed=dict(departed or {}),
            workload=tuple(workload),
        )

    def taking(
        self,
        *,
        devices: Iterable[str] = (),
        memory_gib: Mapping[str, int] | None = None,
        cores: Mapping[str, int] | None = None,
        host_memory_gib: Mapping[str, int] | None = None,
        shares: Mapping[str, tuple[str, int]] | None = None,
    ) -> Snapshot:
        """The same inventory with some devices, GiB of memory, cores and host memory taken.
        `shares`: device id -> (host id, shares taken): the device becomes (or stays) partly
        shared on that host; one with no share left leaves the snapshot, as a device taken
        whole does (both kept in `departed` for `returning`).

        This is the hook for allocations: `build_snapshot` will subtract what compositions
        hold through it once they exist, and benchmarks fill a fabric with it.
        """
        gone = set(devices)
        memory_gib, shares = memory_gib or {}, shares or {}
        missing = set(shares) - set(self.devices)
        if missing:
            raise ValueError(f"No share is free on {', '.join(sorted(missing))}.")
        # A partly shared device is never taken whole: its other shares are still held.
        whole_and_shared = sorted(
            d for d in gone if d in shares or (d in self.devices and self.devices[d].shared_host)
        )
        if whole_and_shared:
            raise ValueError(f"Shared, so not taken whole: {', '.join(whole_and_shared)}.")
        # Only what changes is visited, and the indexes are patched rather than rebuilt
        # (`replacing`, equal to a rebuild): a booking's admission takes a few devices out
        # of a 10,000-device snapshot once per occurrence.
        changed: list[DeviceInfo] = []
        removed: list[str] = []
        departed = dict(self.departed)
        touched = [
            self.devices[d] for d in gone | set(memory_gib) | set(shares) if d in self.devices
        ]
        # In the snapshot's order (build's, which `replacing` keeps), as a rebuild visits
        # them: `departed` keeps that order.
        for device in sorted(touched, key=lambda d: (d.enclosure, d.name, d.id)):
            device_id = device.id
            if device_id in gone:
                departed[device_id] = device
                removed.append(device_id)
                continue
            if device_id in memory_gib:
                device = replace(device, free_gib=max(0, device.free_gib - memory_gib[device_id]))
                if is_sliced(device.kind) and not device.free_gib:
                    departed[device_id] = device
                    removed.append(device_id)
                    continue
            if device_id in shares:
                device = shared_out(device, *shares[device_id])
                if not device.shares_free:
                    departed[device_id] = device
                    removed.append(device_id)
                    continue
            changed.append(device)
        cores, host_memory_gib = cores or {}, host_memory_gib or {}
        hosts = [
            replace(
                h,
                cores_free=max(0, h.cores_free - cores.get(h.id, 0)),
                memory_gib_free=max(0, h.memory_gib_free - host_memory_gib.get(h.id, 0)),
            )
            for host_id in sorted(set(cores) | set(host_memory_gib))
            if (h := self.hosts.get(host_id)) is not None
        ]
        if not changed and not removed and not hosts and departed == self.departed:
            return self._with(self.hosts.values(), self.devices.values(), departed)
        taken = self.replacing(hosts=hosts, devices=changed, removed=removed)
        return replace(taken, departed=departed)  # its memo: the lineage only

    def returning(
        self,
        *,
        devices: Iterable[str | DeviceInfo] = (),
        memory_gib: Mapping[str, int] | None = None,
        cores: Mapping[str, int] | None = None,
        host_memory_gib: Mapping[str, int] | None = None,
        shares: Mapping[str, tuple[str, int]] | None = None,
    ) -> Snapshot:
        """The same inventory with what a departing composition held given back: whole
        devices (by id when this snapshot or one it was taken from had them, else as a
        `DeviceInfo`), GiB of memory (up to the device's `memory_gib` attribute), cores (up
        to the host's `cores_total` when known), host memory and shares (device id -> (host
        id, shares): the host must be the one the device is shared on; a device with all of
        its shares back is whole and free again). The inverse of `taking`."""
        back = dict(self.devices)
        departed = dict(self.departed)

        def known(ref: str | DeviceInfo) -> DeviceInfo:
            if isinstance(ref, DeviceInfo):
                return ref
            device = back.get(ref) or departed.get(ref)
            if device is None:
                raise ValueError(f"{ref} was never in this snapshot: give it as a DeviceInfo.")
            return device

        def put(device: DeviceInfo) -> None:
            back[device.id] = device
            departed.pop(device.id, None)

        for ref in devices:
            device = known(ref)
            if device.shared_host is not None:  # its shares come back through `shares`
                raise ValueError(f"{device.id} is shared: give its shares back, not the device.")
            put(device)
        for device_id, gib in (memory_gib or {}).items():
            device = known(device_id)
            size = int(device.attributes.get("memory_gib", 0)) or device.free_gib + gib
            put(replace(device, free_gib=min(size, device.free_gib + gib)))
        for device_id, (host_id, share) in (shares or {}).items():
            put(given_back(known(device_id), host_id, share))
        cores, host_memory_gib = cores or {}, host_memory_gib or {}
        hosts = []
        for h in self.hosts.values():
            free = h.cores_free + cores.get(h.id, 0)
            hosts.append(
                replace(
                    h,
                    cores_free=min(free, h.cores_total) if h.cores_total else free,
                    memory_gib_free=h.memory_gib_free + host_memory_gib.get(h.id, 0),
                )
            )
        return self._with(hosts, back.values(), departed)

    def _with(
        self,
        hosts: Iterable[HostInfo],
        devices: Iterable[DeviceInfo],
        departed: Mapping[str, DeviceInfo],
    ) -> Snapshot:
        """This snapshot's fabric with other hosts and devices (a fresh memo)."""
        return Snapshot.build(
            hosts=hosts,
            enclosures=self.enclosures.values(),
            devices=devices,
            reach=self.reach,
            switch_names=self.switch_names,
            holders=self.holders,
            critical=self.critical,
            sliced=self.sliced,
            oversubscription=self.oversubscription,
            departed=departed,
            workload=self.workload,
        )

    def replacing(
        self,
        *,
        hosts: Iterable[HostInfo] = (),
        devices: Iterable[DeviceInfo] = (),
        removed: Iterable[str] = (),
    ) -> Snapshot:
        """The same inventory with `hosts` and `devices` (by id) replaced or added and the
        devices `removed` left out: equal to `Snapshot.build` on that inventory, but patched
        rather than rebuilt (composer.placement.incremental), for streams of decisions."""
        from composer.placement.incremental import replacing

        return replacing(self, hosts, devices, removed)

    def switch_name(self, switch_id: str) -> str:
        """A switch's name for explanations (its id when unnamed)."""
        return self.switch_names.get(switch_id, switch_id)


def _freeze(index: Mapping[K, dict[str, list[str]]]) -> dict[K, dict[str, tuple[str, ...]]]:
    return {key: {e: tuple(ids) for e, ids in per.items()} for key, per in index.items()}

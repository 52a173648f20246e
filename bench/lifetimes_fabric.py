"""The fabrics bench/bench_lifetimes.py replays the trace on, as the placement engine sees them.

Two inventories, both plain `composer.placement.snapshot` values (`HostInfo`,
`EnclosureInfo`, `DeviceInfo`, `Reach`) that `Snapshot.build` indexes:

* fixed-ratio servers (`fixed_inventory`): each server a host with its cores and memory and
  its GPUs in an enclosure of its own that only it reaches, as a server's GPUs are;
* composable (`composable_inventory`): hosts with cores and local memory, GPUs in pooled
  chassis per model and CXL memory in pooled boxes of partitionable devices, every host
  reaching every enclosure.

`Fabric` keeps what the pods placed so far hold (cores, host memory, whole GPUs, GPU shares,
GiB slices of CXL memory and which memory devices hold a slice for which host) and builds
the snapshot the next decision sees from the inventory less those holdings, so that a
departure gives everything back exactly; the decision itself is always the product's
`place()`. (The bookkeeping is done here, over `Snapshot.build`, once per decision;
`Snapshot.replacing`, as bench/packing_product.py uses it, would be faster.)
Units: the engine only compares and adds amounts, so here its cores carry the
trace's milli-cores and its GiB fields carry MiB, and nothing is rounded.

GPU shares (a pod asking a fraction of one GPU): written against the engine's interface
(`DeviceItem.share`, `DeviceInfo.shares_free` and `shared_host`, `DevicePick.share`). Until
the engine has it (`SHARES`, read from the dataclasses' fields) a fraction asks a whole GPU,
and the benchmark says so in its output.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from composer.placement.request import DeviceItem, DevicePick, Placement, PlacementRequest
from composer.placement.snapshot import DeviceInfo, EnclosureInfo, HostInfo, Reach, Snapshot
from fabric.kinds import is_sliced, measured

FULL = 1000  # thousandths of one GPU
MEMORY = measured("gib").name  # the kind handed out in GiB slices: CXL memory
SHARES = {"share"} <= {f.name for f in fields(DeviceItem)} and {
    "shares_free",
    "shared_host",
} <= {f.name for f in fields(DeviceInfo)}
ROUNDED = "fractions rounded up to whole GPUs: shares not yet in the engine"
# The trace says nothing of paths: one latency everywhere, and no bandwidth charged against
# uplinks (a bottleneck of 0 GB/s), so that only cores, memory and devices decide.
PATH = Reach(latency_ns=500, bottleneck_gbps=0.0, hops=1)
POLICY = "pack"  # the product's policy for filling hosts rather than spreading across them


@dataclass(frozen=True)
class Server:
    """A fixed-ratio server shape of the trace's node list (milli-cores, MiB)."""

    cpu: int
    mem: int
    gpus: int
    model: str


@dataclass
class Inventory:
    hosts: list[HostInfo]
    enclosures: list[EnclosureInfo]
    devices: list[DeviceInfo]
    reach: dict[str, dict[str, Reach]]


def _gpu(device_id: str, name: str, model: str, enclosure: str) -> DeviceInfo:
    extra: dict[str, Any] = {"shares_free": FULL, "shared_host": None} if SHARES else {}
    return DeviceInfo(device_id, name, "gpu", model, enclosure, **extra)


def fixed_inventory(servers: list[Server]) -> Inventory:
    """Each server a host on a switch of its own, its GPUs in an enclosure only it reaches."""
    hosts, enclosures, devices = [], [], []
    reach: dict[str, dict[str, Reach]] = {}
    for i, s in enumerate(servers):
        host, enclosure, switch = f"h{i}", f"e{i}", (f"s{i}",)
        hosts.append(HostInfo(host, f"server-{i:05d}", s.cpu, s.mem, s.cpu, switches=switch))
        reach[host] = {}
        if s.gpus:
            enclosures.append(
                EnclosureInfo(enclosure, f"gpus-{i:05d}", switch, device_total=s.gpus)
            )
            devices += [
                _gpu(f"{enclosure}-{j}", f"gpu-{i:05d}-{j}", s.model, enclosure)
                for j in range(s.gpus)
            ]
            reach[host] = {enclosure: PATH}
    return Inventory(hosts, enclosures, devices, reach)


def composable_inventory(
    hosts: list[tuple[int, int]],
    gpus: dict[str, int],
    cxl: int,
    *,
    chassis: int,
    cxl_device: int,
    cxl_box: int,
) -> Inventory:
    """A host per (milli-cores, local MiB) of `hosts`; per model, `gpus[model]` GPUs
    in chassis of `chassis`; `cxl` MiB of CXL memory in devices of `cxl_device` MiB (the
    last one smaller), `cxl_box` devices to a box. One switch: every host reaches all."""
    switch = ("fabric",)
    host_list = [
        HostInfo(f"h{i}", f"host-{i:05d}", cores, local, cores, switches=switch)
        for i, (cores, local) in enumerate(hosts)
    ]
    enclosures, devices = [], []
    for model, count in sorted(gpus.items()):
        for c in range(0, count, chassis):
            eid = f"g-{model}-{c // chassis}"
            size = min(chassis, count - c)
            enclosures.append(EnclosureInfo(eid, eid, switch, device_total=size))
            devices += [_gpu(f"{eid}-{j}", f"{eid}-{j}", model, eid) for j in range(size)]
    sizes = [min(cxl_device, cxl - start) for start in range(0, cxl, cxl_device)]
    for b in range(0, len(sizes), cxl_box):
        eid = f"m-{b // cxl_box}"
        box = sizes[b : b + cxl_box]
        enclosures.append(EnclosureInfo(eid, eid, switch, device_total=len(box)))
        devices += [
            DeviceInfo(f"{eid}-{j}", f"{eid}-{j}", MEMORY, "cxl", eid, free_gib=gib)
            for j, gib in enumerate(box)
        ]
    everywhere = {e.id: PATH for e in enclosures}
    return Inventory(host_list, enclosures, devices, {h.id: everywhere for h in host_list})


def gpu_item(k: int, milli: int, model: str | None = None) -> DeviceItem:
    """What a pod asks of GPUs: a share of one when it asks a fraction and the engine has
    shares, else `k` whole GPUs (a fraction rounded up to one)."""
    if k == 1 and milli < FULL and SHARES:
        extra: dict[str, Any] = {"share": milli}
        return DeviceItem("gpu", 1, model, **extra)
    return DeviceItem("gpu", k, model)


def request_for(cpu: int, host_mem: int, cxl: int, k: int, milli: int) -> PlacementRequest:
    """The request of a pod: its cores and host memory, its CXL memory, its GPUs."""
    items = (gpu_item(k, milli),) if k else ()
    return PlacementRequest(
        items=items, memory_gib=cxl, cores=cpu, host_memory_gib=host_mem, policy=POLICY
    )


@dataclass
class Holding:
    """What one placed pod holds, to be given back when it departs."""

    host: str
    cores: int
    host_mem: int
    whole: tuple[str, ...] = ()
    shares: tuple[tuple[str, int], ...] = ()
    slices: tuple[tuple[str, int], ...] = ()


@dataclass
class Fabric:
    """An inventory and what is held of it; `snapshot()` is what the next decision sees."""

    inventory: Inventory
    hosts: dict[str, HostInfo] = field(init=False)
    base: dict[str, DeviceInfo] = field(init=False)
    free: dict[str, DeviceInfo] = field(init=False)
    taken: set[str] = field(default_factory=set)
    gib_used: dict[str, int] = field(default_factory=dict)
    share_used: dict[str, tuple[str, int]] = field(default_factory=dict)
    sliced: dict[str, set[str]] = field(default_factory=dict)
    _cached: Snapshot | None = None

    def __post_init__(self) -> None:
        self.hosts = {h.id: h for h in self.inventory.hosts}
        self.base = {d.id: d for d in self.inventory.devices}
        self.free = dict(self.base)

    def snapshot(self) -> Snapshot:
        """The inventory less what is held, built once per change."""
        if self._cached is None:
            self._cached = Snapshot.build(
                hosts=self.hosts.values(),
                enclosures=self.inventory.enclosures,
                devices=self.free.values(),
                reach=self.inventory.reach,
                sliced={h: frozenset(d) for h, d in self.sliced.items() if d},
            )
        return self._cached

    def _refresh(self, device_id: str) -> None:
        base = self.base[device_id]
        self.free.pop(device_id, None)
        if device_id in self.taken:
            return
        if is_sliced(base.kind):
            left = base.free_gib - self.gib_used.get(device_id, 0)
            if left > 0:
                self.free[device_id] = replace(base, free_gib=left)
        elif device_id in self.share_used:
            host, used = self.share_used[device_id]
            if used < FULL:
                extra: dict[str, Any] = {"shares_free": FULL - used, "shared_host": host}
                self.free[device_id] = replace(base, **extra)
        else:
            self.free[device_id] = base

    def _host(self, host_id: str, cores: int, mem: int) -> None:
        h = self.hosts[host_id]
        self.hosts[host_id] = replace(
            h, cores_free=h.cores_free + cores, memory_gib_free=h.memory_gib_free + mem
        )

    def take(self, request: PlacementRequest, plan: Placement) -> Holding:
        """Hold what `plan` gives `request`."""
        self._cached = None
        host = plan.host
        self._host(host, -request.cores, -request.host_memory_gib)
        whole, shares = [], []
        for pick in plan.devices:
            share = _share(pick)
            if share is None:
                self.taken.add(pick.device)
                whole.append(pick.device)
            else:
                _, used = self.share_used.get(pick.device, (host, 0))
                self.share_used[pick.device] = (host, used + share)
                shares.append((pick.device, share))
            self._refresh(pick.device)
        for pick in plan.memory:
            gib = pick.gib or 0
            self.gib_used[pick.device] = self.gib_used.get(pick.device, 0) + gib
            self.sliced.setdefault(host, set()).add(pick.device)
            self._refresh(pick.device)
        slices = tuple((p.device, p.gib or 0) for p in plan.memory)
        return Holding(
            host, request.cores, request.host_memory_gib, tuple(whole), tuple(shares), slices
        )

    def give(self, held: Holding) -> None:
        """Give back everything a departing pod held."""
        self._cached = None
        self._host(held.host, held.cores, held.host_mem)
        for device in held.whole:
            self.taken.discard(device)
            self._refresh(device)
        for device, share in held.shares:
            host, used = self.share_used[device]
            if used - share > 0:
                self.share_used[device] = (host, used - share)
            else:
                del self.share_used[device]  # unbound: whole again, for any host
            self._refresh(device)
        for device, gib in held.slices:
            self.gib_used[device] -= gib
            self.sliced[held.host].discard(device)
            self._refresh(device)


def _share(pick: DevicePick) -> int | None:
    share = getattr(pick, "share", None)
    return int(share) if share is not None else None

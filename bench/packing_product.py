"""The product's placement engine replaying the Alibaba trace (policy `composer` of
bench/bench_packing.py): snapshots and requests built from the trace, `place()` deciding.

Nothing here decides: every pod becomes a `PlacementRequest`, `composer.placement.engine.
place()` chooses the host and the GPUs on a `Snapshot` of what is free, and the replay only
takes what the plan says (`Snapshot.replacing`, the product's incremental update: a rebuild
per pod, as `Snapshot.taking` does, costs most of a run). The protocol, the workload, the
sampling and the modes are bench_packing's; this module maps them onto the product.

The cluster as a fabric (`fabric(cluster, mode)`): each trace node is a host (id and name
the node's index, so hosts keep the trace's order) whose GPUs sit in an enclosure of their
own, `gpus-<node>`, one device per GPU with the node's model.

* fixed: the node's host and enclosure hang off a switch of their own; only that host
  reaches that enclosure (a server with its GPUs inside).
* domain: the 8-host switch domains of `bench_packing.switch_domains`: the domain's hosts
  and enclosures hang off one switch, and each host reaches every enclosure of its domain.
* all: one switch; every host reaches every enclosure.

Every path has the same latency and bandwidth, and the hosts' uplinks are sized so that
the bandwidth budget never binds: the trace says nothing of either, so neither should
decide.

Units. The product counts whole cores and GiB; the trace gives CPU milli and MiB, and most
pods ask fractions of a core (5,603 of the default trace's 8,152) or of a GiB. Rounding up
would turn many fits into misfits that the protocol does not have, so hosts and pods are
scaled instead: one "core" of the snapshot is one CPU milli, one "GiB" of host memory is
one MiB. Every fit stays exact, and the engine's scoring is unchanged by the scale (the
core fit is a share of the largest host, the CPU:GPU balance a ratio of free cores to free
GPUs).

A pod: cores from `cpu_milli`, host memory from `memory_mib`, `num_gpu` whole GPUs as one
`DeviceItem(kind="gpu", count=num_gpu)`, a fraction (`num_gpu == 1`, `gpu_milli < 1000`)
as `DeviceItem(kind="gpu", count=1, share=gpu_milli)` (thousandths of one GPU, on a GPU
bound to the pod's host). The GPUs of one pod are of one model: a pod without `gpu_spec`
asks any model, and when the plan mixes models (it can only where several models are
reachable: all hosts pooled) each model is asked for on its own and the best-scoring plan
kept; a `gpu_spec` "A|B" is asked for model by model in that way from the start (ties: the
first in the spec's order). The request's `policy` is the product's default, "none"
(policy `composer`), or "pack" (`composer-pack`: the snuggest core fit).

Shared GPUs. Requests with a `share` need the engine's shared GPUs (`DeviceItem.share`,
`DeviceInfo.shares_free` and `shared_host`, `DevicePick.share`). Where the product does not
have them yet (`SHARES` is false), fractional pods cannot be asked for: they are skipped
(neither placed nor dropped, counted in `Run.skipped`) and the run is reported as
"whole-GPU pods only", never as the protocol's figure.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import fields, replace

from bench.packing_data import FULL, Cluster, Pod, switch_domains
from composer.placement.engine import place
from composer.placement.request import DeviceItem, Placement, PlacementRequest
from composer.placement.shareable import shared_out
from composer.placement.shares import shares_taken
from composer.placement.snapshot import DeviceInfo, EnclosureInfo, HostInfo, Reach, Snapshot
from composer.placement.workload import WorkloadShape, shapes

__all__ = ["SHARES", "ProductSim", "fabric", "requests"]

SHARES = "share" in DeviceItem.__dataclass_fields__ and "shares_free" in {
    f.name for f in fields(DeviceInfo)
}
POLICY = {"composer": "none", "composer-pack": "pack"}
LATENCY_NS = 600  # every path alike: the trace has no topology beyond the modes
PATH_GBPS = 32.0
UPLINK_GBPS = 1024.0  # x the snapshot's oversubscription: never the constraint that binds


def host_id(n: int) -> str:
    return f"node-{n:04d}"


def fabric(cluster: Cluster, mode: str) -> Snapshot:
    """The trace's cluster as a snapshot in `mode` (fixed, domain or all), all of it free."""
    nodes = range(len(cluster.cpu))
    if mode == "fixed":
        switch = [f"switch-{n:04d}" for n in nodes]
    elif mode == "domain":
        domains = switch_domains(cluster)
        switch = [f"switch-d{int(d):03d}" for d in domains]
    elif mode == "all":
        switch = ["switch-all"] * len(cluster.cpu)
    else:
        raise ValueError(f"mode must be fixed, domain or all; got {mode!r}")
    hosts = [
        HostInfo(
            host_id(n),
            host_id(n),
            int(cluster.cpu[n]),
            int(cluster.mem[n]),
            int(cluster.cpu[n]),
            UPLINK_GBPS,
            0.0,
            (switch[n],),
        )
        for n in nodes
    ]
    with_gpus = [n for n in nodes if cluster.gpus[n]]
    enclosures = [
        EnclosureInfo(
            f"gpus-{n:04d}", f"gpus-{n:04d}", (switch[n],), device_total=int(cluster.gpus[n])
        )
        for n in with_gpus
    ]
    extra = {"shares_free": FULL} if SHARES else {}
    devices = [
        DeviceInfo(
            f"gpu-{n:04d}-{g}",
            f"gpu-{n:04d}-{g}",
            "gpu",
            cluster.models[int(cluster.model[n])],
            f"gpus-{n:04d}",
            **extra,  # type: ignore[arg-type]
        )
        for n in with_gpus
        for g in range(int(cluster.gpus[n]))
    ]
    path = Reach(LATENCY_NS, PATH_GBPS, 1)
    behind: dict[str, dict[str, Reach]] = {}
    for enclosure in enclosures:
        behind.setdefault(enclosure.switches[0], {})[enclosure.id] = path
    if mode == "fixed":
        reach = {host_id(n): {f"gpus-{n:04d}": path} if cluster.gpus[n] else {} for n in nodes}
    else:
        reach = {host_id(n): behind.get(switch[n], {}) for n in nodes}
    return Snapshot.build(hosts=hosts, enclosures=enclosures, devices=devices, reach=reach)


def requests(pod: Pod, models: list[str], policy: str = "none") -> list[PlacementRequest]:
    """The requests a pod is asked as, in order: one that lets the engine choose the model
    (a pod without `gpu_spec`), or one per allowed model (with one, or when the first plan
    mixes models). Empty: no model the pod allows is in the cluster. A fraction needs the
    engine's shared GPUs (`SHARES`)."""
    base = PlacementRequest(cores=pod.cpu, host_memory_gib=pod.mem, policy=policy)
    if not pod.k:
        return [base]
    share = {"share": pod.milli} if pod.milli < FULL else {}
    allowed: list[str | None] = [None, *models]
    if pod.spec:
        allowed = [m for m in pod.spec.split("|") if m in models]

    def item(model: str | None) -> DeviceItem:
        return DeviceItem("gpu", pod.k, model, **share)  # type: ignore[arg-type]

    return [replace(base, items=(item(m),)) for m in allowed]


def expected(pods: Sequence[Pod]) -> tuple[WorkloadShape, ...]:
    """The trace's typical pods as the snapshot's expected workload (`Snapshot.workload`),
    as FGD takes them: the most frequent shapes covering 95 % of the trace's pods. A
    `gpu_spec` of one model names it; of several, any model."""
    return shapes(
        (
            p.cpu,
            p.k,
            p.milli if p.k and p.milli < FULL else None,
            p.spec if p.spec and "|" not in p.spec else None,
        )
        for p in pods
    )


class ProductSim:
    """The product deciding, pod by pod, with bench_packing's simulator interface:
    `place(pod) -> bool` and `allocated` (GPU milli). Checks each plan it takes (the
    host has the cores and memory, the GPUs are free and of one model), so that a wrong
    plan fails the run rather than flattering it."""

    def __init__(
        self, cluster: Cluster, mode: str, policy: str = "composer", pods: Sequence[Pod] = ()
    ):
        self.models = cluster.models
        self.policy = POLICY[policy]
        self.snapshot = replace(fabric(cluster, mode), workload=expected(pods))
        self.allocated = 0
        self.skipped = 0
        self.decisions = 0
        self.deciding = 0.0  # seconds in place()
        self.updating = 0.0  # seconds in Snapshot.replacing

    def place(self, pod: Pod) -> bool:
        if pod.k and pod.milli < FULL and not SHARES:
            self.skipped += 1
            return True  # not dropped: never asked (see the module docstring)
        if not pod.cpu and not pod.mem and not pod.k:
            return True  # asks for nothing: fits anywhere, takes nothing
        plan = self.decide(requests(pod, self.models, self.policy))
        if plan is None:
            return False
        self.take(pod, plan)
        return True

    def decide(self, asked: list[PlacementRequest]) -> Placement | None:
        """The plan for the pod: the first request's, unless it mixes models (or names one
        of several allowed), then the best-scoring of the requests per model."""
        started = time.perf_counter()
        best: Placement | None = None
        for index, request in enumerate(asked):
            outcome = place(request, self.snapshot)
            self.decisions += 1
            anyone = index == 0 and bool(request.items) and request.items[0].model is None
            if not isinstance(outcome, Placement):
                if anyone:
                    break  # no model fits if any model does not
                continue
            if anyone:
                if len({self.snapshot.devices[p.device].model for p in outcome.devices}) <= 1:
                    best = outcome
                    break
                continue
            if best is None or outcome.score > best.score:
                best = outcome
        self.deciding += time.perf_counter() - started
        return best

    def take(self, pod: Pod, plan: Placement) -> None:
        started = time.perf_counter()
        snapshot = self.snapshot
        host = snapshot.hosts[plan.host]
        picked = [snapshot.devices[p.device] for p in plan.devices]
        if host.cores_free < pod.cpu or host.memory_gib_free < pod.mem:
            raise AssertionError(f"{plan.host} lacks the cores or memory of {pod}")
        if len(picked) != pod.k or len({d.id for d in picked}) != pod.k:
            raise AssertionError(f"{pod} got {[d.id for d in picked]}")
        if len({d.model for d in picked}) > 1 or (
            pod.spec and picked and picked[0].model not in pod.spec.split("|")
        ):
            raise AssertionError(f"{pod} got models {[d.model for d in picked]}")
        changed: list[DeviceInfo] = []
        removed = [p.device for p in plan.devices if p.share is None]
        for device_id, (host_id, share) in shares_taken(plan).items():
            if share != pod.milli:
                raise AssertionError(f"{pod} got {share} of {device_id}")
            device = shared_out(snapshot.devices[device_id], host_id, share)  # never over
            if device.shares_free:
                changed.append(device)
            else:
                removed.append(device_id)
        self.snapshot = snapshot.replacing(
            hosts=[
                replace(
                    host,
                    cores_free=host.cores_free - pod.cpu,
                    memory_gib_free=host.memory_gib_free - pod.mem,
                )
            ],
            devices=changed,
            removed=removed,
        )
        self.allocated += pod.gpu
        self.updating += time.perf_counter() - started

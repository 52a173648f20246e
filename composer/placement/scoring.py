"""Ranking: which enclosures a host should take devices from, which host, and the score.

Pure Python. Preferences, strongest first:

1. devices behind the host's own switch (shortest path, no inter-switch link used);
2. fragmentation: take from enclosures that are already partly used before untouched
   ones, and from the smallest free block that fits, so large free blocks stay whole;
3. lower latency (estimated from hop counts, and said to be, where the fabric manager gives
   none).

Hosts are ranked by how the request's cores fit them and by the CPU:GPU balance they leave.
By default compositions spread across hosts: the host with the most free cores first, and
a host the tenant already has a composition on after the others (a host is a failure
domain: one host's loss should not take all of a tenant's compositions). With the "pack"
policy a request's cores fit a host's free cores snugly instead (a small request on a big
host strands the big host's cores for GPU-heavy work). Either way the GPUs and cores left in
the host's reach group should stay near the fabric's own ratio (`Snapshot.cores_per_gpu`),
so that neither GPUs without cores nor cores without GPUs are left behind. The score is 100
minus penalties; the explanation names each one. How hosts are ranked (spread or pack), and
its words, is the request's policy's (`composer.placement.policies`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import composer.placement.fragmentation as fragmentation
import composer.placement.policies as policies
from composer.placement.policies import CORE_FIT_WEIGHT, TENANT_HOST_PENALTY
from composer.placement.request import DevicePick, Note, PlacementRequest
from composer.placement.snapshot import HostInfo, Snapshot
from fabric.latency import ESTIMATED_HOP_LATENCY_NS

__all__ = [
    "CORE_FIT_WEIGHT",
    "TENANT_HOST_PENALTY",
    "balance",
    "core_fit",
    "enclosure_order",
    "group_balance",
    "host_rank",
    "latency_words",
    "plan_points",
    "plan_score",
    "plan_words",
    "spreads",
    "tenant_host_penalty",
]

OWN_SWITCH_PENALTY = 10.0  # per device not behind the host's own switch, scaled to share
UNTOUCHED_PENALTY = 8.0  # per untouched enclosure broken into
LATENCY_PER_US = 4.0  # per microsecond of mean latency
BALANCE_WEIGHT = 10.0  # drift of the reach group's cores-per-GPU from the fabric's


def enclosure_order(snapshot: Snapshot, host: HostInfo, free_in: dict[str, int]) -> object:
    """A key function ranking enclosures for `host`: own switch first, then partly used
    before untouched, then nearest. `free_in` counts the candidate devices per enclosure."""
    reach = snapshot.reach.get(host.id, {})
    own = set(host.switches)
    enclosures = snapshot.enclosures

    def key(enclosure_id: str) -> tuple[float, ...]:
        info = enclosures[enclosure_id]
        path = reach.get(enclosure_id)
        untouched = 1 if free_in.get(enclosure_id, 0) >= info.device_total > 0 else 0
        return (
            0 if own.intersection(info.switches) else 1,
            untouched,
            path.latency_ns if path else math.inf,
        )

    return key


def latency_words(mean_latency: float, picks: Sequence[DevicePick]) -> str:
    """The mean path latency, said as measured or as estimated: where the fabric manager
    gives no latency for some links of the paths, each of them counts a stated
    ESTIMATED_HOP_LATENCY_NS (routing over them is by hop count), never a silent 0."""
    if not any(p.estimated_hops for p in picks):
        return f"mean path latency {mean_latency:.0f} ns."
    return (
        f"mean path latency about {mean_latency:.0f} ns, estimated from hop counts: the "
        "fabric manager reports no latency for some links on these paths, and each such hop "
        f"is counted as {ESTIMATED_HOP_LATENCY_NS} ns."
    )


def spreads(request: PlacementRequest) -> bool:
    """Whether the request spreads across hosts (its policy's say: every one but "pack")."""
    return policies.selected(request).spreads_hosts


def host_rank(
    request: PlacementRequest, snapshot: Snapshot, host: HostInfo, gpus: int
) -> tuple[float, str]:
    """A penalty for building on `host` (lower is better; ties by name): how the request's
    cores fit the host (`core_fit`), whether the tenant is there already (spread), and how
    far the host's reach group drifts from the fabric's cores-per-GPU ratio once `gpus` GPUs
    and the cores are taken."""
    if fragmentation.applies(request):  # the default policy's score (fragmentation.py)
        penalty = fragmentation.host_penalty(request, snapshot, host)
        return (penalty + tenant_host_penalty(request, host), host.name)
    penalty = core_fit(request, snapshot, host) + tenant_host_penalty(request, host)
    return (penalty + balance(request, snapshot, host, gpus), host.name)


def core_fit(request: PlacementRequest, snapshot: Snapshot, host: HostInfo) -> float:
    """On the fabric's scale, the free cores the request would leave idle on `host` (pack:
    the fullest host that fits first) or the cores that would be taken there (spread: the
    emptiest host first). Monotonic in the host's free cores either way, so a group's hosts
    rank in their free-core order (the engine walks it one way or the other)."""
    idle = (host.cores_free - request.cores) / max(snapshot.max_cores, 1)
    return policies.selected(request).core_fit(idle)


def tenant_host_penalty(request: PlacementRequest, host: HostInfo) -> float:
    """Spread: a host the tenant already has a composition on ranks after the others."""
    return policies.selected(request).tenant_host_penalty(request, host)


def balance(request: PlacementRequest, snapshot: Snapshot, host: HostInfo, gpus: int) -> float:
    """How far the host's reach group drifts from the fabric's cores-per-GPU ratio once the
    request is taken (the same for every host of the group)."""
    return group_balance(request, snapshot, snapshot.host_group[host.id], gpus)


def group_balance(request: PlacementRequest, snapshot: Snapshot, group: int, gpus: int) -> float:
    """`balance` for reach group `group`."""
    ratio = snapshot.cores_per_gpu
    if not ratio or not gpus:
        return 0.0
    cores_left = max(0, snapshot.group_cores[group] - request.cores)
    gpus_left = max(0, snapshot.group_gpus[group] - gpus)
    drift = math.log((cores_left + 1) / (gpus_left + 1) / ratio)
    return BALANCE_WEIGHT * min(abs(drift), 3.0) / 3.0


def plan_score(
    request: PlacementRequest,
    snapshot: Snapshot,
    host: HostInfo,
    picks: Sequence[DevicePick],
    host_penalty: float,
) -> tuple[float, list[Note]]:
    """The plan's score (100 minus penalties) and the sentences that explain it (switch names
    for operators only)."""
    score = plan_points(snapshot, host, picks, host_penalty)
    return score, plan_words(request, snapshot, host, picks, host_penalty, score)


def _facts(
    snapshot: Snapshot, host: HostInfo, picks: Sequence[DevicePick]
) -> tuple[int, float, set[str], list[str]]:
    """What the score and its words read of the picks: how many sit outside the host's own
    switches, their mean latency, the enclosures used and those of them untouched before."""
    own = set(host.switches)
    enclosures = snapshot.enclosures
    outside = sum(1 for p in picks if not own.intersection(enclosures[p.enclosure].switches))
    mean_latency = sum(p.latency_ns for p in picks) / len(picks)
    used = {p.enclosure for p in picks}
    untouched = [
        e
        for e in used
        if enclosures[e].device_total
        and snapshot.free_in_enclosure.get(e, 0) >= enclosures[e].device_total
    ]
    return outside, mean_latency, used, untouched


def plan_points(
    snapshot: Snapshot, host: HostInfo, picks: Sequence[DevicePick], host_penalty: float
) -> float:
    """The plan's score alone (100 minus penalties): the engine scores every plan it
    compares and words only the one it returns (`plan_words`)."""
    penalty = host_penalty
    if picks:
        outside, mean_latency, _, untouched = _facts(snapshot, host, picks)
        penalty += OWN_SWITCH_PENALTY * outside / len(picks)
        penalty += LATENCY_PER_US * mean_latency / 1000
        penalty += UNTOUCHED_PENALTY * len(untouched)
    return round(max(0.0, 100.0 - penalty), 2)


def plan_words(
    request: PlacementRequest,
    snapshot: Snapshot,
    host: HostInfo,
    picks: Sequence[DevicePick],
    host_penalty: float,
    score: float,
) -> list[Note]:
    """The sentences that explain a plan's `score` (`plan_points`), each penalty named."""
    sentences: list[Note] = []
    if picks:
        outside, mean_latency, used, untouched = _facts(snapshot, host, picks)
        inside = len(picks) - outside
        own_names = ", ".join(snapshot.switch_name(s) for s in host.switches) or "none"
        latency = latency_words(mean_latency, picks)
        sentences.append(
            Note(
                f"{inside} of {len(picks)} devices sit behind the host's own switch "
                f"({own_names}); {latency}",
                f"{inside} of {len(picks)} devices sit behind the host's own switch; {latency}",
            )
        )
        sentences.append(
            Note(
                f"Devices come from {len(used)} enclosure{'s' if len(used) != 1 else ''}; "
                + (
                    f"{len(untouched)} of them untouched before (a whole free block broken)."
                    if untouched
                    else "all of them already partly used, so whole free blocks stay intact."
                )
            )
        )
    how = policies.selected(request).host_words(request, host)
    cores = f"Host {host.name}: {host.cores_free} cores free, {request.cores} asked"
    if fragmentation.applies(request):  # the default policy's score (fragmentation.py)
        sentences.append(Note(f"{cores}."))
        sentences.append(fragmentation.words(request, snapshot, host))
        if host.id in request.tenant_hosts:
            sentences.append(Note("Hosts without the tenant's other compositions came first."))
    else:
        sentences.append(
            Note(
                f"{cores}; host penalty {host_penalty:.1f} ({how}; the cores-per-GPU ratio "
                f"left in its reach, fabric ratio {snapshot.cores_per_gpu:.1f}).",
                # The fabric's own ratio and the penalty weigh hosts against each other: the
                # operators' to read.
                f"{cores}; chosen by {how}.",
            )
        )
    sentences.append(Note(f"Score {score:.1f} of 100."))
    return sentences

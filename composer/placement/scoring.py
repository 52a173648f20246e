"""Ranking: which enclosures a host should take devices from, which host, and the score.

Pure Python. Preferences, strongest first:

1. devices behind the host's own switch (shortest path, no inter-switch link used);
2. fragmentation: take from enclosures that are already partly used before untouched
   ones, and from the smallest free block that fits, so large free blocks stay whole;
3. lower latency.

Hosts are ranked by the CPU:GPU balance they leave: a request's cores should fit a host's
free cores snugly (a small request on a big host strands the big host's cores for GPU-heavy
work), and the GPUs and cores left in the host's reach group should stay near the fabric's
own ratio (`Snapshot.cores_per_gpu`), so that neither GPUs without cores nor cores without
GPUs are left behind. The score is 100 minus penalties; the explanation names each one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from composer.placement.request import DevicePick, Note, PlacementRequest
from composer.placement.snapshot import HostInfo, Snapshot

__all__ = ["balance", "core_fit", "enclosure_order", "group_balance", "host_rank", "plan_score"]

OWN_SWITCH_PENALTY = 10.0  # per device not behind the host's own switch, scaled to share
UNTOUCHED_PENALTY = 8.0  # per untouched enclosure broken into
LATENCY_PER_US = 4.0  # per microsecond of mean latency
CORE_FIT_WEIGHT = 15.0  # the share of the host's free cores left idle
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


def host_rank(
    request: PlacementRequest, snapshot: Snapshot, host: HostInfo, gpus: int
) -> tuple[float, str]:
    """A penalty for building on `host` (lower is better; ties by name): how snugly the
    request's cores fit the host's free cores, and how far the host's reach group drifts
    from the fabric's cores-per-GPU ratio once `gpus` GPUs and the cores are taken."""
    return (core_fit(request, snapshot, host) + balance(request, snapshot, host, gpus), host.name)


def core_fit(request: PlacementRequest, snapshot: Snapshot, host: HostInfo) -> float:
    """The free cores the request would leave idle on `host`, on the fabric's scale: grows
    with the host's free cores, so a group's hosts rank in their free-core order."""
    return CORE_FIT_WEIGHT * (host.cores_free - request.cores) / max(snapshot.max_cores, 1)


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
    sentences: list[Note] = []
    penalty = host_penalty
    own = set(host.switches)
    enclosures = snapshot.enclosures
    if picks:
        outside = sum(1 for p in picks if not own.intersection(enclosures[p.enclosure].switches))
        mean_latency = sum(p.latency_ns for p in picks) / len(picks)
        penalty += OWN_SWITCH_PENALTY * outside / len(picks)
        penalty += LATENCY_PER_US * mean_latency / 1000
        inside = len(picks) - outside
        own_names = ", ".join(snapshot.switch_name(s) for s in host.switches) or "none"
        latency = f"mean path latency {mean_latency:.0f} ns."
        sentences.append(
            Note(
                f"{inside} of {len(picks)} devices sit behind the host's own switch "
                f"({own_names}); {latency}",
                f"{inside} of {len(picks)} devices sit behind the host's own switch; {latency}",
            )
        )
        used = {p.enclosure for p in picks}
        untouched = [
            e
            for e in used
            if enclosures[e].device_total
            and snapshot.free_in_enclosure.get(e, 0) >= enclosures[e].device_total
        ]
        penalty += UNTOUCHED_PENALTY * len(untouched)
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
    sentences.append(
        Note(
            f"Host {host.name}: {host.cores_free} cores free, {request.cores} asked; "
            f"host balance penalty {host_penalty:.1f} (snug core fit and the cores-per-GPU "
            f"ratio left in its reach, fabric ratio {snapshot.cores_per_gpu:.1f})."
        )
    )
    score = round(max(0.0, 100.0 - penalty), 2)
    sentences.append(Note(f"Score {score:.1f} of 100."))
    return score, sentences

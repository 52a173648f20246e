"""Stranded capacity: free capacity in a pool that no host can use through the fabric now.

A GPU whose enclosure lost its last healthy path to every host is free on paper and useless
in practice; the pool's free figure hides it. Reached is judged by the fabric's own
reachability index (`fabric.topology.reach`: connectivity through switches over links not
down, built once per topology load), on the fabric as placement may use it: no path through
a switch in maintenance (`fabric.topology.maintenance.placeable`, as placement), and no path
through, nor host at the end of it, that has failed (health critical, as the blast radius
counts a failed element) or is not active (a host in maintenance takes no placement); what is free
by the one definition of capacity (`fabric.capacity.capacity_split`, in devices, or GiB for
partitionable kinds), so a pool's stranded figure is part of its free one.

A partly shared GPU (`Device.allocated_shares`) is free by the fraction of its shares left
(750/1000 free: 0.75 of a GPU), as the pool's figure counts it, but only compositions on the
host it is shared on may take them: that part is stranded unless that one host is usable,
reaches the GPU's enclosure and has cores free (cores less those its live compositions asked
for, as placement counts them), for a share with no core to run on serves nobody.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from composer.choices import ACTIVE_COMPOSITION_STATES
from composer.models import Composition
from fabric.capacity import capacity_split
from fabric.choices import ComponentState, DeviceState, Health
from fabric.kinds import is_sliced, shares_per_device
from fabric.models import Device
from fabric.topology.elements import FabricGraph
from fabric.topology.load import load_graph
from fabric.topology.maintenance import links_down_at, placeable
from fabric.topology.reach import ReachIndex, reach_index

__all__ = ["stranded_by_pool"]

COLUMNS = (
    "pool_id",
    "kind",
    "state",
    "health",
    "memory_gib",
    "allocated_gib",
    "bound_host_id",
    "enclosure_id",
    "allocated_shares",
    "shared_host_id",
)


def stranded_by_pool() -> dict[int, float]:
    """Free capacity no host can use, per pool id (devices, a partly shared GPU's free part
    as its fraction of one, or GiB for partitionable pools).

    One device query, one topology load, and one query of the cores compositions hold when
    a partly shared GPU has shares free; the reachability index is linear in its size.
    """
    rows = list(
        Device.objects.filter(pool__isnull=False)
        .exclude(state=DeviceState.ABSENT)
        .values_list(*COLUMNS)
    )
    free = [row for row in rows if _free_amount(row)]
    if not free:
        return {}
    graph = _usable(placeable(load_graph(lean=True)))
    index = reach_index(graph)
    reached = {
        end for end, kind in index.kinds.items() if kind == "enclosure" and index.partners(end)
    }
    shared_hosts = {row[9] for row in free if row[8]}
    cores = _cores_free(graph, shared_hosts) if shared_hosts else {}
    stranded: dict[int, float] = defaultdict(float)
    for row in free:
        enclosure, shared_host = row[7], row[9]
        if row[8] and shared_host is not None:
            usable = _shares_usable(index, enclosure, shared_host, cores)
        else:
            usable = enclosure is not None and f"enclosure:{enclosure}" in reached
        if not usable:
            stranded[row[0]] += _free_amount(row)
    return {pool: round(amount, 3) for pool, amount in stranded.items()}


def _free_amount(row: tuple[Any, ...]) -> float:
    """What a device gives its pool's free figure: 1, its free GiB, the fraction of its
    shares left for a partly shared GPU, or 0."""
    _, kind, state, health, memory_gib, allocated_gib, bound_host, _, held, _ = row
    return capacity_split(
        partitionable=is_sliced(kind),
        state=state,
        health=health,
        memory_gib=memory_gib or 0,
        allocated_gib=allocated_gib or 0,
        bound=int(bound_host is not None),
        shares=shares_per_device(kind),
        shared=int(bool(held)),
        allocated_shares=held or 0,
    ).free


def _shares_usable(
    index: ReachIndex, enclosure: int | None, host: int, cores: dict[int, int]
) -> bool:
    """Whether the one host a GPU is shared on can take its free shares: it is usable (its
    links are up in the index only then), reaches the GPU's enclosure, and has cores free."""
    end = f"enclosure:{enclosure}"
    if enclosure is None or end not in index.kinds:
        return False
    return f"host:{host}" in index.partners(end) and cores.get(host, 0) > 0


def _cores_free(graph: FabricGraph, hosts: set[int]) -> dict[int, int]:
    """Per host of `hosts`: its cores less those its live compositions asked for (as the
    placement snapshot counts them, `composition_placement.placement_snapshot`). One query."""
    used: dict[int, int] = defaultdict(int)
    for host, spec in Composition.objects.filter(
        state__in=ACTIVE_COMPOSITION_STATES, host_id__in=hosts
    ).values_list("host_id", "spec"):
        used[host] += int((spec or {}).get("cores") or 0)
    nodes = [graph.nodes.get(f"host:{host}") for host in hosts]
    return {
        node.pk: max(0, int(node.attrs.get("cores", 0)) - used[node.pk])
        for node in nodes
        if node is not None
    }


ENDS_AND_SWITCHES = ("host", "switch", "enclosure")


def _usable(graph: FabricGraph) -> FabricGraph:
    """`graph` with every link of a failed or inactive host, switch or enclosure down: no
    path runs through it, so what only it connected is unreached (the same graph when
    none)."""
    return links_down_at(
        graph,
        {
            n.id
            for kind in ENDS_AND_SWITCHES
            for n in graph.of_kind(kind)
            if n.health == Health.CRITICAL or n.state != ComponentState.ACTIVE
        },
    )

"""Stranded capacity: free capacity in a pool that no host can reach through the fabric now.

A GPU whose enclosure lost its last healthy path to every host is free on paper and useless
in practice; the pool's free figure hides it. Reached is judged by the fabric's own
reachability index (`fabric.topology.reach`: connectivity through switches over links not
down, built once per topology load), on the fabric as placement may use it: no path through
a switch in maintenance (`fabric.topology.maintenance.placeable`, as placement), and no path
through, nor host at the end of it, that has failed (health critical, as the blast radius
counts a failed element) or is not active (a host in maintenance takes no placement); what is free
by the one definition of capacity (`fabric.capacity.capacity_split`, in devices, or GiB for
partitionable kinds), so a pool's stranded figure is part of its free one.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from fabric.capacity import capacity_split
from fabric.choices import ComponentState, DeviceState, Health
from fabric.kinds import is_sliced
from fabric.models import Device
from fabric.topology.elements import FabricGraph
from fabric.topology.load import load_graph
from fabric.topology.maintenance import links_down_at, placeable
from fabric.topology.reach import reach_index

__all__ = ["stranded_by_pool"]


def stranded_by_pool() -> dict[int, int]:
    """Free capacity no host reaches, per pool id (devices, or GiB for partitionable pools).

    One device query and one topology load; the reachability index is linear in its size.
    """
    rows = list(
        Device.objects.filter(pool__isnull=False)
        .exclude(state=DeviceState.ABSENT)
        .values_list(
            "pool_id",
            "kind",
            "state",
            "health",
            "memory_gib",
            "allocated_gib",
            "bound_host_id",
            "enclosure_id",
        )
    )
    free = [row for row in rows if _free_amount(row)]
    if not free:
        return {}
    index = reach_index(_usable(placeable(load_graph(lean=True))))
    reached = {
        end for end, kind in index.kinds.items() if kind == "enclosure" and index.partners(end)
    }
    stranded: dict[int, int] = defaultdict(int)
    for row in free:
        enclosure = row[7]
        if enclosure is None or f"enclosure:{enclosure}" not in reached:
            stranded[row[0]] += _free_amount(row)
    return dict(stranded)


def _free_amount(row: tuple[Any, ...]) -> int:
    """What a device gives its pool's free figure: 1, its free GiB, or 0 (a shared GPU,
    held by its shares, gives 0: only its own host may take what is left of it)."""
    _, kind, state, health, memory_gib, allocated_gib, bound_host, _ = row
    return int(
        capacity_split(
            partitionable=is_sliced(kind),
            state=state,
            health=health,
            memory_gib=memory_gib or 0,
            allocated_gib=allocated_gib or 0,
            bound=int(bound_host is not None),
        ).free
    )


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

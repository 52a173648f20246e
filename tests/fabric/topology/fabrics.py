"""Hand-built fabrics for the topology unit tests: no database, ids written out.

`two_racks()`:

    rack:1  (feeds power_feed:1, power_feed:2)        rack:2  (feed power_feed:3)
      switch:1 spine (pf1)   switch:2 spine (pf2)
          \\      \\              /        /
           \\      +--- switch:3 leaf (pf1) --+      switch:4 leaf (rack:2, pf3)
            \\            |         |               |          |
      host:1 (pf1) -- switch:3   host:2 (pf2): switch:3 and switch:1     host:3 (pf3): switch:4
      enclosure:1 GPU chassis (pf1) on switch:3 only: device:1, device:2
      enclosure:2 CXL memory box (pf2) dual-homed on switch:1 and switch:2: device:3, device:4
      enclosure:3 GPU chassis (rack:2, pf3) on switch:4: device:5
    Leaves switch:3 and switch:4 each cable to both spines.

Latencies: host links 100 ns, enclosure links 200 ns, switch-to-switch 300 ns; bandwidth
64 GB/s except host:2's spine uplink (link:5, 32 GB/s). Everything is run by manager:1.
"""

from __future__ import annotations

from typing import Any

from fabric.topology.graph import Edge, FabricGraph, Node

MANAGER = "manager:1"


def node(
    kind: str,
    pk: int,
    name: str = "",
    *,
    rack: int | None = None,
    feed: int | None = None,
    parent: str | None = None,
    state: str = "active",
    health: str = "ok",
    manager: str = MANAGER,
    **attrs: Any,
) -> Node:
    rack_id = f"rack:{rack}" if rack is not None else None
    return Node(
        id=f"{kind}:{pk}",
        kind=kind,
        pk=pk,
        name=name or f"{kind}-{pk}",
        health=health,
        state=state,
        rack=rack_id,
        parent=parent if parent is not None else (rack_id if kind != "rack" else None),
        power_feed=f"power_feed:{feed}" if feed is not None else None,
        manager=manager,
        attrs=attrs,
    )


def device(pk: int, enclosure: int, *, rack: int, feed: int, state: str = "free") -> Node:
    return node(
        "device",
        pk,
        rack=rack,
        feed=feed,
        parent=f"enclosure:{enclosure}",
        state=state,
        device_kind="gpu",
        model="H100",
    )


def link(
    pk: int, a: str, b: str, latency_ns: int, *, gbps: float = 64.0, state: str = "up"
) -> Edge:
    return Edge(f"link:{pk}", pk, a, b, latency_ns, gbps, state, "ok")


def two_racks(*, down: tuple[int, ...] = (), extra_links: tuple[Edge, ...] = ()) -> FabricGraph:
    """The fabric drawn in the module docstring; `down` lists link pks that are down."""
    nodes = [
        node("rack", 1, "rack-a"),
        node("rack", 2, "rack-b"),
        node("switch", 1, "spine-1", rack=1, feed=1, tier="spine"),
        node("switch", 2, "spine-2", rack=1, feed=2, tier="spine"),
        node("switch", 3, "leaf-a", rack=1, feed=1, tier="leaf"),
        node("switch", 4, "leaf-b", rack=2, feed=3, tier="leaf"),
        node("host", 1, "host-a-1", rack=1, feed=1),
        node("host", 2, "host-a-2", rack=1, feed=2),
        node("host", 3, "host-b-1", rack=2, feed=3),
        node("enclosure", 1, "gpu-a", rack=1, feed=1, enclosure_kind="gpu_chassis"),
        node("enclosure", 2, "mem-a", rack=1, feed=2, enclosure_kind="cxl_memory_box"),
        node("enclosure", 3, "gpu-b", rack=2, feed=3, enclosure_kind="gpu_chassis"),
        device(1, 1, rack=1, feed=1),
        device(2, 1, rack=1, feed=1, state="bound"),
        device(3, 2, rack=1, feed=2),
        device(4, 2, rack=1, feed=2, state="failed"),
        device(5, 3, rack=2, feed=3),
    ]
    spec = [
        (1, "host:1", "switch:3", 100),
        (2, "host:2", "switch:3", 100),
        (3, "host:3", "switch:4", 100),
        (4, "enclosure:1", "switch:3", 200),
        (5, "host:2", "switch:1", 100),
        (6, "enclosure:2", "switch:1", 200),
        (7, "enclosure:2", "switch:2", 200),
        (8, "enclosure:3", "switch:4", 200),
        (9, "switch:3", "switch:1", 300),
        (10, "switch:3", "switch:2", 300),
        (11, "switch:4", "switch:1", 300),
        (12, "switch:4", "switch:2", 300),
    ]
    edges = [
        link(pk, a, b, ns, gbps=32.0 if pk == 5 else 64.0, state="down" if pk in down else "up")
        for pk, a, b, ns in spec
    ]
    return FabricGraph(
        nodes,
        [*edges, *extra_links],
        power_feeds={
            "power_feed:1": "pdu-a-1",
            "power_feed:2": "pdu-a-2",
            "power_feed:3": "pdu-b-1",
        },
        managers={MANAGER: "fm-1"},
    )

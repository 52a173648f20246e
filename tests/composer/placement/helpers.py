"""A hand-built snapshot for engine tests: two leaf switches, hosts and enclosures behind
each, a CXL memory box and a JBOF on a spine both leaves reach."""

from __future__ import annotations

from composer.placement.snapshot import DeviceInfo, EnclosureInfo, HostInfo, Reach, Snapshot

LEAVES = ("switch:1", "switch:2")
SPINE = "switch:9"


def gpu(enclosure: str, slot: int, *, model: str = "H100", memory_gib: int = 80) -> DeviceInfo:
    return DeviceInfo(
        f"device:{enclosure}-{slot}",
        f"{enclosure}-{slot}",
        "gpu",
        model,
        f"enclosure:{enclosure}",
        {"memory_gib": memory_gib},
    )


def world(
    *,
    gpus: dict[str, int] | None = None,
    totals: dict[str, int] | None = None,
    host_cores: dict[str, int] | None = None,
    far_latency: int = 800,
    memory: tuple[int, ...] = (512, 512),
    drives: int = 2,
    cut: dict[str, tuple[str, ...]] | None = None,
    models: dict[str, str] | None = None,
    **options: object,
) -> Snapshot:
    """GPU chassis a1, a2 behind leaf 1 and b1 behind leaf 2; hosts ha (leaf 1) and hb
    (leaf 2); mem box and jbof behind the spine. `gpus`: free GPUs per chassis. `cut`:
    per host id, the enclosures it does not reach (no working path, e.g. the spine in
    maintenance). `models`: the GPU model per chassis (H100 where not given)."""
    gpus = gpus if gpus is not None else {"a1": 4, "a2": 2, "b1": 4}
    totals = totals or {"a1": 4, "a2": 4, "b1": 4}
    host_cores = host_cores or {"ha": 64, "hb": 64}
    leaf_of = {"a1": LEAVES[0], "a2": LEAVES[0], "b1": LEAVES[1]}
    enclosures = [
        EnclosureInfo(f"enclosure:{e}", e, (leaf_of[e],), device_total=totals[e]) for e in leaf_of
    ]
    enclosures += [
        EnclosureInfo("enclosure:mem", "mem", (SPINE,), device_total=len(memory)),
        EnclosureInfo("enclosure:jbof", "jbof", (SPINE,), device_total=drives),
    ]
    models = models or {}
    devices = [gpu(e, s, model=models.get(e, "H100")) for e, n in gpus.items() for s in range(n)]
    devices += [
        DeviceInfo(f"device:mem-{i}", f"mem-{i}", "cxl_memory", "CMM", "enclosure:mem",
                   {"memory_gib": g}, free_gib=g)
        for i, g in enumerate(memory)
    ]  # fmt: skip
    devices += [
        DeviceInfo(f"device:nvme-{i}", f"nvme-{i}", "nvme", "PM1743", "enclosure:jbof",
                   {"capacity_gb": 7680}, capacity_gb=7680)
        for i in range(drives)
    ]  # fmt: skip
    hosts = [
        HostInfo("host:a", "ha", host_cores["ha"], 512, 128, 63.0, 0.0, (LEAVES[0],)),
        HostInfo("host:b", "hb", host_cores["hb"], 512, 128, 63.0, 0.0, (LEAVES[1],)),
    ]
    own, far = 500, far_latency
    reach = {
        "host:a": {
            "enclosure:a1": Reach(own, 63.0), "enclosure:a2": Reach(own + 10, 63.0),
            "enclosure:b1": Reach(far, 63.0), "enclosure:mem": Reach(700, 63.0),
            "enclosure:jbof": Reach(700, 63.0),
        },
        "host:b": {
            "enclosure:b1": Reach(own, 63.0), "enclosure:a1": Reach(far, 63.0),
            "enclosure:a2": Reach(far + 10, 63.0), "enclosure:mem": Reach(700, 63.0),
            "enclosure:jbof": Reach(700, 63.0),
        },
    }  # fmt: skip
    for host_id, unreached in (cut or {}).items():
        reach[host_id] = {e: r for e, r in reach[host_id].items() if e not in unreached}
    return Snapshot.build(
        hosts=hosts,
        enclosures=enclosures,
        devices=devices,
        reach=reach,
        switch_names={LEAVES[0]: "sw-1", LEAVES[1]: "sw-2", SPINE: "spine"},
        **options,  # type: ignore[arg-type]
    )

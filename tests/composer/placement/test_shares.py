"""Shares of a GPU on hand-built snapshots: placement, validation, counting, taking and
returning. No database."""

from __future__ import annotations

from dataclasses import replace

import pytest

from composer.placement.engine import place
from composer.placement.request import (
    DeviceItem,
    DevicePick,
    Placement,
    PlacementRequest,
    Rejection,
)
from composer.placement.shareable import free_shares, shares_per_device
from composer.placement.shares import charged_gbps, shares_taken
from composer.placement.snapshot import Snapshot
from fabric.kinds import kind
from tests.composer.placement.helpers import world

WHOLE = kind("gpu").shares


def share(thousandths: int, **kwargs: object) -> DeviceItem:
    return DeviceItem("gpu", 1, share=thousandths, **kwargs)  # type: ignore[arg-type]


def shared_world(shares: dict[str, tuple[str, int]], **options: object) -> Snapshot:
    """The helpers' world with some GPUs partly shared: device id -> (host, shares taken)."""
    return world(**options).taking(shares=shares)  # type: ignore[arg-type]


def placed(request: PlacementRequest, snapshot: Snapshot) -> Placement:
    result = place(request, snapshot)
    assert isinstance(result, Placement), result
    return result


def rejected(request: PlacementRequest, snapshot: Snapshot) -> Rejection:
    result = place(request, snapshot)
    assert isinstance(result, Rejection), result
    return result


def share_picks(plan: Placement) -> list[tuple[str, int | None]]:
    return [(p.device, p.share) for p in plan.devices if p.share is not None]


# --- the snapshot ---------------------------------------------------------------------


def test_the_gpu_is_the_shareable_kind_in_thousandths() -> None:
    assert shares_per_device("gpu") == 1000
    assert shares_per_device("nvme") == 0


def test_a_partly_shared_device_is_no_whole_candidate() -> None:
    snapshot = shared_world({"device:b1-0": ("host:b", 300)})
    device = snapshot.devices["device:b1-0"]
    assert (device.shared_host, device.shares_free, free_shares(device)) == ("host:b", 700, 700)
    assert "device:b1-0" not in snapshot.by_kind["gpu"]["enclosure:b1"]
    assert "device:b1-0" not in snapshot.by_model["gpu", "H100"]["enclosure:b1"]
    assert snapshot.shared_on == {"host:b": ("device:b1-0",)}
    assert snapshot.free_in_enclosure["enclosure:b1"] == 3
    assert sum(snapshot.group_gpus) < sum(world().group_gpus)
    # A whole free device reads as all of its shares free.
    assert free_shares(snapshot.devices["device:b1-1"]) == WHOLE


def test_shared_on_lists_the_fewest_free_first() -> None:
    snapshot = shared_world({"device:b1-0": ("host:b", 100), "device:b1-1": ("host:b", 600)})
    assert snapshot.shared_on["host:b"] == ("device:b1-1", "device:b1-0")


HELD = {
    "devices": ["device:a1-0"],
    "memory_gib": {"device:mem-0": 512},
    "cores": {"host:a": 8},
    "host_memory_gib": {"host:a": 64},
    "shares": {"device:b1-0": ("host:b", 1000), "device:b1-1": ("host:b", 250)},
}


def test_taking_and_returning_round_trip() -> None:
    start = world()
    taken = start.taking(**HELD)  # type: ignore[arg-type]
    # A device taken whole, a memory device sliced to nothing and a GPU whose every share is
    # taken leave the snapshot; they are kept so that a departure can give them back.
    for gone in ("device:a1-0", "device:mem-0", "device:b1-0"):
        assert gone not in taken.devices
        assert gone in taken.departed
    assert taken.devices["device:b1-1"].shares_free == 750
    assert taken.hosts["host:a"].cores_free == start.hosts["host:a"].cores_free - 8

    back = taken.returning(**HELD)  # type: ignore[arg-type]
    assert back.devices == start.devices
    assert back.hosts == start.hosts
    assert back.shared_on == {}
    assert back.departed == {}
    assert back.by_kind == start.by_kind


def test_shares_come_back_one_composition_at_a_time() -> None:
    snapshot = shared_world({"device:b1-0": ("host:b", 400)}).taking(
        shares={"device:b1-0": ("host:b", 600)}
    )
    assert "device:b1-0" not in snapshot.devices  # every share taken
    half = snapshot.returning(shares={"device:b1-0": ("host:b", 400)})
    assert half.devices["device:b1-0"].shares_free == 400
    assert half.shared_on == {"host:b": ("device:b1-0",)}
    whole = half.returning(shares={"device:b1-0": ("host:b", 600)})
    assert whole.devices["device:b1-0"].shared_host is None
    assert "device:b1-0" in whole.by_kind["gpu"]["enclosure:b1"]


def test_returning_a_device_the_snapshot_never_had() -> None:
    start = world()
    extra = replace(start.devices["device:a1-0"], id="device:a1-9", name="a1-9")
    with pytest.raises(ValueError, match="never in this snapshot"):
        start.returning(devices=["device:a1-9"])
    assert "device:a1-9" in start.returning(devices=[extra]).devices


def test_cores_come_back_up_to_the_host_total() -> None:
    start = world()
    assert start.returning(cores={"host:a": 1000}).hosts["host:a"].cores_free == 128


@pytest.mark.parametrize(
    ("shares", "match"),
    [
        ({"device:b1-0": ("host:a", 100)}, "shared on host:b, not on host:a"),
        ({"device:b1-0": ("host:b", 900)}, "has 800 shares free; 900 taken"),
        ({"device:nope": ("host:b", 100)}, "No share is free on device:nope"),
    ],
)
def test_taking_never_over_allocates_a_share(
    shares: dict[str, tuple[str, int]], match: str
) -> None:
    snapshot = shared_world({"device:b1-0": ("host:b", 200)})
    with pytest.raises(ValueError, match=match):
        snapshot.taking(shares=shares)


def test_returning_checks_the_host_and_the_count() -> None:
    snapshot = shared_world({"device:b1-0": ("host:b", 200)})
    with pytest.raises(ValueError, match="holds no share for host:a"):
        snapshot.returning(shares={"device:b1-0": ("host:a", 200)})
    with pytest.raises(ValueError, match="300 shares given back, 200 held"):
        snapshot.returning(shares={"device:b1-0": ("host:b", 300)})


def test_a_partly_shared_device_is_never_taken_or_given_back_whole() -> None:
    # Its other shares are still held: taken whole they would vanish, given back whole
    # the device would be free for a whole-device request beside them.
    snapshot = shared_world({"device:b1-0": ("host:b", 300)})
    with pytest.raises(ValueError, match="Shared, so not taken whole: device:b1-0"):
        snapshot.taking(devices=["device:b1-0"])
    with pytest.raises(ValueError, match="Shared, so not taken whole: device:b1-1"):
        world().taking(devices=["device:b1-1"], shares={"device:b1-1": ("host:b", 100)})
    with pytest.raises(ValueError, match="device:b1-0 is shared: give its shares back"):
        snapshot.returning(devices=["device:b1-0"])
    gone = snapshot.taking(shares={"device:b1-0": ("host:b", 700)})  # its last share
    with pytest.raises(ValueError, match="device:b1-0 is shared"):
        gone.returning(devices=["device:b1-0"])


def test_two_shares_of_one_device_in_a_plan_are_taken_as_their_sum() -> None:
    plan = place(
        PlacementRequest(
            items=(DeviceItem("gpu", 1, share=300), DeviceItem("gpu", 1, share=600)),
            host="host:b",
        ),
        shared_world({"device:b1-0": ("host:b", 50)}),
    )
    assert isinstance(plan, Placement)
    assert [p.device for p in plan.devices] == ["device:b1-0", "device:b1-0"]
    assert shares_taken(plan) == {"device:b1-0": ("host:b", 900)}
    after = shared_world({"device:b1-0": ("host:b", 50)}).taking(shares=shares_taken(plan))
    assert after.devices["device:b1-0"].shares_free == 50


# --- placement ------------------------------------------------------------------------


def test_a_share_fits_on_a_gpu_already_shared_on_the_host() -> None:
    snapshot = shared_world({"device:b1-0": ("host:b", 500)})
    plan = placed(PlacementRequest(items=(share(250),)), snapshot)
    assert plan.host == "host:b"  # the host holding the shared GPU is planned first
    assert share_picks(plan) == [("device:b1-0", 250)]
    operator = [n.operator for n in plan.explanation]
    tenant = [n.text(operator=False) for n in plan.explanation]
    assert "A 250/1000 share of GPU b1-0, already shared on this host; 500/1000 were free." in (
        operator
    )
    assert "A 250/1000 share of GPU b1-0." in tenant
    assert not any("500/1000" in t for t in tenant)


def test_a_share_never_goes_on_another_hosts_gpu() -> None:
    snapshot = shared_world({"device:b1-0": ("host:b", 500)})
    plan = placed(PlacementRequest(items=(share(250),), host="host:a"), snapshot)
    assert share_picks(plan)[0][0] != "device:b1-0"
    # Behind ha's own switch, from the partly used chassis first (as for whole devices).
    assert share_picks(plan)[0][0].startswith("device:a2-")


def test_a_fresh_gpu_when_no_shared_one_fits() -> None:
    snapshot = shared_world({"device:b1-0": ("host:b", 800)})
    plan = placed(PlacementRequest(items=(share(500),), host="host:b"), snapshot)
    ((device, taken),) = share_picks(plan)
    assert device != "device:b1-0" and device.startswith("device:b1-")
    assert taken == 500
    assert any("a free device now shared on this host" in n.operator for n in plan.explanation)


def test_best_fit_takes_the_fewest_free_shares_that_cover() -> None:
    snapshot = shared_world(
        {
            "device:b1-0": ("host:b", 100),  # 900 free
            "device:b1-1": ("host:b", 600),  # 400 free
            "device:b1-2": ("host:b", 800),  # 200 free: too few
        }
    )
    plan = placed(PlacementRequest(items=(share(300),)), snapshot)
    assert share_picks(plan) == [("device:b1-1", 300)]


def test_model_and_minima_apply_to_shares() -> None:
    snapshot = shared_world(
        {"device:b1-0": ("host:b", 500)}, models={"a1": "A100", "a2": "A100", "b1": "H100"}
    )
    plan = placed(PlacementRequest(items=(share(250, model="A100"),), host="host:b"), snapshot)
    assert share_picks(plan)[0][0].startswith("device:a")  # the shared H100 does not match
    too_much = share(250, minima={"memory_gib": 81})
    rejection = rejected(PlacementRequest(items=(too_much,)), snapshot)
    assert rejection.code == "no_capacity"
    assert rejection.message == "No usable GPU has 250/1000 free; a 250/1000 share asked."
    assert rejection.nearest.operator == "No GPU is free or partly shared now; wait."


def test_whole_and_share_items_together() -> None:
    snapshot = shared_world({"device:b1-0": ("host:b", 500)})
    plan = placed(
        PlacementRequest(items=(DeviceItem("gpu", 3), share(400)), host="host:b"),
        snapshot,
    )
    whole = [p.device for p in plan.devices if p.share is None]
    assert len(whole) == 3 and "device:b1-0" not in whole
    assert share_picks(plan) == [("device:b1-0", 400)]


def test_a_whole_item_never_takes_a_partly_shared_gpu() -> None:
    snapshot = shared_world({f"device:b1-{i}": ("host:b", 10) for i in range(4)})
    rejection = rejected(
        PlacementRequest(items=(DeviceItem("gpu", 1),), host="host:b", max_latency_ns=600),
        snapshot,
    )
    assert rejection.code == "latency"  # b1's GPUs are shared: a1/a2 are beyond 600 ns


def test_a_share_beside_whole_devices_that_take_every_gpu() -> None:
    # hb reaches only b1: its 4 GPUs go to the whole item, none is left for the share.
    snapshot = world(cut={"host:b": ("enclosure:a1", "enclosure:a2")})
    rejection = rejected(
        PlacementRequest(items=(DeviceItem("gpu", 4), share(100)), host="host:b"), snapshot
    )
    assert rejection.code == "no_capacity"
    assert "fails the room for the shares" in rejection.message
    assert "ask for fewer devices or a smaller share" in rejection.nearest.operator


def test_two_shares_of_one_request_may_share_a_fresh_gpu() -> None:
    snapshot = world(gpus={"a1": 0, "a2": 0, "b1": 1})
    plan = placed(PlacementRequest(items=(share(300), share(500))), snapshot)
    assert share_picks(plan) == [("device:b1-0", 300), ("device:b1-0", 500)]
    assert any("beside the share above" in n.operator for n in plan.explanation)


def test_a_shared_gpu_bound_to_its_host_ignores_the_latency_ceiling() -> None:
    snapshot = shared_world({"device:a1-0": ("host:b", 500)}, gpus={"a1": 1, "a2": 0, "b1": 0})
    plan = placed(PlacementRequest(items=(share(200),), max_latency_ns=600), snapshot)
    assert plan.host == "host:b"
    assert share_picks(plan) == [("device:a1-0", 200)]


def test_a_fresh_gpu_must_be_within_the_latency_ceiling() -> None:
    snapshot = shared_world({"device:b1-0": ("host:b", 500)})
    rejection = rejected(
        PlacementRequest(items=(share(200),), host="host:a", max_latency_ns=400), snapshot
    )
    assert rejection.code == "latency"
    assert ("hosts: latency ceiling", 1, 0) in rejection.funnel


def test_in_a_group_without_whole_gpus_only_the_holding_host_counts() -> None:
    snapshot = shared_world({"device:b1-0": ("host:b", 500)}, gpus={"a1": 0, "a2": 0, "b1": 1})
    plan = placed(PlacementRequest(items=(share(300),)), snapshot)
    assert plan.host == "host:b"
    reach = [s for s in plan.funnel if s[0].startswith("hosts: reach")]
    assert reach == [("hosts: reach a 300/1000 share of one GPU", 2, 1)]
    steps = [s for s in plan.funnel if s[0] == "GPUs: partly shared, 300/1000 free"]
    assert steps == [("GPUs: partly shared, 300/1000 free", 1, 1)]


def test_rejection_funnel_and_nearest_when_no_share_fits() -> None:
    snapshot = shared_world(
        {"device:b1-0": ("host:b", 600), "device:a1-0": ("host:a", 900)},
        gpus={"a1": 1, "a2": 0, "b1": 1},
    )
    rejection = rejected(PlacementRequest(items=(share(500),)), snapshot)
    assert rejection.code == "no_capacity"
    assert rejection.message == "No usable GPU has 500/1000 free; a 500/1000 share asked."
    assert rejection.nearest.operator == (
        "At most 400/1000 of one GPU is free; ask for that or wait."
    )
    assert ("GPUs: partly shared, 500/1000 free", 2, 0) in rejection.funnel


def test_rejection_names_the_share_no_host_reaches() -> None:
    # The only shared GPU with room is bound to hb, and hb lacks the cores asked.
    snapshot = shared_world(
        {"device:b1-0": ("host:b", 500)},
        gpus={"a1": 0, "a2": 0, "b1": 1},
        host_cores={"ha": 64, "hb": 8},
    )
    rejection = rejected(PlacementRequest(items=(share(300),), cores=16), snapshot)
    assert rejection.message == "No host reaches a 300/1000 share of one GPU through the fabric."
    assert ("hosts: reach a 300/1000 share of one GPU", 1, 0) in rejection.funnel
    assert rejection.nearest.operator == (
        "No host reaches any free GPUs now; ask without it or wait."
    )


def test_the_uplink_is_charged_the_share() -> None:
    pick = DevicePick("d", "d", "gpu", "e", 500, 60.0, share=250)
    assert charged_gbps(pick) == 15.0
    assert charged_gbps(replace(pick, share=None)) == 60.0
    # 64 GB/s of uplink, no oversubscription: one whole 63 GB/s GPU, or 4 quarter shares.
    snapshot = world(oversubscription=1.0)
    plan = placed(PlacementRequest(items=tuple(share(250) for _ in range(4))), snapshot)
    assert len(share_picks(plan)) == 4
    assert any("Uplink demand 63 GB/s" in n.operator for n in plan.explanation)


def test_a_pinned_whole_device_that_is_shared_is_refused() -> None:
    from composer.placement.request import PinnedDevice

    snapshot = shared_world({"device:b1-0": ("host:b", 500)})
    rejection = rejected(
        PlacementRequest(pinned=(PinnedDevice("device:b1-0", "b1-0", "gpu"),)), snapshot
    )
    assert rejection.message == "GPU b1-0 is shared: it cannot be taken whole now."


INVALID = [
    (share(1000), "items[0].share is 1000 thousandths: 1000 or more is whole devices; ask for "
     "them with count, without share."),
    (share(0), "items[0].share must be a whole number of thousandths of a device, from 1 to "
     "999."),
    (DeviceItem("gpu", 2, share=500), "items[0].count must be 1 with a share: a share is part "
     "of one device (ask for more shares as more items)."),
    (DeviceItem("nvme", 1, share=500), "items[0].share: nvme devices are taken whole, never "
     "shared."),
]  # fmt: skip


@pytest.mark.parametrize(("item", "message"), INVALID)
def test_validation_names_the_field(item: DeviceItem, message: str) -> None:
    rejection = rejected(PlacementRequest(items=(item,)), world())
    assert (rejection.code, rejection.message) == ("invalid", message)

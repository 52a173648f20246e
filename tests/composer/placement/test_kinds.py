"""The engine treats a device kind by its declaration in `fabric.kinds`, not by its name:
a kind declared by the test alone (tests.support.kinds) is placed, sliced, balanced
and named as its declaration says. No database."""

from __future__ import annotations

from dataclasses import replace

import pytest

from composer.errors import SpecError
from composer.placement.constraints import choose_capacity, validate
from composer.placement.engine import place
from composer.placement.nearest import counted, label
from composer.placement.request import DeviceItem, PinnedDevice, Placement, PlacementRequest
from composer.placement.snapshot import Snapshot
from composer.specs import spec_normalise
from tests.composer.placement.helpers import world
from tests.support.kinds import HBM, TPU, declared


def relabelled(snapshot: Snapshot, kinds: dict[str, str]) -> Snapshot:
    """The same fabric with devices of one kind renamed to another (GPUs as TPUs...)."""
    return Snapshot.build(
        hosts=snapshot.hosts.values(),
        enclosures=snapshot.enclosures.values(),
        devices=[replace(d, kind=kinds.get(d.kind, d.kind)) for d in snapshot.devices.values()],
        reach=snapshot.reach,
        switch_names=snapshot.switch_names,
    )


def test_a_declared_whole_kind_is_placed_by_count_and_kept_in_balance_with_cores() -> None:
    with declared(TPU):
        snapshot = relabelled(world(), {"gpu": "tpu"})
        plan = place(PlacementRequest(items=(DeviceItem("tpu", 3),), cores=8), snapshot)
        assert isinstance(plan, Placement), plan
        assert [p.kind for p in plan.devices] == ["tpu"] * 3
        assert not plan.memory
        # Balanced like GPUs: the fabric's cores per free TPU, and TPUs per reach group.
        assert snapshot.cores_per_gpu == 128 / 10
        assert sum(snapshot.group_gpus) == 10
        assert (label("tpu", None), counted(2, "tpu", "v5")) == ("TPUs", "2 v5 TPUs")
    # Undeclared, the same devices are still placed whole but keep no balance.
    undeclared = relabelled(world(), {"gpu": "tpu"})
    assert undeclared.cores_per_gpu == 0.0


def test_a_declared_sliced_kind_is_handed_out_in_gib() -> None:
    with declared(HBM):
        snapshot = relabelled(world(memory=(512, 0, 256)), {"cxl_memory": "hbm_pool"})
        # A device with no GiB left is not usable; the others are sliced, not taken whole.
        assert sorted(d.name for d in snapshot.devices.values() if d.kind == "hbm_pool") == [
            "mem-0",
            "mem-2",
        ]
        pools = [d for d in snapshot.devices.values() if d.kind == "hbm_pool"]
        assert [(d.name, gib) for d, gib in choose_capacity(100, pools, lambda d: (0,))] == [
            ("mem-2", 100)
        ]
        pin = PinnedDevice("device:mem-0", "mem-0", "hbm_pool", 128)
        plan = place(PlacementRequest(pinned=(pin,)), snapshot)
        assert isinstance(plan, Placement), plan
        assert [(p.name, p.gib) for p in plan.memory] == [("mem-0", 128)]
        # Asked for in GiB, never as a number of devices.
        asked = PlacementRequest(items=(DeviceItem("hbm_pool", 1),))
        assert validate(asked, snapshot) == (
            "items[0]: HBM pool is requested in GiB (memory_gib), not devices."
        )


def test_a_request_names_a_declared_kind_as_items_unless_it_is_sliced() -> None:
    with declared(TPU, HBM):
        spec = spec_normalise({"items": [{"kind": "tpu", "count": 2}]})
        assert spec["items"][0]["kind"] == "tpu"
        with pytest.raises(SpecError, match="pool is asked for in GiB") as error:
            spec_normalise({"items": [{"kind": "hbm_pool", "count": 1}]})
        assert error.value.field == "items[0].kind"

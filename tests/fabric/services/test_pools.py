"""Pools are rules: every device is in the most specific pool that matches it."""

from __future__ import annotations

from fabric.choices import ChangeAction
from fabric.models import ChangeRecord, Device, FabricManager, Pool, Rack
from fabric.services.pools import (
    PoolMatcher,
    PoolRule,
    pool_default_name,
    pools_assign,
    pools_ensure_defaults,
)
from fabric.services.sync import inventory_sync


def test_the_most_specific_rule_wins() -> None:
    matcher = PoolMatcher(
        [
            PoolRule(1, "GPUs", "gpu", "", None),
            PoolRule(2, "GPUs, rack A", "gpu", "", 10),
            PoolRule(3, "H100 GPUs", "gpu", "H100", None),
            PoolRule(4, "H100 GPUs, rack A", "gpu", "H100", 10),
        ]
    )
    assert matcher.match(kind="gpu", model="H100", rack_id=10) == 4
    assert matcher.match(kind="gpu", model="H100", rack_id=11) == 3
    assert matcher.match(kind="gpu", model="L40S", rack_id=10) == 2
    assert matcher.match(kind="gpu", model="L40S", rack_id=None) == 1
    assert matcher.match(kind="nic", model="CX7", rack_id=10) is None


def test_default_names_read_like_an_operator_would_write_them() -> None:
    assert pool_default_name(
        kind="gpu", model="H100 PCIe 80GB", rack_name="rack-a", by_model=True
    ) == ("H100 GPUs, rack A")
    assert pool_default_name(
        kind="cxl_memory", model="CMM", rack_name="rack-b", by_model=False
    ) == ("CXL memory, rack B")


def test_pools_assign_moves_devices_when_pools_change_and_records_it(
    sim_manager: FabricManager,
) -> None:
    inventory_sync(manager=sim_manager)
    created = pools_ensure_defaults(manager=sim_manager)
    assert {p.name for p in created} >= {
        "H100 GPUs, rack A",
        "L40S GPUs, rack A",
        "CXL memory, rack A",
    }
    assert pools_ensure_defaults(manager=sim_manager) == []

    moved = pools_assign(manager=sim_manager)
    assert moved == Device.objects.count()
    assert not Device.objects.filter(pool__isnull=True).exists()
    assert pools_assign(manager=sim_manager) == 0

    Pool.objects.filter(name="L40S GPUs, rack A").delete()
    catch_all = Pool.objects.create(name="Any GPU", slug="any-gpu", kind="gpu")
    assert pools_assign() == 2
    l40s = Device.objects.filter(model__startswith="L40S")
    assert {d.pool_id for d in l40s} == {catch_all.pk}
    record = ChangeRecord.objects.filter(target_type="device", target_id=l40s[0].pk).first()
    assert record.action == ChangeAction.CHANGED and record.changes["pool"] == [None, "Any GPU"]
    assert Rack.objects.count() == 1

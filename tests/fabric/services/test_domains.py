"""domains_refresh(): failure domains derived at every inventory sync and kept current."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from fabric.choices import FailureDomainKind
from fabric.models import Device, FabricManager, FailureDomain
from fabric.services.domains import domains_refresh, domains_refresh_outdated
from fabric.services.sync import inventory_sync
from fabric.simulator import store
from fabric.simulator.builder import world_write
from fabric.topology.radius import RADIUS_VERSION
from tests.fabric.simulated_world import TINY, simulated_manager

pytestmark = pytest.mark.django_db


def _domains(manager: FabricManager) -> dict[str, tuple[str, int, int]]:
    return {
        d.name: (d.kind, d.device_count, d.host_count)
        for d in FailureDomain.objects.filter(manager=manager)
    }


def test_a_sync_derives_every_domain_of_the_tiny_world(sim_manager: FabricManager) -> None:
    inventory_sync(manager=sim_manager)
    domains = _domains(sim_manager)
    assert domains["rack-a"] == (FailureDomainKind.RACK, 9, 3)
    # Every host hangs off the one leaf (on pdu-a-2): without it nothing reaches anything.
    assert domains["pdu-a-1"][0] == FailureDomainKind.POWER_FEED
    assert domains["pdu-a-2"][1:] == (9, 3)
    assert domains["gpu-a-01"] == (FailureDomainKind.ENCLOSURE, 2, 0)
    assert domains["mem-a-01"] == (FailureDomainKind.MEMORY_BOX, 1, 0)
    assert domains["cxl-leaf-a"] == (FailureDomainKind.SWITCH, 9, 3)
    assert domains["sim"] == (FailureDomainKind.FABRIC_MANAGER, 0, 0)
    kinds = {kind for kind, _, _ in domains.values()}
    assert kinds == set(FailureDomainKind.values)


def test_the_stored_counts_are_the_blast_radius_lost_and_degraded(
    sim_manager: FabricManager,
) -> None:
    inventory_sync(manager=sim_manager)
    spine = FailureDomain.objects.get(manager=sim_manager, name="cxl-spine-1")
    # The memory box and the JBOF are dual-homed on the spines: one spine loses nothing,
    # and every host reaches them over one spine fewer.
    assert (spine.device_count, spine.host_count) == (0, 0)
    assert (spine.devices_degraded_count, spine.hosts_degraded_count) == (3, 3)
    assert spine.headline == "nothing lost; 3 devices and 3 hosts degraded"
    manager = FailureDomain.objects.get(manager=sim_manager, kind=FailureDomainKind.FABRIC_MANAGER)
    assert (manager.devices_degraded_count, manager.hosts_degraded_count) == (9, 3)


def test_every_device_knows_its_domains(sim_manager: FabricManager) -> None:
    inventory_sync(manager=sim_manager)
    gpu = Device.objects.get(name="gpu-a-01-1")
    assert set(gpu.failure_domains.values_list("name", flat=True)) >= {
        "rack-a",
        "pdu-a-1",
        "gpu-a-01",
        "cxl-leaf-a",
        "sim",
    }
    assert "pdu-a-2" not in set(gpu.failure_domains.values_list("name", flat=True))


def test_a_second_refresh_changes_nothing(sim_manager: FabricManager) -> None:
    inventory_sync(manager=sim_manager)
    before = dict(FailureDomain.objects.values_list("key", "pk"))
    result = domains_refresh(manager=sim_manager)
    assert not result.changed
    assert result.domains == len(before)
    assert dict(FailureDomain.objects.values_list("key", "pk")) == before


def test_a_recount_finds_nothing_outdated_in_one_query(sim_manager: FabricManager) -> None:
    inventory_sync(manager=sim_manager)
    assert not FailureDomain.objects.exclude(radius_version=RADIUS_VERSION).exists()
    with CaptureQueriesContext(connection) as queries:
        assert domains_refresh_outdated() == []
    assert len(queries) == 1


def test_the_api_says_which_figures_are_being_recounted(
    sim_manager: FabricManager, api_as: Any, admin_user: Any
) -> None:
    inventory_sync(manager=sim_manager)
    FailureDomain.objects.filter(name="cxl-spine-1").update(radius_version=0)
    rows = api_as(admin_user).get("/api/v1/failure-domains/", {"page_size": 100}).json()
    outdated = {r["name"] for r in rows["results"] if r["counts_outdated"]}
    assert outdated == {"cxl-spine-1"}


def test_a_fault_keeps_the_domains_and_their_ids(sim_manager: FabricManager) -> None:
    inventory_sync(manager=sim_manager)
    before = dict(FailureDomain.objects.values_list("key", "pk"))
    store.element_fault_set(
        fabric=store.fabric_get("sim"), kind="enclosure", external_id="gpu-a-01", action="fail"
    )
    result = inventory_sync(manager=sim_manager)
    assert not result.warnings
    assert dict(FailureDomain.objects.values_list("key", "pk")) == before
    assert _domains(sim_manager)["gpu-a-01"] == (FailureDomainKind.ENCLOSURE, 2, 0)


def test_a_sync_after_gear_vanishes_removes_its_domains(sim_manager: FabricManager) -> None:
    inventory_sync(manager=sim_manager)
    world_write(fabric_name="sim", spec=TINY.__class__(**{**_spec(TINY), "gpu_enclosures": 1}))
    inventory_sync(manager=sim_manager)
    domains = _domains(sim_manager)
    assert "gpu-a-02" not in domains
    assert domains["rack-a"] == (FailureDomainKind.RACK, 7, 3)
    assert (
        not Device.objects.get(name="gpu-a-01-1").failure_domains.filter(name="gpu-a-02").exists()
    )


def _spec(spec: Any) -> dict[str, Any]:
    return {name: getattr(spec, name) for name in spec.__dataclass_fields__}


def test_the_number_of_queries_does_not_grow_with_the_fabric(db: None) -> None:
    def refresh_queries(name: str, gpus: int) -> list[int]:
        spec = TINY.__class__(**{**_spec(TINY), "gpus_per_enclosure": gpus})
        manager = simulated_manager(name=name, fabric=name, spec=spec)
        inventory_sync(manager=manager)
        FailureDomain.objects.filter(manager=manager).delete()
        counts = []
        for _ in range(2):  # creating every domain, then finding nothing to change
            with CaptureQueriesContext(connection) as queries:
                domains_refresh(manager=manager)
            counts.append(len(queries))
        return counts

    # Within one insert batch (SQLite: 999 parameters, so up to 499 memberships a statement).
    assert refresh_queries("small", 2) == refresh_queries("large", 20)


def test_a_failed_refresh_is_a_warning_not_a_failed_sync(
    sim_manager: FabricManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(**_kwargs: Any) -> None:
        raise RuntimeError("derivation broke")

    monkeypatch.setattr("fabric.services.sync.service.domains_refresh", broken)
    result = inventory_sync(manager=sim_manager)
    assert result.warnings == ["failure domains not refreshed: RuntimeError: derivation broke"]
    assert Device.objects.exists()

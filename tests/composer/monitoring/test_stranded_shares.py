"""Stranded capacity of a partly shared GPU: its free shares count as that fraction of a GPU,
usable only by the host it is shared on, so stranded when that host cannot use them (no
free cores, failed or not active, or no working path to the GPU's enclosure), and part of
its pool's free figure as every stranded figure is."""

from __future__ import annotations

from typing import Any

import pytest
from django.db.models import Q
from django.test import Client

from composer.choices import CompositionState
from composer.models import Composition
from composer.monitoring.stranded import stranded_by_pool
from fabric.choices import ComponentState, Health, LinkState
from fabric.models import Device, FabricManager, Host, Link
from fabric.selectors import pool_capacities
from fabric.services.pools import pools_assign, pools_ensure_defaults
from tests.support.compose import composed
from tests.support.metrics import scrape

pytestmark = pytest.mark.django_db

HOST = "host-a-01"
QUARTER = {"items": [{"kind": "gpu", "model": "H100 PCIe 80GB", "share": 250}], "cores": 4}


@pytest.fixture
def pooled(synced: FabricManager) -> FabricManager:
    """The tiny world with a pool per kind, model and rack (as the demo has)."""
    pools_ensure_defaults(manager=synced)
    pools_assign(manager=synced)
    return synced


@pytest.fixture
def shared(pooled: FabricManager, acme: Any, alice: Any) -> Device:
    """An H100 a quarter of which a composition on host-a-01 holds: 0.75 of it is free."""
    composition = composed(tenant=acme, user=alice, name="nb", spec={**QUARTER, "host": HOST})
    gpu = composition.allocations.get(released_at__isnull=True).device
    assert gpu.allocated_shares == 250 and gpu.shared_host is not None
    assert gpu.shared_host.name == HOST
    return gpu


def free_of(gpu: Device) -> float:
    return next(c.free for c in pool_capacities() if c.pool.pk == gpu.pool_id)


def fill_cores(tenant: Any, host: Host) -> None:
    """A live composition asking for every core the host has left."""
    used = sum(
        int((c.spec or {}).get("cores") or 0)
        for c in Composition.objects.filter(host=host, state=CompositionState.READY)
    )
    Composition.objects.create(
        tenant=tenant,
        name="all-cores",
        host=host,
        state=CompositionState.READY,
        spec={"cores": host.cores - used},
    )


def test_the_free_part_of_a_shared_gpu_its_host_can_use_is_not_stranded(shared: Device) -> None:
    assert free_of(shared) == pytest.approx(1.75)  # the other H100, and 0.75 of this one
    assert stranded_by_pool().get(shared.pool_id, 0) == 0


def test_the_free_part_is_stranded_when_its_host_has_no_free_cores(
    client: Client, shared: Device, acme: Any
) -> None:
    assert shared.shared_host is not None
    fill_cores(acme, shared.shared_host)

    # Only its host may take its shares; the other H100 is whole and other hosts reach it.
    assert stranded_by_pool()[shared.pool_id] == pytest.approx(0.75)
    assert shared.pool is not None
    labels = {"pool": shared.pool.name, "kind": "gpu", "unit": "devices"}
    result = scrape(client)
    assert result.value("composer_pool_stranded", **labels) == pytest.approx(0.75)
    assert result.value("composer_pool_free", **labels) == pytest.approx(1.75)


@pytest.mark.parametrize(
    "change", [{"health": Health.CRITICAL}, {"state": ComponentState.MAINTENANCE}]
)
def test_the_free_part_is_stranded_when_its_host_is_not_usable(
    shared: Device, change: dict[str, str]
) -> None:
    Host.objects.filter(name=HOST).update(**change)

    # Other hosts still reach the enclosure, but none of them may take its shares.
    assert stranded_by_pool()[shared.pool_id] == pytest.approx(0.75)


def test_the_free_part_is_stranded_when_its_host_no_longer_reaches_it(shared: Device) -> None:
    host = Host.objects.get(name=HOST)
    cut = Link.objects.filter(Q(a_port__host=host) | Q(b_port__host=host))
    assert cut.update(state=LinkState.DOWN)

    assert stranded_by_pool()[shared.pool_id] == pytest.approx(0.75)
    assert stranded_by_pool()[shared.pool_id] <= free_of(shared)

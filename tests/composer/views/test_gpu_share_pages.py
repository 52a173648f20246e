"""The pages show shares of GPUs: the device page which composition holds which share on
which host, the pool page its shared GPUs and their free shares, the composition page the
share it holds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from composer.services.compositions import composition_decompose
from fabric.models import Device, FabricManager, Pool
from tests.support.compose import composed

QUARTER = {"items": [{"kind": "gpu", "share": 250}]}


@pytest.mark.django_db
def test_the_pages_show_who_holds_which_share_on_which_host(
    synced: FabricManager,
    acme: Any,
    alice: Any,
    admin_user: Any,
    client_as: Callable[[Any], Client],
    django_capture_on_commit_callbacks: Any,
) -> None:
    pool, _ = Pool.objects.get_or_create(slug="gpus", defaults={"name": "GPUs", "kind": "gpu"})
    Device.objects.filter(kind="gpu").update(pool=pool)
    first = composed(tenant=acme, user=alice, name="quarter", spec=QUARTER)
    host = first.host
    assert host is not None
    composed(
        tenant=acme,
        user=alice,
        name="half",
        spec={"items": [{"kind": "gpu", "share": 500}], "host": host.pk},
    )
    gpu = first.allocations.get().device
    operator = client_as(admin_user)

    device_page = operator.get(reverse("fabric:device_detail", args=[gpu.pk])).content.decode()
    assert f"(250/1000 share on {host.name})" in device_page
    assert f"(500/1000 share on {host.name})" in device_page
    assert f"shared: 250/1000 free, on {host.name}" in device_page

    pool_page = operator.get(reverse("composer:pool_detail", args=[pool.slug])).content.decode()
    assert 'id="pool-shared"' in pool_page and "250/1000 free" in pool_page
    assert f"on {host.name}" in pool_page

    detail = client_as(alice).get(reverse("composer:composition_detail", args=[first.pk]))
    content = detail.content.decode()
    assert "250/1000 share" in content and "a 250/1000 share of a gpu" in content

    with django_capture_on_commit_callbacks(execute=True):
        composition_decompose(composition=first, actor=alice)
    pool_page = operator.get(reverse("composer:pool_detail", args=[pool.slug])).content.decode()
    assert "500/1000 free" in pool_page

"""Data migrations of composer, run on rows as an older release left them."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from django.apps import apps
from django.utils import timezone

from composer.choices import AllocationState
from composer.models import Allocation, Composition
from fabric.choices import DeviceState
from fabric.models import Device
from tests.factories.fabric import fabric_small

pytestmark = pytest.mark.django_db

backfill = importlib.import_module("composer.migrations.0005_device_allocated_gib")


def test_memory_devices_get_the_gib_and_the_state_of_the_slices_held_before(acme: Any) -> None:
    fabric = fabric_small()
    reserved_only, bound, maintained = fabric.memory[0], fabric.memory[1], fabric.gpus[0]
    Device.objects.filter(pk=maintained.pk).update(
        kind="cxl_memory", memory_gib=512, state=DeviceState.MAINTENANCE
    )
    building = Composition.objects.create(tenant=acme, name="building", spec={})
    ready = Composition.objects.create(tenant=acme, name="ready", spec={})
    Allocation.objects.create(composition=building, device=reserved_only, gib=300)
    Allocation.objects.create(composition=ready, device=bound, gib=200, state="bound")
    Allocation.objects.create(composition=ready, device=maintained, gib=64, state="bound")
    # A slice released by a heal whose unbind failed: still on the fabric, still held.
    pending = Allocation.objects.create(
        composition=ready,
        device=bound,
        gib=100,
        state=AllocationState.RELEASED,
        released_at=timezone.now(),
    )
    Composition.objects.filter(pk=ready.pk).update(
        placement={"unbind_pending": [{"allocation": pending.pk, "binding_id": "b-1"}]}
    )
    released = Composition.objects.create(tenant=acme, name="gone", spec={})
    Allocation.objects.create(
        composition=released,
        device=reserved_only,
        gib=500,
        state=AllocationState.RELEASED,
        released_at=timezone.now(),
    )

    backfill.backfill_allocated_gib(apps, None)
    backfill.backfill_allocated_gib(apps, None)  # idempotent

    figures = dict(Device.objects.filter(kind="cxl_memory").values_list("name", "allocated_gib"))
    states = dict(Device.objects.filter(kind="cxl_memory").values_list("name", "state"))
    assert figures == {reserved_only.name: 300, bound.name: 300, maintained.name: 64}
    assert states == {
        reserved_only.name: DeviceState.RESERVED,
        bound.name: DeviceState.BOUND,
        maintained.name: DeviceState.MAINTENANCE,  # an operator's state is kept
    }

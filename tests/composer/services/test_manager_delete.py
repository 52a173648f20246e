"""Deleting a fabric manager while the composer still holds what it reported: refused with
the reason, nothing deleted, and disabling offered instead."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from composer.choices import AllocationState
from composer.models import Allocation, Composition
from fabric.models import Device, FabricManager
from fabric.services.managers import ManagerInUse, manager_delete
from tests.factories.fabric import fabric_small

pytestmark = pytest.mark.django_db


def test_a_manager_whose_device_a_live_composition_holds_is_not_deleted(acme: Any) -> None:
    small = fabric_small()
    composition = Composition.objects.create(tenant=acme, name="building", spec={})
    Allocation.objects.create(composition=composition, device=small.gpus[0])
    with pytest.raises(ManagerInUse) as caught:
        manager_delete(manager=small.manager)
    assert "1 of its devices is held by compositions" in caught.value.message
    assert "disable the manager instead" in caught.value.message
    assert FabricManager.objects.filter(pk=small.manager.pk).exists()


def test_a_manager_whose_devices_past_compositions_used_keeps_their_history(acme: Any) -> None:
    small = fabric_small()
    composition = Composition.objects.create(tenant=acme, name="gone", spec={})
    Allocation.objects.create(
        composition=composition,
        device=small.gpus[0],
        state=AllocationState.RELEASED,
        released_at=timezone.now(),
    )
    with pytest.raises(ManagerInUse) as caught:
        manager_delete(manager=small.manager)
    assert "records of allocations still refer to what it reported" in caught.value.message
    assert "Disable the manager instead" in caught.value.message
    # Nothing half-deleted: the inventory is all there.
    assert Device.objects.filter(manager=small.manager).count() == 10
    assert FabricManager.objects.filter(pk=small.manager.pk).exists()

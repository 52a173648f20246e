"""What a rolled-back compose leaves: nothing held, nothing bound, every device free."""

from __future__ import annotations

from composer.choices import CompositionState
from composer.models import Allocation, Composition
from fabric.choices import DeviceState
from fabric.drivers.base import FabricDriver
from fabric.models import Device


def assert_rolled_back(composition: Composition, driver: FabricDriver) -> None:
    """`composition` FAILED with a reason; the manager binds nothing, no allocation is
    held and every device is free again (rule 2: recorded or undone)."""
    composition.refresh_from_db()
    assert composition.state == CompositionState.FAILED
    assert composition.failure_reason
    assert driver.bindings() == []
    assert not Allocation.objects.filter(released_at__isnull=True).exists()
    assert set(Device.objects.values_list("state", flat=True)) == {DeviceState.FREE}

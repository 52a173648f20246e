# Backfills fabric.Device.allocated_gib (added by fabric 0004) from the slices compositions
# hold, and gives those memory devices the state their slices imply. Written here, not in
# fabric, because the allocations are composer's and fabric never depends on composer.
# The live count is composer.services.allocations.reconcile.slices_held_gib (beat corrects
# drift with it); this keeps its own copy, as a migration must not import app code that
# may change after it was written.

from django.db import migrations
from django.db.models import Q, Sum


def backfill_allocated_gib(apps, schema_editor):
    """allocated_gib = the unreleased slices of each memory device, plus the slices released
    with an unbind still pending (kept out of the pool until the unbind succeeds); the
    device's state follows (FREE / RESERVED / BOUND) unless it is failed, in maintenance or
    absent. Idempotent: every memory device is recomputed."""
    Device = apps.get_model("fabric", "Device")
    Allocation = apps.get_model("composer", "Allocation")
    Composition = apps.get_model("composer", "Composition")

    held = {
        row["device_id"]: row["total"]
        for row in Allocation.objects.filter(released_at__isnull=True, gib__isnull=False)
        .values("device_id")
        .annotate(total=Sum("gib"))
    }
    pending = set()
    for placement in Composition.objects.filter(placement__has_key="unbind_pending").values_list(
        "placement", flat=True
    ):
        pending |= {e.get("allocation") for e in placement.get("unbind_pending") or []}
    for device_id, gib in Allocation.objects.filter(pk__in=pending, gib__isnull=False).values_list(
        "device_id", "gib"
    ):
        held[device_id] = held.get(device_id, 0) + gib
    slice_states = {}
    for device_id, state in Allocation.objects.filter(
        released_at__isnull=True, gib__isnull=False
    ).values_list("device_id", "state"):
        slice_states.setdefault(device_id, set()).add(state)
    memory = Device.objects.filter(Q(kind="cxl_memory") | Q(pk__in=list(held)))
    for device in memory.only("pk", "state", "allocated_gib"):
        gib = held.get(device.pk, 0)
        state = device.state
        if state in ("free", "reserved", "bound"):
            states = slice_states.get(device.pk, set())
            if not gib:
                state = "free"
            elif states and states <= {"reserved"}:
                state = "reserved"  # claimed, none bound yet
            else:
                state = "bound"  # a slice bound, or one whose unbind is pending
        if (gib, state) != (device.allocated_gib, device.state):
            Device.objects.filter(pk=device.pk).update(allocated_gib=gib, state=state)


class Migration(migrations.Migration):
    dependencies = [
        ("composer", "0004_alert_audience"),
        ("fabric", "0004_device_allocated_gib"),
    ]

    operations = [
        migrations.RunPython(backfill_allocated_gib, migrations.RunPython.noop, elidable=True),
    ]

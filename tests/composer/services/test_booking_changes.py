"""Extending and shortening one occurrence: admitted only if its held devices are free for
the extra time (else nothing changes), the time given back when shortened, field-named
errors, each change audited; a running occurrence's new end is the one the clock keeps."""

from __future__ import annotations

from typing import Any

import pytest

from composer.errors import BookingRefused, SpecError
from composer.models import BookingHold, Composition, Occurrence, Quota
from composer.services.booking_changes import occurrence_reschedule
from fabric.choices import ComponentState
from fabric.models import ChangeRecord, Device, FabricManager, Host
from tests.composer.services.test_booking_clock import LEAD, TWO_GPUS, book, held, tick, tomorrow

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def clock(settings: Any) -> None:
    settings.COMPOSER_BOOKING_LEAD_S = 120
    settings.COMPOSER_BOOKING_WARN_S = 600


def test_extend_is_admitted_only_if_the_devices_are_free_for_the_extra_time(
    synced: FabricManager,
    acme: Any,
    globex: Any,
    alice: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    four = {"items": [{"kind": "gpu", "count": 4}]}
    occurrence = book(acme, alice, tomorrow(8), tomorrow(10), spec=four)
    book(globex, None, tomorrow(11), tomorrow(12), name="after", spec=TWO_GPUS)

    occurrence_reschedule(occurrence=occurrence, ends_at=tomorrow(11), actor=alice)
    occurrence.refresh_from_db()
    assert occurrence.ends_at == tomorrow(11)
    assert set(
        BookingHold.objects.filter(occurrence=occurrence).values_list("ends_at", flat=True)
    ) == {tomorrow(11)}

    with pytest.raises(BookingRefused) as refused:
        occurrence_reschedule(occurrence=occurrence, ends_at=tomorrow(12), actor=alice)
    assert refused.value.field == "ends_at"
    occurrence.refresh_from_db()
    assert occurrence.ends_at == tomorrow(11) and len(held(occurrence)) == 4  # unchanged

    records = ChangeRecord.objects.filter(target_type="booking", message__startswith="Extended")
    assert records.count() == 1 and records[0].actor == alice


def test_shorten_gives_the_time_back_and_extend_of_a_running_one_moves_its_end(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    occurrence = book(acme, alice, tomorrow(8), tomorrow(20))
    tick(tomorrow(8) - LEAD, django_capture_on_commit_callbacks)

    occurrence_reschedule(occurrence=occurrence, ends_at=tomorrow(21), actor=alice, now=tomorrow(9))
    occurrence_reschedule(occurrence=occurrence, ends_at=tomorrow(18), actor=alice, now=tomorrow(9))
    occurrence.refresh_from_db()
    assert occurrence.ends_at == tomorrow(18)
    assert set(
        BookingHold.objects.filter(occurrence=occurrence).values_list("ends_at", flat=True)
    ) == {tomorrow(18)}
    assert ChangeRecord.objects.filter(message__startswith="Shortened").count() == 1

    with pytest.raises(SpecError) as bad:
        occurrence_reschedule(
            occurrence=occurrence, ends_at=tomorrow(8, 30), actor=alice, now=tomorrow(9)
        )
    assert bad.value.field == "ends_at"
    with pytest.raises(SpecError) as bad:
        occurrence_reschedule(
            occurrence=occurrence,
            ends_at=tomorrow(19),
            actor=alice,
            now=tomorrow(9),
            direction="shorten",
        )
    assert bad.value.field == "ends_at"

    assert tick(tomorrow(18), django_capture_on_commit_callbacks).ended == [occurrence.pk]


def test_extend_counts_the_tenants_quotas_over_the_extra_time(
    synced: FabricManager,
    acme: Any,
    alice: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Under a 3-GPU quota: a running 2-GPU window may run on into a 1-GPU window's time
    (3 at once), not into a 2-GPU one's (4); its own composition is not counted twice."""
    Quota.objects.create(tenant=acme, kind="gpu", max_count=3)
    g = list(Device.objects.filter(kind="gpu").order_by("name").values_list("name", flat=True))

    def named(*names: str) -> dict[str, Any]:  # devices named: no window shares one
        return {"devices": [{"device": name} for name in names]}

    running = book(acme, alice, tomorrow(8), tomorrow(10), spec=named(g[0], g[1]))
    book(acme, alice, tomorrow(10), tomorrow(12), name="one", spec=named(g[2]))
    book(acme, alice, tomorrow(12), tomorrow(14), name="two", spec=named(g[2], g[3]))
    tick(tomorrow(8) - LEAD, django_capture_on_commit_callbacks)

    moved = occurrence_reschedule(
        occurrence=running, ends_at=tomorrow(12), actor=alice, now=tomorrow(9)
    )
    assert moved.ends_at == tomorrow(12)
    with pytest.raises(BookingRefused) as refused:
        occurrence_reschedule(
            occurrence=running, ends_at=tomorrow(13), actor=alice, now=tomorrow(9)
        )
    assert refused.value.field == "ends_at"
    assert "Cannot extend to" in refused.value.message and "quota" in refused.value.message
    running.refresh_from_db()
    assert running.ends_at == tomorrow(12)  # unchanged


def test_extend_counts_the_host_s_cores_and_memory_over_the_extra_time(
    synced: FabricManager,
    acme: Any,
    globex: Any,
    alice: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Two windows on one host, each asking more than half its cores (then its memory):
    the first may run on up to the second's start, not into it; a running window's own
    composition is not counted beside it."""
    host = Host.objects.filter(cores__gt=1, memory_gib__gt=1).order_by("name").first()
    assert host is not None
    g = list(Device.objects.filter(kind="gpu").order_by("name").values_list("name", flat=True))

    def on_host(device: str, **asks: int) -> dict[str, Any]:  # no device shared: the host
        return {"devices": [{"device": device}], "host": host.name, **asks}  # alone refuses

    for key, size, words in (
        ("cores", host.cores, "cores"),
        ("host_memory_gib", host.memory_gib, "host memory"),
    ):
        spec = on_host(g[0], **{key: size // 2 + 1})
        first = book(acme, alice, tomorrow(8), tomorrow(10), name=f"first-{key}", spec=spec)
        spec = on_host(g[1], **{key: size // 2 + 1})
        second = book(globex, None, tomorrow(11), tomorrow(12), name=f"second-{key}", spec=spec)
        assert first.host_id == second.host_id == host.pk

        occurrence_reschedule(occurrence=first, ends_at=tomorrow(11), actor=alice)
        with pytest.raises(BookingRefused) as refused:
            occurrence_reschedule(occurrence=first, ends_at=tomorrow(12), actor=alice)
        assert refused.value.field == "ends_at"
        assert f"its host lacks the {words}" in refused.value.message
        first.refresh_from_db()
        assert first.ends_at == tomorrow(11) and len(held(first)) == 1  # unchanged
        BookingHold.objects.filter(occurrence__in=[first, second]).delete()
        Occurrence.objects.filter(pk__in=[first.pk, second.pk]).delete()

    # Running, its composition holds the host's cores now: extending it counts them once.
    spec = on_host(g[0], cores=host.cores)
    running = book(acme, alice, tomorrow(14), tomorrow(15), name="running", spec=spec)
    tick(tomorrow(14) - LEAD, django_capture_on_commit_callbacks)
    running.refresh_from_db()
    assert running.composition_id is not None
    moved = occurrence_reschedule(
        occurrence=running, ends_at=tomorrow(16), actor=alice, now=tomorrow(14, 30)
    )
    assert moved.ends_at == tomorrow(16)


def test_extend_counts_the_host_a_heal_moved_it_to_and_none_out_of_service(
    synced: FabricManager,
    acme: Any,
    globex: Any,
    alice: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """A running occurrence whose composition a heal moved to another host is checked
    there, not where it was placed; a host in maintenance takes no more time."""
    first = Host.objects.filter(cores__gt=1).order_by("name").first()
    assert first is not None
    big = first.cores // 2 + 1
    other = Host.objects.exclude(pk=first.pk).filter(cores__gte=big).order_by("name").first()
    assert other is not None
    g = list(Device.objects.filter(kind="gpu").order_by("name").values_list("name", flat=True))
    spec = {"devices": [{"device": g[0]}], "host": first.name, "cores": big}
    running = book(acme, alice, tomorrow(8), tomorrow(10), name="running", spec=spec)
    spec = {"devices": [{"device": g[1]}], "host": first.name, "cores": big}
    book(globex, None, tomorrow(10), tomorrow(12), name="later", spec=spec)
    tick(tomorrow(8) - LEAD, django_capture_on_commit_callbacks)
    running.refresh_from_db()
    assert running.composition_id is not None
    # Healed onto `other` (as booking_start does: the composition moves, the row stays).
    Composition.objects.filter(pk=running.composition_id).update(host=other)

    moved = occurrence_reschedule(
        occurrence=running, ends_at=tomorrow(11), actor=alice, now=tomorrow(9)
    )
    assert moved.ends_at == tomorrow(11)  # `first`'s later window is not where it runs

    Host.objects.filter(pk=other.pk).update(state=ComponentState.MAINTENANCE)
    with pytest.raises(BookingRefused) as refused:
        occurrence_reschedule(
            occurrence=running, ends_at=tomorrow(12), actor=alice, now=tomorrow(9)
        )
    assert refused.value.field == "ends_at"
    assert "its host is out of service (maintenance)" in refused.value.message
    running.refresh_from_db()
    assert running.ends_at == tomorrow(11)

"""Booking admission: every occurrence placed, its devices held for its window; refusals
that name the occurrence and offer the nearest window; quotas counting booked windows; and
immediate requests that leave booked devices alone unless an operator overrides."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from composer.choices import BookingState, CompositionState, OccurrenceState
from composer.errors import BookingRefused, QuotaExceeded, SpecError
from composer.models import Booking, BookingHold, ChangeAudience, Occurrence, Quota, StateChange
from composer.services.bookings import booking_cancel, booking_request, occurrence_cancel
from composer.services.compositions import composition_request
from fabric.models import ChangeRecord, FabricManager

pytestmark = pytest.mark.django_db

TWO_GPUS = {"items": [{"kind": "gpu", "count": 2}]}
FOUR_GPUS = {"items": [{"kind": "gpu", "count": 4}]}


def tomorrow(hour: int, minute: int = 0) -> datetime:
    day = (timezone.now() + timedelta(days=1)).date()
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=UTC)


def book(tenant: Any, user: Any, spec: dict, start: datetime, end: datetime, **kw: Any) -> Booking:
    return booking_request(
        tenant=tenant,
        requested_by=user,
        name=kw.pop("name", "night"),
        spec=spec,
        starts_at=start,
        ends_at=end,
        **kw,
    )


def held(booking: Booking) -> list[int]:
    return sorted(
        BookingHold.objects.filter(occurrence__booking=booking).values_list("device_id", flat=True)
    )


def test_a_one_off_booking_holds_its_devices_for_its_window(
    synced: FabricManager, acme: Any, alice: Any
) -> None:
    booking = book(acme, alice, TWO_GPUS, tomorrow(8), tomorrow(20))

    assert booking.state == BookingState.BOOKED
    (occurrence,) = booking.occurrences.all()
    assert (occurrence.starts_at, occurrence.ends_at) == (tomorrow(8), tomorrow(20))
    assert occurrence.host_id is not None and occurrence.placement["ok"] is True
    assert len(held(booking)) == 2
    record = ChangeRecord.objects.get(target_type="booking", target_id=booking.pk)
    assert record.actor == alice and "1 occurrence" in record.message
    assert ChangeAudience.objects.filter(record=record, tenant=acme).exists()


def test_an_overlapping_booking_for_the_same_gpus_is_refused_with_the_nearest_window(
    synced: FabricManager, acme: Any, globex: Any, alice: Any
) -> None:
    book(acme, alice, FOUR_GPUS, tomorrow(8), tomorrow(12))

    with pytest.raises(BookingRefused) as refused:
        book(globex, None, TWO_GPUS, tomorrow(10), tomorrow(11), name="clash")

    assert refused.value.field == "starts_at"
    assert "The booking does not fit" in refused.value.message
    # The first whole hour after which the window no longer overlaps: 12:00.
    assert refused.value.nearest == {
        "starts_at": tomorrow(12).isoformat(),
        "ends_at": tomorrow(13).isoformat(),
    }
    assert "12:00" in refused.value.message
    assert not Booking.objects.filter(name="clash").exists()


def test_back_to_back_windows_share_the_devices(
    synced: FabricManager, acme: Any, globex: Any, alice: Any
) -> None:
    day = book(acme, alice, FOUR_GPUS, tomorrow(8), tomorrow(20))
    night = book(globex, None, FOUR_GPUS, tomorrow(20), tomorrow(23), name="evening")

    assert held(day) == held(night)


def test_a_recurring_booking_names_the_occurrence_that_fails_in_local_time(
    synced: FabricManager, acme: Any, globex: Any, alice: Any
) -> None:
    first = tomorrow(8)
    # Globex takes every GPU on the third day only.
    third = first + timedelta(days=2)
    book(globex, None, FOUR_GPUS, third + timedelta(hours=1), third + timedelta(hours=2))

    with pytest.raises(BookingRefused) as refused:
        book(
            acme,
            alice,
            TWO_GPUS,
            first,
            first + timedelta(hours=4),
            time_zone="Europe/Berlin",
            recurrence="daily",
            until=(first + timedelta(days=4)).date(),
        )

    local = third.astimezone(ZoneInfo("Europe/Berlin"))
    assert refused.value.field == "recurrence"
    assert f"The occurrence of {local:%a %Y-%m-%d %H:%M}" in refused.value.message
    assert refused.value.nearest is not None  # shifted by a few hours, every day fits


def test_occurrences_follow_the_recurrence_and_each_is_held(
    synced: FabricManager, acme: Any, alice: Any
) -> None:
    first = tomorrow(20)
    booking = book(
        acme,
        alice,
        TWO_GPUS,
        first,
        first + timedelta(hours=10),
        recurrence="daily",
        until=(first + timedelta(days=6)).date(),
    )

    occurrences = list(booking.occurrences.all())
    assert len(occurrences) == 7
    assert BookingHold.objects.filter(occurrence__booking=booking).count() == 14


def test_an_immediate_request_leaves_booked_gpus_alone(
    synced: FabricManager, acme: Any, globex: Any, alice: Any, admin_user: Any
) -> None:
    book(acme, alice, FOUR_GPUS, tomorrow(8), tomorrow(9))

    now = composition_request(
        tenant=globex, requested_by=None, spec={"items": [{"kind": "gpu", "count": 1}]}, name="n"
    )
    assert now.state == CompositionState.REJECTED

    with pytest.raises(SpecError) as error:
        composition_request(
            tenant=globex,
            requested_by=alice,
            spec={"items": [{"kind": "gpu", "count": 1}]},
            name="n2",
            override_bookings="I want it",
        )
    assert error.value.field == "override_bookings"

    overridden = composition_request(
        tenant=globex,
        requested_by=admin_user,
        spec={"items": [{"kind": "gpu", "count": 1}]},
        name="n3",
        override_bookings="incident 42: the training run waits",
    )
    assert overridden.state == CompositionState.PLACING
    change = StateChange.objects.get(composition=overridden, to_state=CompositionState.PLACING)
    assert change.actor == admin_user
    assert "incident 42" in change.reason


def test_a_booking_cannot_take_gpus_held_by_a_composition_now(
    synced: FabricManager, acme: Any, globex: Any, alice: Any
) -> None:
    composition_request(tenant=globex, requested_by=None, spec=TWO_GPUS, name="now")

    book(acme, alice, TWO_GPUS, tomorrow(8), tomorrow(9))
    with pytest.raises(BookingRefused):
        book(acme, alice, TWO_GPUS, tomorrow(8), tomorrow(9), name="more")


def test_quotas_count_booked_windows(synced: FabricManager, acme: Any, alice: Any) -> None:
    Quota.objects.create(tenant=acme, kind="gpu", max_count=2)
    book(acme, alice, TWO_GPUS, tomorrow(8), tomorrow(10))

    with pytest.raises(BookingRefused) as refused:
        book(acme, alice, {"items": [{"kind": "gpu", "count": 1}]}, tomorrow(9), tomorrow(11))
    assert refused.value.field == "items[0].count"
    assert "in use or booked" in refused.value.message
    assert refused.value.nearest == {
        "starts_at": tomorrow(10).isoformat(),
        "ends_at": tomorrow(12).isoformat(),
    }

    # After the window it fits; and a composition now stands beside the booked peak.
    book(acme, alice, {"items": [{"kind": "gpu", "count": 1}]}, tomorrow(10), tomorrow(11))
    with pytest.raises(QuotaExceeded):
        composition_request(
            tenant=acme, requested_by=alice, spec={"items": [{"kind": "gpu", "count": 1}]}, name="x"
        )


def test_quotas_count_what_is_booked_at_once_not_every_window_of_the_day(
    synced: FabricManager, acme: Any, alice: Any
) -> None:
    """1 GPU booked 08-10 and 1 more 12-14 never hold 2 at once: a 1-GPU booking for
    08-14 fits a quota of 2, and a second one does not (it would meet both)."""
    Quota.objects.create(tenant=acme, kind="gpu", max_count=2)
    one = {"items": [{"kind": "gpu", "count": 1}]}
    book(acme, alice, one, tomorrow(8), tomorrow(10), name="a")
    book(acme, alice, one, tomorrow(12), tomorrow(14), name="b")
    book(acme, alice, one, tomorrow(8), tomorrow(14), name="c")
    with pytest.raises(BookingRefused) as refused:
        book(acme, alice, one, tomorrow(9), tomorrow(13), name="d")
    assert "in use or booked" in refused.value.message


def test_memory_slices_are_held_per_window(
    synced: FabricManager, acme: Any, globex: Any, alice: Any
) -> None:
    book(acme, alice, {"memory_gib": 600}, tomorrow(8), tomorrow(12))
    with pytest.raises(BookingRefused):
        book(globex, None, {"memory_gib": 600}, tomorrow(11), tomorrow(13), name="m")
    later = book(globex, None, {"memory_gib": 600}, tomorrow(12), tomorrow(13), name="m2")
    assert BookingHold.objects.get(occurrence__booking=later).gib == 600


def test_cancelling_an_occurrence_or_the_series_gives_the_devices_back(
    synced: FabricManager, acme: Any, globex: Any, alice: Any
) -> None:
    first = tomorrow(8)
    booking = book(
        acme,
        alice,
        FOUR_GPUS,
        first,
        first + timedelta(hours=2),
        recurrence="daily",
        until=(first + timedelta(days=2)).date(),
    )
    second = booking.occurrences.all()[1]
    occurrence_cancel(occurrence=second, actor=alice)
    assert second.state == OccurrenceState.CANCELLED
    assert not second.holds.exists()
    # Its window is free again for another tenant.
    book(globex, None, FOUR_GPUS, second.starts_at, second.ends_at, name="taken")

    booking_cancel(booking=booking, actor=alice)
    assert booking.state == BookingState.CANCELLED
    assert not BookingHold.objects.filter(occurrence__booking=booking).exists()
    assert set(Occurrence.objects.filter(booking=booking).values_list("state", flat=True)) == {
        OccurrenceState.CANCELLED
    }
    assert ChangeRecord.objects.filter(target_type="booking", target_id=booking.pk).count() == 3


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"starts_at": datetime(2020, 1, 1, 8, tzinfo=UTC)}, "starts_at"),
        ({"time_zone": "Nowhere/Land"}, "time_zone"),
        ({"recurrence": "daily"}, "until"),
        ({"recurrence": "daily", "until": date(2099, 1, 1)}, "until"),
        ({"name": " "}, "name"),
        ({"spec": {"items": [{"kind": "gpu", "count": 99}]}}, "items[0].count"),
    ],
)
def test_bad_input_names_its_field(
    synced: FabricManager, acme: Any, alice: Any, kwargs: dict, field: str
) -> None:
    args: dict[str, Any] = {
        "tenant": acme,
        "requested_by": alice,
        "name": "b",
        "spec": TWO_GPUS,
        "starts_at": tomorrow(8),
        "ends_at": tomorrow(9),
        **kwargs,
    }
    with pytest.raises(SpecError) as error:
        booking_request(**args)
    assert error.value.field == field


def test_the_database_refuses_two_overlapping_holds_of_one_device(
    postgres: None, synced: FabricManager, acme: Any, alice: Any
) -> None:
    """Rule 7 without the service's checks: the exclusion constraint itself."""
    booking = book(acme, alice, TWO_GPUS, tomorrow(8), tomorrow(10))
    hold = BookingHold.objects.filter(occurrence__booking=booking).first()
    assert hold is not None and connection.vendor == "postgresql"
    with pytest.raises(IntegrityError), transaction.atomic():
        BookingHold.objects.create(
            occurrence=hold.occurrence,
            device=hold.device,
            starts_at=tomorrow(9),
            ends_at=tomorrow(11),
        )
    # Touching windows are not overlapping ones.
    BookingHold.objects.create(
        occurrence=hold.occurrence, device=hold.device, starts_at=tomorrow(10), ends_at=tomorrow(11)
    )


def test_a_template_s_schedule_is_the_default_window_and_recurrence(
    synced: FabricManager, acme: Any, alice: Any
) -> None:
    from composer.models import Template

    template = Template(
        name="inference-night",
        slug="inference-night",
        spec=TWO_GPUS,
        schedule={"recurrence": "daily", "starts": "22:00", "ends": "06:00", "time_zone": "UTC"},
    )
    template.full_clean()
    template.save()
    until = (timezone.now() + timedelta(days=3)).date()

    booking = booking_request(
        tenant=acme, requested_by=alice, name="nights", spec=None, template=template, until=until
    )

    assert booking.recurrence == "daily" and booking.time_zone == "UTC"
    first = booking.occurrences.first()
    assert first is not None
    assert (first.starts_at.hour, first.ends_at.hour) == (22, 6)
    assert first.ends_at - first.starts_at == timedelta(hours=8)
    assert booking.occurrences.count() in (3, 4)  # tonight's, if still ahead, to `until`

    with pytest.raises(SpecError) as error:
        booking_request(tenant=acme, requested_by=alice, name="x", spec=TWO_GPUS)
    assert error.value.field == "starts_at"


def test_gpu_shares_are_held_per_window_and_add_up(
    synced: FabricManager, acme: Any, globex: Any, alice: Any
) -> None:
    half = {"items": [{"kind": "gpu", "share": 500}]}
    first = book(acme, alice, half, tomorrow(8), tomorrow(12), name="s1")
    second = book(globex, None, half, tomorrow(9), tomorrow(13), name="s2")
    holds = list(
        BookingHold.objects.filter(occurrence__booking__in=[first, second]).values_list(
            "device_id", "share", "host_id"
        )
    )
    assert [h[1] for h in holds] == [500, 500]
    # However they were placed, no GPU is held over its 1000 thousandths in the overlap.
    per_device: dict[int, int] = {}
    for device, share, _ in holds:
        per_device[device] = per_device.get(device, 0) + share
    assert max(per_device.values()) <= 1000
    # A composition now may still take what the windows leave of the GPUs.
    now = composition_request(tenant=globex, requested_by=None, spec=half, name="now")
    assert now.state == CompositionState.PLACING


def test_no_nearest_window_when_no_shift_within_a_week_helps(
    synced: FabricManager, acme: Any, globex: Any, alice: Any
) -> None:
    composition_request(
        tenant=globex, requested_by=None, spec={"items": [{"kind": "gpu", "count": 1}]}, name="n"
    )
    with pytest.raises(BookingRefused) as refused:
        book(acme, alice, FOUR_GPUS, tomorrow(8), tomorrow(9))
    assert refused.value.nearest is None
    assert "No window within a week after it fits either." in refused.value.message

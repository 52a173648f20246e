"""A small booked world for the calendar's tests: on the small fabric's eight H100 GPUs (one
in maintenance), Acme holds three GPUs 01:00-04:00 and Globex four 02:00-06:00 on `DAY`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from composer.models import Booking, BookingHold, Occurrence
from fabric.choices import DeviceState
from tests.factories.fabric import SmallFabric

DAY = datetime(2031, 3, 10, tzinfo=UTC)


def at(hour: int) -> datetime:
    return DAY + timedelta(hours=hour)


@dataclass
class BookedWorld:
    acme_booking: Booking
    globex_booking: Booking
    acme_window: Occurrence
    globex_window: Occurrence


def book_window(
    tenant: Any, name: str, start: datetime, end: datetime, devices: list[Any], host: Any
) -> tuple[Booking, Occurrence]:
    """A booking with one window holding `devices` whole (rows written as admission does)."""
    booking = Booking.objects.create(
        tenant=tenant, name=name, spec={"items": []}, starts_at=start, ends_at=end
    )
    occurrence = Occurrence.objects.create(
        booking=booking, starts_at=start, ends_at=end, host=host, placement={"ok": True}
    )
    for device in devices:
        BookingHold.objects.create(
            occurrence=occurrence, device=device, host=host, starts_at=start, ends_at=end
        )
    return booking, occurrence


def booked_world(small: SmallFabric, acme: Any, globex: Any) -> BookedWorld:
    gpus = small.gpus
    gpus[7].state = DeviceState.MAINTENANCE
    gpus[7].save(update_fields=["state"])
    a, a_occ = book_window(acme, "acme-night", at(1), at(4), gpus[0:3], small.hosts[0])
    g, g_occ = book_window(globex, "globex-run", at(2), at(6), gpus[3:7], small.hosts[1])
    return BookedWorld(a, g, a_occ, g_occ)

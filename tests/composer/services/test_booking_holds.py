"""What booked windows take out of a snapshot, on the placement tests' hand-built world:
whole devices, GiB, shares on their host (or the whole device when they cannot be), cores,
and the case of a device held whole by a booking that has since been shared."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from composer.placement.shareable import free_shares
from composer.recurrence import Window
from composer.selectors.bookings import Booked, HeldDevice
from composer.services.booking_holds import snapshot_less_booked
from tests.composer.placement.helpers import world

START = datetime(2026, 6, 1, 8, tzinfo=UTC)
END = START + timedelta(hours=4)


def hold(
    device: str, *, host: str | None = "host:a", gib: int | None = None, share: int | None = None
) -> HeldDevice:
    return HeldDevice(
        id=hash((device, host, gib, share)) % 10_000,
        occurrence=1,
        device=device,
        host=host,
        starts_at=START,
        ends_at=END,
        gib=gib,
        share=share,
        tenant=1,
        kind="cxl_memory" if gib else "gpu",
        model="",
        capacity_gb=0,
    )


def test_nothing_booked_is_the_same_snapshot() -> None:
    snapshot = world()
    assert snapshot_less_booked(snapshot, Booked((), ())) is snapshot


def test_whole_devices_leave_and_gib_are_subtracted_and_marked_sliced() -> None:
    booked = Booked(
        (hold("device:a1-0"), hold("device:mem-0", gib=200)),
        ((1, "host:a", START, END, 16, 64),),
    )
    taken = snapshot_less_booked(world(), booked)
    assert "device:a1-0" not in taken.devices
    assert taken.devices["device:mem-0"].free_gib == 312
    assert "device:mem-0" in taken.sliced["host:a"]
    assert taken.hosts["host:a"].cores_free == 64 - 16
    assert taken.hosts["host:a"].memory_gib_free == 512 - 64


@pytest.mark.parametrize(
    ("holds", "expected"),
    [
        # Two shares on one host add up on that host.
        ([("host:a", 300), ("host:a", 200)], ("host:a", 500)),
        # Shares on two hosts cannot both be honoured on one GPU: it leaves the snapshot.
        ([("host:a", 300), ("host:b", 200)], None),
        # Every share held: it leaves.
        ([("host:a", 1000)], None),
    ],
)
def test_shares_are_taken_on_their_host_or_the_device_leaves(
    holds: list[tuple[str, int]], expected: tuple[str, int] | None
) -> None:
    booked = Booked(tuple(hold("device:a1-1", host=h, share=s) for h, s in holds), ())
    taken = snapshot_less_booked(world(), booked)
    if expected is None:
        assert "device:a1-1" not in taken.devices
    else:
        device = taken.devices["device:a1-1"]
        assert (device.shared_host, 1000 - free_shares(device)) == expected


def test_a_device_held_whole_but_shared_since_gives_up_what_it_has_left() -> None:
    """An operator's override put a share of a booked GPU on host b: the booked window
    still may not be given the rest, and building the snapshot does not fail."""
    shared = world().taking(shares={"device:a1-2": ("host:b", 250)})
    taken = snapshot_less_booked(shared, Booked((hold("device:a1-2"),), ()))
    assert "device:a1-2" not in taken.devices


def test_during_finds_a_long_window_that_started_days_before_and_skips_touching_ones() -> None:
    def held(start: datetime, end: datetime, occurrence: int) -> HeldDevice:
        return HeldDevice(occurrence, occurrence, "device:a1-0", "host:a", start, end, None,
                          None, 1, "gpu", "", 0)  # fmt: skip

    long = held(START - timedelta(days=3), END, 1)
    before = held(START - timedelta(hours=2), START, 2)  # ends as the window starts
    after = held(END, END + timedelta(hours=1), 3)  # starts as it ends
    inside = held(START + timedelta(hours=1), START + timedelta(hours=2), 4)
    booked = Booked((after, inside, before, long), ())
    assert booked.during(Window(START, END)).key() == frozenset({1, 4})
    assert booked.during(Window(END, END + timedelta(minutes=30))).key() == frozenset({3})

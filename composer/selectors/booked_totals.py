"""What bookings hold in any of several windows, summed per device and per host: what a
series' admission takes out of the snapshot to place every occurrence at once.

Why: a weekly booking over 90 days has 13 windows, each overlapping hundreds of holds.
Placing each window on its own snapshot costs a patch and a placement per window, and
reading every hold with its window and tenant costs thousands of rows. A set of devices
free in every window is found by one placement on the snapshot less everything any of the
windows holds, summed (`composer.services.booking_holds.snapshot_less_held`), and the
database sums it in two grouped queries of a few hundred rows. The sums take at least what
any one window holds: a placement that fits them fits every window.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from django.db.models import Count, FloatField, Q, Sum
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from composer.choices import OccurrenceState
from composer.models import BookingHold, Occurrence
from composer.recurrence import Window
from composer.selectors.bookings import Booked, overlapping

__all__ = ["HeldTotals", "held_totals"]


@dataclass(frozen=True)
class HeldTotals:
    """Holds summed, in snapshot ids: devices held whole; GiB of memory devices held, and
    for which hosts a memory device holds a slice (one slice of a device per host); shares
    of GPUs held per host; host cores and memory the occurrences ask."""

    whole: frozenset[str] = frozenset()
    gib: Mapping[str, int] = field(default_factory=dict)
    sliced: Mapping[str, frozenset[str]] = field(default_factory=dict)  # host -> devices
    shares: Mapping[str, Mapping[str, int]] = field(default_factory=dict)  # device -> host
    cores: Mapping[str, int] = field(default_factory=dict)
    host_memory_gib: Mapping[str, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.whole or self.gib or self.shares or self.cores or self.host_memory_gib)

    @classmethod
    def of(cls, booked: Booked) -> HeldTotals:
        """The totals of holds already read (one window's, to patch its snapshot)."""
        parts = (
            (h.device, h.host, h.gib, None, False)
            if h.gib is not None
            else (h.device, h.host, None, h.share, False)
            if h.share is not None and h.host
            else (h.device, h.host, None, None, True)
            for h in booked.holds
        )
        return _summed(parts, ((host, c, m) for _, host, _, _, c, m in booked.occupants))


# (device, host, GiB held, shares held on that host, held whole): a hold, or a device's
# and host's sums of them.
Part = tuple[str, str | None, int | None, int | None, bool]


def _summed(parts: Iterable[Part], occupants: Iterable[tuple[str, float, float]]) -> HeldTotals:
    """The totals of `parts` and of the occupants' (host, cores, host memory GiB)."""
    whole: set[str] = set()
    gib: dict[str, int] = defaultdict(int)
    sliced: dict[str, set[str]] = defaultdict(set)
    shares: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for device, host, gib_held, share_held, held_whole in parts:
        if gib_held is not None:
            gib[device] += gib_held
            if host:
                sliced[host].add(device)
        if share_held is not None and host:
            shares[device][host] += share_held
        if held_whole:
            whole.add(device)
    cores: dict[str, int] = defaultdict(int)
    memory: dict[str, int] = defaultdict(int)
    for host, host_cores, host_memory in occupants:
        cores[host] += int(host_cores or 0)
        memory[host] += int(host_memory or 0)
    return HeldTotals(
        whole=frozenset(whole),
        gib=dict(gib),
        sliced={h: frozenset(d) for h, d in sliced.items()},
        shares={d: dict(per_host) for d, per_host in shares.items()},
        cores=dict(cores),
        host_memory_gib=dict(memory),
    )


def held_totals(windows: Sequence[Window]) -> HeldTotals:
    """What booked occurrences hold in any of `windows`, summed (as `HeldTotals.of` sums the
    holds `booked_between(..., windows=windows)` reads, without reading them one by one).
    A running occurrence's holds are not counted, as there: its composition holds them."""
    running = Occurrence.objects.filter(state=OccurrenceState.RUNNING).values("pk")
    holds = overlapping(
        BookingHold.objects.exclude(occurrence_id__in=running),
        BookingHold._meta.db_table,
        windows,
    )
    rows = (
        holds.order_by()
        .values("device_id", "host_id")
        .annotate(
            gib_held=Sum("gib"),
            share_held=Sum("share", filter=Q(gib__isnull=True, host__isnull=False)),
            whole_held=Count(
                "id", filter=Q(gib__isnull=True) & (Q(share__isnull=True) | Q(host__isnull=True))
            ),
        )
        .values_list("device_id", "host_id", "gib_held", "share_held", "whole_held")
    )
    occupants = (
        overlapping(
            Occurrence.objects.filter(state=OccurrenceState.BOOKED, host__isnull=False),
            Occurrence._meta.db_table,
            windows,
        )
        .order_by()
        .values("host_id")
        .annotate(
            # The two keys of the booking's spec, summed in the query.
            cores=Sum(Cast(KeyTextTransform("cores", "booking__spec"), FloatField())),
            memory=Sum(Cast(KeyTextTransform("host_memory_gib", "booking__spec"), FloatField())),
        )
        .values_list("host_id", "cores", "memory")
    )
    return _summed(
        (
            (
                f"device:{device}",
                f"host:{host}" if host else None,
                int(gib_held) if gib_held is not None else None,
                int(share_held) if share_held is not None else None,
                bool(whole_held),
            )
            for device, host, gib_held, share_held, whole_held in rows
        ),
        ((f"host:{host}", c, m) for host, c, m in occupants),
    )

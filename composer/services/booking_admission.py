"""Whether a booking fits: every occurrence placed by the engine on the inventory of its
window, within the tenant's quotas counted with its other booked windows; else the
occurrence that fails, why, and the nearest window that fits.

Reads only: `composer.services.bookings` writes what an admission returns. Occurrences are
placed on the snapshot of now (what compositions hold now is held in every future window
too: a composition has no end) less what other bookings hold.

A series is first placed once for all its occurrences, on the snapshot less everything any
of its windows holds, summed (`composer.selectors.booked_totals`): devices free in every
window, so each occurrence gets the same devices and host (its data staged there once) and
the decision costs one placement and two grouped queries whatever the number of windows.
Only when no such set exists is each window placed on its own, on the snapshot less what
that window holds (`composer.services.booking_holds.snapshot_less_booked`); occurrences
that overlap the same holds then share one snapshot and one decision.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.utils import timezone

from composer.errors import BookingRefused, QuotaExceeded
from composer.models import Quota, Tenant
from composer.placement.request import Placement, PlacementRequest, Rejection
from composer.placement.snapshot import Snapshot
from composer.recurrence import Window
from composer.selectors.booked_totals import held_totals
from composer.selectors.bookings import (
    Booked,
    HeldDevice,
    booked_between,
    booked_quota_added,
    running_as_holds,
)
from composer.services.booking_holds import snapshot_less_booked, snapshot_less_held
from composer.services.composition_checks import composition_check_quotas
from composer.services.composition_pins import Pin
from composer.services.composition_placement import place_on
from fabric.models import Host

__all__ = ["NEAREST_HORIZON_HOURS", "Admission", "admission_check"]

# The nearest window that fits is looked for by shifting the windows forward by whole
# hours, up to a week, and at most this many placements in all: bounded work.
NEAREST_HORIZON_HOURS = 7 * 24
NEAREST_BUDGET = 2000


@dataclass
class Admission:
    """One admission: the request, the snapshot of now, what other bookings hold, and the
    decisions already made (per set of holds), reused across occurrences and shifts."""

    tenant: Tenant
    spec: Mapping[str, Any]
    request: PlacementRequest
    host: Host | None
    pins: Sequence[Pin]
    base: Snapshot
    booked: Booked
    quotas: list[Quota]
    zone: ZoneInfo
    # The compositions of the tenant's running windows, as holds until their windows end:
    # quota usage counts them now, a window after their end must not.
    running: tuple[HeldDevice, ...] = ()
    decisions: dict[frozenset[int], Placement | Rejection] = field(default_factory=dict)
    quota_verdicts: dict[frozenset[int], QuotaExceeded | None] = field(default_factory=dict)
    placed: int = 0  # decisions made (placements and quota checks), for the budget

    def place(self, window: Window) -> Placement | Rejection:
        """The plan of one window (shared with every window overlapping the same holds)."""
        during = self.booked.during(window)
        key = during.key()
        if key not in self.decisions:
            self.placed += 1
            snapshot = snapshot_less_booked(self.base, during)
            self.decisions[key] = place_on(snapshot, self.request, self.host, self.pins)
        return self.decisions[key]

    def over_quota(self, window: Window) -> QuotaExceeded | None:
        """The quota a window would exceed, counting the tenant's other booked windows."""
        if not self.quotas:
            return None
        mine = tuple(h for h in self.booked.during(window).holds if h.tenant == self.tenant.pk)
        mine += tuple(
            h for h in self.running if h.starts_at < window.ends_at and h.ends_at > window.starts_at
        )
        key = frozenset(h.id for h in mine)
        if key not in self.quota_verdicts:
            self.placed += 1  # a check reads the database: counted in the same budget
            try:
                composition_check_quotas(
                    tenant=self.tenant,
                    spec=self.spec,
                    pins=self.pins,
                    booked=booked_quota_added(self.quotas, mine, self.running),
                    quotas=self.quotas,
                )
                self.quota_verdicts[key] = None
            except QuotaExceeded as exc:
                self.quota_verdicts[key] = exc
        return self.quota_verdicts[key]

    def over_quota_in(self, windows: Sequence[Window]) -> QuotaExceeded | None:
        """The first quota any of `windows` would exceed."""
        for window in windows:
            problem = self.over_quota(window)
            if problem is not None:
                return problem
        return None

    def first_failure(
        self, windows: Sequence[Window]
    ) -> tuple[Window, QuotaExceeded | Rejection] | None:
        """The first occurrence that does not fit and why; None when all do."""
        for window in windows:
            problem = self.over_quota(window)
            if problem is not None:
                return window, problem
            outcome = self.place(window)
            if isinstance(outcome, Rejection):
                return window, outcome
        return None

    def local(self, window: Window) -> str:
        """A window in the booking's wall-clock time: "Mon 2026-03-30 08:00-20:00 CEST"."""
        start, end = window.starts_at.astimezone(self.zone), window.ends_at.astimezone(self.zone)
        until = f"{end:%H:%M}" if end.date() == start.date() else f"{end:%a %Y-%m-%d %H:%M}"
        return f"{start:%a %Y-%m-%d %H:%M}-{until} {start:%Z}"


def admission_check(
    *,
    tenant: Tenant,
    spec: Mapping[str, Any],
    request: PlacementRequest,
    host: Host | None,
    pins: Sequence[Pin],
    base: Snapshot,
    windows: Sequence[Window],
    zone: ZoneInfo,
) -> list[Placement]:
    """The plan of each window, in order, or BookingRefused naming the first occurrence
    that fails (its local date and time), the engine's reason or the quota it would
    exceed, and the nearest window that fits. Call under the placement lock, so that what
    other bookings hold cannot change before the holds are written."""
    quotas = list(Quota.objects.filter(tenant=tenant))
    running = running_as_holds(since=timezone.now(), tenants=[tenant.pk]) if quotas else ()
    first, last = windows[0].starts_at, windows[-1].ends_at
    admission = Admission(
        tenant=tenant,
        spec=spec,
        request=request,
        host=host,
        pins=pins,
        base=base,
        # The tenant's own holds (what quotas count) until each window is placed alone.
        booked=booked_between(first, last, windows=windows, tenant=tenant.pk)
        if quotas
        else Booked((), ()),
        quotas=quotas,
        zone=zone,
        running=running,
    )
    together = place_on(snapshot_less_held(base, held_totals(windows)), request, host, pins)
    if isinstance(together, Placement) and admission.over_quota_in(windows) is None:
        return [together] * len(windows)
    # Each window on its own: what it overlaps only (the week after them is read when the
    # nearest window that fits is looked for, after a refusal).
    admission.booked = booked_between(first, last, windows=windows)
    failure = admission.first_failure(windows)
    if failure is None:
        return [admission.place(w) for w in windows]  # type: ignore[misc]  # all placed
    window, problem = failure
    which = "The booking" if len(windows) == 1 else f"The occurrence of {admission.local(window)}"
    if isinstance(problem, QuotaExceeded):
        reason, field_name = problem.message, problem.field or "starts_at"
    else:
        reason, field_name = problem.message, "starts_at" if len(windows) == 1 else "recurrence"
        # The engine's own nearest alternative (a rule relaxed), in the tenant's words.
        alternative = problem.nearest.tenant or problem.nearest.operator
        if alternative:
            reason += f" {alternative}"
    horizon = timedelta(hours=NEAREST_HORIZON_HOURS)
    # A superset of what was read: every decision made so far stays as it was.
    admission.booked = booked_between(first, last + horizon)
    nearest = _nearest(admission, windows)
    if nearest is None:
        suggestion = "No window within a week after it fits either."
        body = None
    else:
        suggestion = f"The nearest that fits starts {admission.local(nearest[0])}"
        suggestion += "." if len(windows) == 1 else " (every occurrence shifted alike)."
        body = {
            "starts_at": nearest[0].starts_at.isoformat(),
            "ends_at": nearest[0].ends_at.isoformat(),
        }
    raise BookingRefused(
        f"{which} does not fit: {reason} {suggestion}",
        field=field_name,
        nearest=body,
    )


def _nearest(admission: Admission, windows: Sequence[Window]) -> list[Window] | None:
    """The windows shifted forward by the fewest whole hours (up to a week) for which every
    occurrence fits, or None (also when the search would cost more than NEAREST_BUDGET
    decisions)."""
    for hours in range(1, NEAREST_HORIZON_HOURS + 1):
        shifted = [w.shifted(timedelta(hours=hours)) for w in windows]
        if admission.first_failure(shifted) is None:
            return shifted
        if admission.placed > NEAREST_BUDGET:
            return None
    return None

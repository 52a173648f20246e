"""seed_history: the demo's past lived through the product on a simulated clock.

On the real database with real commits (the jobs run when their transaction commits), and
inside a fixed present (Wednesday 2026-03-25 12:00 UTC), so that the past's shape is known:
two nights and one office day lived, Wednesday's training running now. One history, lived
once (half a minute), is checked from each side in turn.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.core.management import CommandError, call_command
from django.utils import timezone

from composer.choices import CompositionState, OccurrenceState
from composer.models import (
    Booking,
    Composition,
    Occurrence,
    PoolSample,
    Resolution,
    ServerShape,
    TenantSample,
)
from composer.selectors.counterfactual import counterfactual
from fabric.models import ChangeRecord, Pool
from fabric.simulator.console.history import demo_history

pytestmark = pytest.mark.django_db(transaction=True)

PRESENT = datetime(2026, 3, 25, 12, 0, tzinfo=UTC)  # a Wednesday
START = PRESENT - timedelta(days=2)


def test_two_days_lived_through_the_product(settings: Any) -> None:
    settings.COMPOSER_BOOKING_LEAD_S = 120
    settings.TIME_ZONE = "UTC"
    with time_machine.travel(PRESENT, tick=False):
        call_command("seed_demo", verbosity=0)
        # Every 10 minutes, then minute by minute through the last hour.
        lived = demo_history(days=2, step_minutes=10, minute_hours=1, seed=3)
        check_the_schedule_is_booked_from_the_templates_and_lived_by_the_clock(lived)
        check_the_tenants_compositions_come_and_go_within_the_period(lived)
        check_every_step_is_sampled_and_every_hour_and_day_rolled_up(lived)
        check_the_counterfactual_replays_the_period()
        check_a_second_run_does_nothing_and_the_clock_is_back()


def check_the_schedule_is_booked_from_the_templates_and_lived_by_the_clock(lived: Any) -> None:
    assert lived.bookings == ["day-training", "night-inference"]
    day, night = (Booking.objects.get(name=n) for n in ("day-training", "night-inference"))
    assert (day.recurrence, night.recurrence) == ("weekdays", "daily")
    assert day.template.slug == "training-8gpu"
    # Booked as alice when the simulated week began, and audited then.
    record = ChangeRecord.objects.filter(target_id=day.pk, message__startswith="Booked")
    assert record.get().at == START and record.get().actor.username == "alice"

    lived_through = Occurrence.objects.filter(ends_at__lte=PRESENT).order_by("starts_at")
    # Monday's and Tuesday's nights, Tuesday's office day.
    assert [(o.booking.name, o.starts_at) for o in lived_through] == [
        ("night-inference", datetime(2026, 3, 23, 20, tzinfo=UTC)),
        ("day-training", datetime(2026, 3, 24, 8, tzinfo=UTC)),
        ("night-inference", datetime(2026, 3, 24, 20, tzinfo=UTC)),
    ]
    for occurrence in lived_through:
        # Composed at its start, on time, and decomposed at its end by the clock.
        assert occurrence.state == OccurrenceState.DONE and occurrence.late_s == 0
        composition = occurrence.composition
        assert composition is not None and composition.state == CompositionState.RELEASED
        assert composition.ready_at == occurrence.starts_at
        assert composition.released_at == occurrence.ends_at
    (running,) = Occurrence.objects.filter(state=OccurrenceState.RUNNING)
    assert running.booking == day and running.starts_at == datetime(2026, 3, 25, 8, tzinfo=UTC)
    assert running.composition.state == CompositionState.READY
    assert running.composition.allocations.filter(device__kind="gpu").count() == 8
    # Nothing missed or failed; the rest of the four weeks ahead is still booked.
    ahead = Occurrence.objects.filter(starts_at__gt=PRESENT)
    assert set(ahead.values_list("state", flat=True)) == {OccurrenceState.BOOKED}
    assert ahead.filter(booking=night).count() >= 28
    assert lived.started == 4 and lived.ended == 3


def check_the_tenants_compositions_come_and_go_within_the_period(lived: Any) -> None:
    booked = Occurrence.objects.exclude(composition=None).values("composition_id")
    adhoc = Composition.objects.exclude(pk__in=booked)
    # Refused: over a quota (nothing written) or nothing fits (recorded as rejected).
    accepted = adhoc.exclude(state=CompositionState.REJECTED)
    assert accepted.count() == lived.requested - lived.refused > 20
    assert set(accepted.values_list("tenant__slug", flat=True)) == {"acme", "globex"}
    came_up = adhoc.exclude(ready_at=None)
    assert came_up.count() == accepted.count()
    for composition in came_up:
        assert START <= composition.ready_at <= PRESENT
        if composition.released_at is not None:
            assert composition.ready_at < composition.released_at <= PRESENT
    assert lived.released == came_up.filter(state=CompositionState.RELEASED).count() > 10


def check_every_step_is_sampled_and_every_hour_and_day_rolled_up(lived: Any) -> None:
    pools = Pool.objects.count()
    minutes = PoolSample.objects.filter(resolution=Resolution.MINUTE)
    assert lived.samples == lived.steps == 47 * 6 + 61
    last_hour = minutes.filter(bucket_start__gte=PRESENT - timedelta(hours=1))
    assert last_hour.values("bucket_start").distinct().count() == 61
    assert minutes.count() == pools * lived.steps
    assert minutes.filter(allocated__gt=0).exists()
    hours = PoolSample.objects.filter(resolution=Resolution.HOUR)
    assert hours.values("bucket_start").distinct().count() == 2 * 24 + 1
    days = PoolSample.objects.filter(resolution=Resolution.DAY)
    assert sorted({d.date() for d in days.values_list("bucket_start", flat=True)}) == [
        (START + timedelta(days=n)).date() for n in range(3)
    ]
    # An hour's rollup is the mean of its samples: six of them, ten minutes apart.
    hour = hours.filter(allocated__gt=0).order_by("bucket_start").first()
    assert hour is not None and hour.samples == 6
    inside = minutes.filter(
        pool=hour.pool,
        bucket_start__gte=hour.bucket_start,
        bucket_start__lt=hour.bucket_start + timedelta(hours=1),
    )
    assert hour.allocated == pytest.approx(sum(s.allocated for s in inside) / 6)
    assert TenantSample.objects.filter(resolution=Resolution.MINUTE, compositions__gt=0).exists()


def check_the_counterfactual_replays_the_period() -> None:
    shape = ServerShape.objects.create(name="8-gpu", gpus=8, cores=96, memory_gib=1024)
    answer = counterfactual(start=START, end=PRESENT, shapes=[shape], now=PRESENT).result
    # Every composition up before the present (one that came up at it ran for no time).
    assert answer.runs == Composition.objects.filter(ready_at__lt=PRESENT).count()
    assert answer.servers_at_peak >= 1 and answer.unplaced == ()


def check_a_second_run_does_nothing_and_the_clock_is_back() -> None:
    assert timezone.now() == PRESENT
    rows = (Composition.objects.count(), PoolSample.objects.count(), Occurrence.objects.count())
    with time_machine.travel(PRESENT + timedelta(hours=1), tick=False):
        again = demo_history(days=2)
    assert again.skipped and "already booked" in again.summary()
    assert rows == (
        Composition.objects.count(),
        PoolSample.objects.count(),
        Occurrence.objects.count(),
    )


@pytest.mark.django_db
def test_the_command_names_what_is_wrong() -> None:
    with pytest.raises(CommandError, match="run seed_demo first"):
        call_command("seed_history", verbosity=0)
    with pytest.raises(CommandError, match="step_minutes"):
        call_command("seed_history", "--step-minutes", "0", verbosity=0)
    with pytest.raises(CommandError, match="minute_hours"):
        call_command("seed_history", "--days", "1", "--minute-hours", "25", verbosity=0)

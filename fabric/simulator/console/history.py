"""The demo's past: a week of the data centre lived through the product on a simulated clock.

A console that opens on empty charts, an empty calendar and a counterfactual of nothing
shows none of what Composer is for. So `manage.py seed_history` (which `make run` calls
after `seed_demo`) moves the clock back a week and lets the demo data centre live it:

- Acme books its day/night schedule from the demo templates' default schedules: 8 H100s
  for training on weekdays 08:00-20:00 (`training-8gpu`) and 2 GPUs with 1 TiB of CXL
  memory for inference every night 20:00-08:00 (`inference-2gpu-bigmem`), both running
  four weeks past today;
- the tenants' people ask for compositions now and then (more in office hours, some
  nights), each released after a while; a request the quotas or the fabric refuse is
  refused, as it would be;
- at every step of the clock, the booking clock composes and decomposes the occurrences
  due (`bookings_tick`, beat's task) and the utilisation sampler records the minute
  (`utilisation_tick`, beat's task).

Every row is written by the product's own services (booking admission, composition
requests, the compose and decompose jobs run against the simulated fabric, the clock, the
sampler), never directly: only the clock is simulated (`time_machine`, which the process's
`datetime` and `time` follow), the fabric answers at once, and jobs run in this process
instead of a worker. The clock steps `step_minutes` at a time (10), then minute by minute
through the last `minute_hours` (24), which the day view reads minute by minute as it
reads the live samples (a missing minute there is drawn as a gap); the week, month and
year views read the hourly and daily rollups, each made as its hour or day ends. At the
end the clock is back at the present: what should be running is running, and beat takes
over.

Part of the simulator's console: it moves the clock and runs jobs in-process, which only a
demo may do. Idempotent: it does nothing once Acme's schedule is booked, which is its
first step; a run stopped half-way is not taken up again (the clock marks the windows it
did not reach missed): a fresh database lives it anew.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import time_machine
from django.contrib.auth import get_user_model
from django.test import override_settings
from django.utils import timezone

from composer.celery import app
from composer.choices import CompositionState
from composer.errors import ComposerError
from composer.models import Booking, Composition, Resolution, Template, Tenant
from composer.services.booking_clock import bookings_tick
from composer.services.bookings import booking_request
from composer.services.compositions import composition_decompose, composition_request
from composer.services.utilisation import utilisation_rollup, utilisation_sample

logger = logging.getLogger(__name__)

__all__ = ["SCHEDULE", "HistoryResult", "Visitor", "demo_history"]

# Acme's day/night schedule: (booking name, template). The times and recurrences are the
# templates' default schedules (fabric.simulator.console.demo).
SCHEDULE: tuple[tuple[str, str], ...] = (
    ("day-training", "training-8gpu"),
    ("night-inference", "inference-2gpu-bigmem"),
)
SCHEDULE_TENANT, SCHEDULE_USER = "acme", "alice"
SCHEDULE_WEEKS_AHEAD = 4


@dataclass(frozen=True)
class Visitor:
    """Someone who asks for compositions now and then: how often (per hour, in and out of
    office hours), which templates, and for how long (log-uniform between the bounds)."""

    tenant: str
    username: str
    templates: tuple[str, ...]
    office_per_hour: float
    night_per_hour: float
    shortest_min: int = 20
    longest_min: int = 10 * 60


VISITORS: tuple[Visitor, ...] = (
    Visitor(
        "acme",
        "alice",
        ("dev-1gpu", "notebook-gpu-share", "training-4gpu-spread", "dev-1gpu"),
        office_per_hour=2.0,
        night_per_hour=0.3,
    ),
    Visitor(
        "globex",
        "carol",
        ("dev-1gpu", "inference-2gpu-bigmem", "analytics-bigmem", "notebook-gpu-share"),
        office_per_hour=1.0,
        night_per_hour=0.25,
    ),
)
OFFICE_HOURS = range(8, 19)


@dataclass
class HistoryResult:
    """What the week held: steps of the clock, bookings made, occurrences started and
    ended, compositions asked for, refused and released, minutes sampled."""

    skipped: bool = False
    start: datetime | None = None
    end: datetime | None = None
    steps: int = 0
    bookings: list[str] = field(default_factory=list)
    started: int = 0
    ended: int = 0
    requested: int = 0
    refused: int = 0
    released: int = 0
    samples: int = 0

    def summary(self) -> str:
        if self.skipped:
            return "the demo's schedule is already booked; nothing to do"
        return (
            f"{self.start:%Y-%m-%d %H:%M} to {self.end:%Y-%m-%d %H:%M} UTC in {self.steps} "
            f"steps: booked {', '.join(self.bookings)}; {self.started} occurrences started, "
            f"{self.ended} ended; {self.requested} compositions asked for, {self.refused} "
            f"refused, {self.released} released; {self.samples} minutes sampled"
        )


def demo_history(
    *,
    days: int = 7,
    step_minutes: int = 10,
    minute_hours: int = 24,
    seed: int = 7,
    now: datetime | None = None,
    on_progress: Callable[[int, int, str], None] | None = None,
) -> HistoryResult:
    """Live the `days` before `now` (default: the present) as described above. Needs the
    demo's tenants, users and templates (`seed_demo`). ValueError names a bad argument."""
    if days < 1 or not 1 <= step_minutes <= 60 or not 0 <= minute_hours <= 24 * days:
        raise ValueError(
            "days must be at least 1, step_minutes between 1 and 60, and minute_hours "
            "between 0 and the hours of the days"
        )
    tenant = Tenant.objects.filter(slug=SCHEDULE_TENANT).first()
    if tenant is None:
        raise ValueError(f"no tenant {SCHEDULE_TENANT!r}: run seed_demo first")
    names = [name for name, _ in SCHEDULE]
    if Booking.objects.filter(tenant=tenant, name__in=names).exists():
        return HistoryResult(skipped=True)
    end = (now or timezone.now()).replace(second=0, microsecond=0)
    start = end - timedelta(days=days)
    result = HistoryResult(start=start, end=end)
    world = _World.load(seed)
    instants = _instants(start, end, timedelta(minutes=step_minutes), minute_hours)
    with _simulated(start) as travel:
        ahead = end + timedelta(weeks=SCHEDULE_WEEKS_AHEAD)
        _book_schedule(tenant, world, until=ahead, into=result)
        for index, at in enumerate(instants):
            travel.move_to(at)
            after = instants[index + 1] if index + 1 < len(instants) else at + timedelta(minutes=1)
            _step(world, at, step=after - at, into=result)
            if index and at.hour != instants[index - 1].hour:
                new_day = at.date() != instants[index - 1].date()
                _rollup(instants[index - 1], day=new_day)
                if new_day and on_progress is not None:
                    on_progress(index, len(instants), f"{at:%Y-%m-%d}")
        _rollup(end, day=True)
    result.steps = len(instants)
    logger.info("demo history: %s", result.summary())
    return result


def _instants(start: datetime, end: datetime, step: timedelta, minute_hours: int) -> list[datetime]:
    """Every `step` from `start`, then every minute of the last `minute_hours`, to `end`."""
    fine = end - timedelta(hours=minute_hours)
    coarse = [start + step * i for i in range(int((fine - start) / step) + 1)]
    coarse = [at for at in coarse if at < fine]
    minutes = int((end - fine) / timedelta(minutes=1))
    return coarse + [fine + timedelta(minutes=i) for i in range(minutes + 1)]


@contextmanager
def _simulated(start: datetime) -> Iterator[Any]:
    """The clock at `start` (moved by the caller), the fabric answering at once, and jobs
    run in this process as soon as their transaction commits."""
    eager, propagates = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, False
    try:
        with (
            override_settings(COMPOSER_SIMULATOR_LATENCY_SCALE=0.0),
            time_machine.travel(start, tick=False) as traveller,
        ):
            yield traveller
    finally:
        app.conf.task_always_eager, app.conf.task_eager_propagates = eager, propagates


@dataclass
class _World:
    """The demo's people and templates, the random source, and the compositions asked for
    with the time each is to be released."""

    users: dict[str, Any]
    tenants: dict[str, Tenant]
    templates: dict[str, Template]
    random: random.Random
    leaving: list[tuple[datetime, int]] = field(default_factory=list)
    counter: int = 0

    @classmethod
    def load(cls, seed: int) -> _World:
        usernames = {v.username for v in VISITORS} | {SCHEDULE_USER}
        users = {u.username: u for u in get_user_model().objects.filter(username__in=usernames)}
        slugs = {v.tenant for v in VISITORS} | {SCHEDULE_TENANT}
        tenants = {t.slug: t for t in Tenant.objects.filter(slug__in=slugs)}
        templates = {t.slug: t for t in Template.objects.filter(is_active=True)}
        return cls(users=users, tenants=tenants, templates=templates, random=random.Random(seed))


def _book_schedule(tenant: Tenant, world: _World, *, until: datetime, into: HistoryResult) -> None:
    """Acme's day/night bookings, each from its template's default schedule (first window
    from the simulated now), until `until`'s date."""
    user = world.users.get(SCHEDULE_USER)
    for name, slug in SCHEDULE:
        template = world.templates.get(slug)
        if template is None or not template.schedule:
            raise ValueError(f"the demo template {slug!r} with its schedule is missing")
        booking_request(
            tenant=tenant,
            requested_by=user,
            name=name,
            spec=None,
            template=template,
            until=until.date(),
        )
        into.bookings.append(name)


def _step(world: _World, at: datetime, *, step: timedelta, into: HistoryResult) -> None:
    """One step of the clock: releases due, new requests, the booking clock's tick and the
    utilisation sample (the rollups are made as each hour ends: `_rollup`)."""
    due = [pk for when, pk in world.leaving if when <= at]
    world.leaving = [(when, pk) for when, pk in world.leaving if when > at]
    for pk in due:
        _release(world, pk, at, into)
    for visitor in VISITORS:
        for _ in range(_arrivals(world.random, visitor, at, step)):
            _request(world, visitor, at, into)
    tick = bookings_tick(now=at)
    into.started += len(tick.started)
    into.ended += len(tick.ended)
    utilisation_sample(now=at)
    into.samples += 1


def _rollup(at: datetime, *, day: bool) -> None:
    """The hourly rollup of `at`'s hour, and its day's when `day`: beat's tick makes them
    every minute, which only costs here; made once each hour ends, they are the same."""
    utilisation_rollup(resolution=Resolution.HOUR, start=at)
    if day:
        utilisation_rollup(resolution=Resolution.DAY, start=at)


def _arrivals(rng: random.Random, visitor: Visitor, at: datetime, step: timedelta) -> int:
    """How many requests `visitor` makes in the step from `at` (a Poisson draw)."""
    office = at.weekday() < 5 and at.hour in OFFICE_HOURS
    rate = (visitor.office_per_hour if office else visitor.night_per_hour) * (
        step.total_seconds() / 3600
    )
    # Knuth's method: rates here are far below one per step.
    limit, count, product = math.exp(-rate), 0, rng.random()
    while product > limit:
        count += 1
        product *= rng.random()
    return count


def _request(world: _World, visitor: Visitor, at: datetime, into: HistoryResult) -> None:
    """One composition asked for from a template; released after a log-uniform while."""
    slug = world.random.choice(visitor.templates)
    lasts = math.exp(
        world.random.uniform(math.log(visitor.shortest_min), math.log(visitor.longest_min))
    )
    world.counter += 1
    template = world.templates.get(slug)
    user = world.users.get(visitor.username)
    tenant = world.tenants.get(visitor.tenant)
    if template is None or user is None or tenant is None:
        return
    into.requested += 1
    try:
        composition = composition_request(
            tenant=tenant,
            requested_by=user,
            spec=None,
            template=template,
            name=f"{slug}-{world.counter:04d}",
        )
    except ComposerError as exc:  # over a quota: nothing is written
        into.refused += 1
        logger.debug("demo history: %s refused at %s: %s", slug, at, exc)
        return
    if composition.state == CompositionState.REJECTED:  # nothing fits now: recorded as such
        into.refused += 1
        return
    world.leaving.append((at + timedelta(minutes=lasts), composition.pk))


def _release(world: _World, pk: int, at: datetime, into: HistoryResult) -> None:
    composition = Composition.objects.filter(pk=pk).first()
    if composition is None or composition.state not in (
        CompositionState.READY,
        CompositionState.DEGRADED,
    ):
        return
    user = world.users.get(composition.requested_by.username if composition.requested_by else "")
    try:
        composition_decompose(composition=composition, actor=user)
    except ComposerError as exc:
        logger.warning("demo history: could not release %s at %s: %s", composition.name, at, exc)
        return
    into.released += 1

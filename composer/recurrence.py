"""A booking's windows: a first window and a recurrence expanded to occurrences. Pure Python.

The rules are the iCalendar ones a calendar client writes (RFC 5545 RRULE):

| recurrence | RRULE |
|---|---|
| `none` | one window |
| `daily` | `FREQ=DAILY;UNTIL=...` |
| `weekdays` | `FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;UNTIL=...` |
| `weekly` | `FREQ=WEEKLY;UNTIL=...` (the first window's weekday) |

Times are wall-clock times in the booking's time zone (`zoneinfo`): a 08:00-20:00 weekday
booking in Europe/Berlin starts at 08:00 Berlin time on both sides of a DST change, so its
UTC start moves by an hour. A local time that does not exist that day (the hour skipped
in spring) is shifted forward by the gap, as RFC 5545 says; one that exists twice (the hour
repeated in autumn) is the first of the two. `until` is a local date, inclusive: the last
occurrence starts on it or before. A window that ends the next day (22:00-06:00) keeps
its end's local time and day offset. A weekday rule whose first window falls on a weekend
starts on the next weekday (the dates the rule generates, as dateutil's rrule does).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from composer.errors import SpecError

__all__ = [
    "MAX_OCCURRENCES",
    "RECURRENCES",
    "Window",
    "local_instant",
    "schedule_first_window",
    "schedule_normalise",
    "windows_expand",
    "zone_find",
]

# The most windows one booking holds: a daily booking for a year.
MAX_OCCURRENCES = 366

RECURRENCES = ("none", "daily", "weekdays", "weekly")


@dataclass(frozen=True, slots=True)
class Window:
    """One occurrence: `[starts_at, ends_at)` in UTC."""

    starts_at: datetime
    ends_at: datetime

    def overlaps(self, other: Window) -> bool:
        return self.starts_at < other.ends_at and other.starts_at < self.ends_at

    def shifted(self, delta: timedelta) -> Window:
        return Window(self.starts_at + delta, self.ends_at + delta)


@cache
def _zone_names() -> frozenset[str]:
    """The IANA names installed, read once per process: `available_timezones` walks the
    zone files (tens of milliseconds), and they change only with the system's tzdata."""
    return frozenset(available_timezones())


def zone_find(name: str | None) -> ZoneInfo:
    """The IANA time zone called `name` ("Europe/Berlin"); SpecError on `time_zone`."""
    name = (name or "").strip() or "UTC"
    if name not in _zone_names() and name != "UTC":
        raise SpecError(
            f"Unknown time zone {name!r}; give an IANA name such as Europe/Berlin.",
            field="time_zone",
            field_message="Unknown time zone; give an IANA name such as Europe/Berlin.",
        )
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:  # pragma: no cover - listed yet absent
        raise SpecError(f"Unknown time zone {name!r}.", field="time_zone") from exc


def local_instant(day: date, at: time, zone: ZoneInfo) -> datetime:
    """The UTC instant of wall-clock `at` on `day` in `zone`: a time the clocks skip is
    shifted forward by the gap, a time they repeat is the first one (fold 0)."""
    naive = datetime.combine(day, at.replace(tzinfo=None, fold=0))
    # fold=0 reads a skipped time with the offset before the change, which lands it after
    # the gap once normalised through UTC: 02:30 on a spring-forward night is 03:30.
    return naive.replace(tzinfo=zone).astimezone(UTC)


def _dates(first: date, recurrence: str, until: date) -> list[date]:
    """The local dates the rule generates from `first` to `until` inclusive, at most one
    more than `MAX_OCCURRENCES` (enough to say there are too many)."""
    step = 7 if recurrence == "weekly" else 1
    days: list[date] = []
    day = first
    while day <= until and len(days) <= MAX_OCCURRENCES:
        if recurrence != "weekdays" or day.weekday() < 5:
            days.append(day)
        day += timedelta(days=step)
    return days


def windows_expand(
    *,
    starts_at: datetime,
    ends_at: datetime,
    zone: ZoneInfo,
    recurrence: str = "none",
    until: date | None = None,
) -> list[Window]:
    """The occurrences of a booking whose first window is `[starts_at, ends_at)` (aware
    datetimes) repeated by `recurrence` until the local date `until`.

    Raises SpecError naming the field: `ends_at` for a window that does not end after it
    starts or is longer than the recurrence's period (occurrences of one booking never
    overlap), `recurrence` for an unknown rule, `until` when a recurrence has no end date,
    ends before it starts, or would make more than MAX_OCCURRENCES windows.
    """
    if starts_at.tzinfo is None or ends_at.tzinfo is None:
        raise SpecError("Give the window's times with their time zone.", field="starts_at")
    if ends_at <= starts_at:
        raise SpecError("The window must end after it starts.", field="ends_at")
    if recurrence not in RECURRENCES:
        raise SpecError(
            f"Unknown recurrence {recurrence!r}; choose one of {', '.join(RECURRENCES)}.",
            field="recurrence",
        )
    first = Window(starts_at.astimezone(UTC), ends_at.astimezone(UTC))
    if recurrence == "none":
        return [first]
    if until is None:
        raise SpecError("A recurring booking needs an end date.", field="until")
    start_local, end_local = starts_at.astimezone(zone), ends_at.astimezone(zone)
    if until < start_local.date():
        raise SpecError(
            f"The end date {until:%Y-%m-%d} is before the first window ({start_local:%Y-%m-%d}).",
            field="until",
        )
    period = timedelta(days=7 if recurrence == "weekly" else 1)
    if ends_at - starts_at > period:
        raise SpecError(
            f"A window of a {recurrence} booking is at most {period.days * 24} hours long, "
            "so that its occurrences do not overlap.",
            field="ends_at",
        )
    offset = end_local.date() - start_local.date()
    days = _dates(start_local.date(), recurrence, until)
    if len(days) > MAX_OCCURRENCES:
        raise SpecError(
            f"At most {MAX_OCCURRENCES} occurrences per booking; this one has more before "
            f"{until:%Y-%m-%d}. Choose an earlier end date.",
            field="until",
            field_message=f"At most {MAX_OCCURRENCES} occurrences; choose an earlier end date.",
        )
    windows: list[Window] = []
    for day in days:
        start = local_instant(day, start_local.time(), zone)
        end = local_instant(day + offset, end_local.time(), zone)
        if end <= start:  # a window inside a skipped hour: keep its length
            end = start + (ends_at - starts_at)
        window = Window(start, end)
        if windows and windows[-1].overlaps(window):  # a full-period window across DST
            raise SpecError(
                f"The occurrences of {windows[-1].starts_at:%Y-%m-%d} and {day:%Y-%m-%d} "
                "would overlap across the clock change; shorten the window.",
                field="ends_at",
            )
        windows.append(window)
    return windows


def schedule_normalise(raw: Any) -> dict[str, str]:
    """A template's default schedule, checked and stored normalised: `recurrence`,
    `starts` and `ends` (local "HH:MM"; an end at or before the start is the next day),
    `time_zone`. Empty: the template has none. SpecError naming `schedule.<key>`."""
    if raw in (None, "", {}):
        return {}
    if not isinstance(raw, dict):
        raise SpecError("The schedule must be an object.", field="schedule")
    unknown = sorted(set(raw) - {"recurrence", "starts", "ends", "time_zone"})
    if unknown:
        raise SpecError(
            f"Unknown schedule key {unknown[0]!r}; a schedule has recurrence, starts, ends "
            "and time_zone.",
            field=f"schedule.{unknown[0]}",
        )
    recurrence = str(raw.get("recurrence") or "none")
    if recurrence not in RECURRENCES:
        raise SpecError(
            f"Unknown recurrence {recurrence!r}; choose one of {', '.join(RECURRENCES)}.",
            field="schedule.recurrence",
        )
    clean = {"recurrence": recurrence}
    for key in ("starts", "ends"):
        value = raw.get(key)
        try:
            clean[key] = time.fromisoformat(str(value)).strftime("%H:%M")
        except ValueError as exc:
            raise SpecError(
                f"Give the schedule's {key} time as HH:MM.", field=f"schedule.{key}"
            ) from exc
    try:
        clean["time_zone"] = zone_find(raw.get("time_zone")).key
    except SpecError as exc:
        raise SpecError(exc.message, field="schedule.time_zone") from exc
    return clean


def schedule_first_window(
    schedule: dict[str, str], zone: ZoneInfo, now: datetime
) -> tuple[datetime, datetime]:
    """The first window of a template's schedule from `now`: today's, in `zone`, when its
    start is still ahead, else tomorrow's (the next weekday for a weekday schedule)."""
    starts, ends = time.fromisoformat(schedule["starts"]), time.fromisoformat(schedule["ends"])
    day = now.astimezone(zone).date()
    while True:
        start = local_instant(day, starts, zone)
        weekday_ok = schedule["recurrence"] != "weekdays" or day.weekday() < 5
        if start > now and weekday_ok:
            end_day = day if ends > starts else day + timedelta(days=1)
            return start, local_instant(end_day, ends, zone)
        day += timedelta(days=1)

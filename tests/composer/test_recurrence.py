"""Recurrence expansion, table-tested: wall-clock times across DST changes, month and year
ends, time zones on both hemispheres, and the errors that name their field. No database."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from dateutil.rrule import DAILY, FR, MO, TH, TU, WE, WEEKLY, rrule  # type: ignore[import-untyped]

from composer.errors import SpecError
from composer.recurrence import (
    MAX_OCCURRENCES,
    local_instant,
    schedule_first_window,
    schedule_normalise,
    windows_expand,
    zone_find,
)


def local(zone: str, y: int, mo: int, d: int, h: int = 0, mi: int = 0) -> datetime:
    return datetime(y, mo, d, h, mi, tzinfo=ZoneInfo(zone))


def utc(y: int, mo: int, d: int, h: int = 0, mi: int = 0) -> datetime:
    return datetime(y, mo, d, h, mi, tzinfo=UTC)


def spans(zone: str, start: datetime, end: datetime, rule: str, until: date | None) -> list:
    windows = windows_expand(
        starts_at=start, ends_at=end, zone=ZoneInfo(zone), recurrence=rule, until=until
    )
    return [(w.starts_at, w.ends_at) for w in windows]


# (case, zone, first window (local), recurrence, until, expected [(start, end)] in UTC)
CASES = [
    (
        "one window",
        "UTC",
        ((2026, 5, 4, 9), (2026, 5, 4, 17)),
        "none",
        None,
        [(utc(2026, 5, 4, 9), utc(2026, 5, 4, 17))],
    ),
    (
        "weekdays across spring DST in Berlin stay 08:00-20:00 local",
        "Europe/Berlin",
        ((2026, 3, 26, 8), (2026, 3, 26, 20)),
        "weekdays",
        date(2026, 3, 31),
        [
            (utc(2026, 3, 26, 7), utc(2026, 3, 26, 19)),  # Thu, CET
            (utc(2026, 3, 27, 7), utc(2026, 3, 27, 19)),  # Fri, CET
            (utc(2026, 3, 30, 6), utc(2026, 3, 30, 18)),  # Mon, CEST (changed on Sunday 29)
            (utc(2026, 3, 31, 6), utc(2026, 3, 31, 18)),
        ],
    ),
    (
        "nightly across autumn DST in London keeps 22:00-06:00 local (a 9-hour night)",
        "Europe/London",
        ((2026, 10, 24, 22), (2026, 10, 25, 6)),
        "daily",
        date(2026, 10, 25),
        [
            (utc(2026, 10, 24, 21), utc(2026, 10, 25, 6)),  # BST -> GMT inside the window
            (utc(2026, 10, 25, 22), utc(2026, 10, 26, 6)),
        ],
    ),
    (
        "a time the clocks skip is shifted forward by the gap",
        "America/New_York",
        ((2026, 3, 7, 2, 30), (2026, 3, 7, 4)),
        "daily",
        date(2026, 3, 9),
        [
            (utc(2026, 3, 7, 7, 30), utc(2026, 3, 7, 9)),  # EST
            (utc(2026, 3, 8, 7, 30), utc(2026, 3, 8, 8)),  # 02:30 does not exist: 03:30 EDT
            (utc(2026, 3, 9, 6, 30), utc(2026, 3, 9, 8)),  # EDT
        ],
    ),
    (
        "a time the clocks repeat is the first of the two",
        "America/New_York",
        ((2026, 10, 31, 1, 30), (2026, 10, 31, 3)),
        "daily",
        date(2026, 11, 1),
        [
            (utc(2026, 10, 31, 5, 30), utc(2026, 10, 31, 7)),
            (utc(2026, 11, 1, 5, 30), utc(2026, 11, 1, 8)),  # 01:30 EDT, 03:00 EST
        ],
    ),
    (
        "southern hemisphere: Sydney leaves DST in April",
        "Australia/Sydney",
        ((2026, 4, 3, 9), (2026, 4, 3, 17)),
        "weekly",
        date(2026, 4, 10),
        [
            (utc(2026, 4, 2, 22), utc(2026, 4, 3, 6)),  # AEDT +11
            (utc(2026, 4, 9, 23), utc(2026, 4, 10, 7)),  # AEST +10
        ],
    ),
    (
        "a half-hour zone without DST",
        "Asia/Kolkata",
        ((2026, 1, 1, 9), (2026, 1, 1, 10)),
        "daily",
        date(2026, 1, 2),
        [
            (utc(2026, 1, 1, 3, 30), utc(2026, 1, 1, 4, 30)),
            (utc(2026, 1, 2, 3, 30), utc(2026, 1, 2, 4, 30)),
        ],
    ),
    (
        "daily over a leap-year February end",
        "UTC",
        ((2028, 2, 28, 0), (2028, 2, 28, 6)),
        "daily",
        date(2028, 3, 1),
        [
            (utc(2028, 2, 28, 0), utc(2028, 2, 28, 6)),
            (utc(2028, 2, 29, 0), utc(2028, 2, 29, 6)),
            (utc(2028, 3, 1, 0), utc(2028, 3, 1, 6)),
        ],
    ),
    (
        "weekly from a 31st over month and year ends",
        "UTC",
        ((2026, 12, 31, 12), (2026, 12, 31, 13)),
        "weekly",
        date(2027, 1, 21),
        [
            (utc(2026, 12, 31, 12), utc(2026, 12, 31, 13)),
            (utc(2027, 1, 7, 12), utc(2027, 1, 7, 13)),
            (utc(2027, 1, 14, 12), utc(2027, 1, 14, 13)),
            (utc(2027, 1, 21, 12), utc(2027, 1, 21, 13)),  # until is inclusive
        ],
    ),
    (
        "weekdays starting on a Saturday begin on Monday",
        "UTC",
        ((2026, 5, 2, 8), (2026, 5, 2, 9)),
        "weekdays",
        date(2026, 5, 5),
        [
            (utc(2026, 5, 4, 8), utc(2026, 5, 4, 9)),
            (utc(2026, 5, 5, 8), utc(2026, 5, 5, 9)),
        ],
    ),
]


@pytest.mark.parametrize(
    ("case", "zone", "first", "rule", "until", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_expansion(
    case: str, zone: str, first: tuple, rule: str, until: date | None, expected: list
) -> None:
    start, end = (local(zone, *parts) for parts in first)
    assert spans(zone, start, end, rule, until) == expected


@pytest.mark.parametrize(
    ("rule", "byweekday"),
    [("daily", None), ("weekdays", (MO, TU, WE, TH, FR)), ("weekly", None)],
)
@pytest.mark.parametrize("zone", ["Europe/Berlin", "America/Los_Angeles", "Pacific/Auckland"])
def test_local_start_times_are_those_of_dateutils_rrule(
    rule: str, byweekday: tuple | None, zone: str
) -> None:
    """The iCalendar semantics, checked against dateutil's rrule over a year of DST changes:
    the same local start dates and times, every one."""
    tz = ZoneInfo(zone)
    first = datetime(2026, 1, 3, 8, 0)  # a Saturday
    until = date(2026, 12, 20)
    freq = DAILY if rule == "daily" else WEEKLY
    kwargs = {"byweekday": byweekday} if byweekday else {}
    expected = [d for d in rrule(freq, dtstart=first, until=datetime(2026, 12, 20, 23), **kwargs)]
    got = windows_expand(
        starts_at=first.replace(tzinfo=tz),
        ends_at=first.replace(tzinfo=tz) + timedelta(hours=4),
        zone=tz,
        recurrence=rule,
        until=until,
    )
    assert [w.starts_at.astimezone(tz).replace(tzinfo=None) for w in got] == expected
    assert {w.ends_at - w.starts_at for w in got} == {timedelta(hours=4)}


def test_local_instant_of_a_skipped_and_a_repeated_time() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    skipped = local_instant(date(2026, 3, 29), datetime(1, 1, 1, 2, 30).time(), berlin)
    assert skipped == utc(2026, 3, 29, 1, 30)  # 03:30 CEST
    repeated = local_instant(date(2026, 10, 25), datetime(1, 1, 1, 2, 30).time(), berlin)
    assert repeated == utc(2026, 10, 25, 0, 30)  # the first 02:30, CEST


ERRORS = [
    ("no end date", "daily", None, 1, "until"),
    ("end date before the start", "daily", date(2026, 4, 30), 1, "until"),
    ("unknown rule", "monthly", date(2026, 6, 1), 1, "recurrence"),
    ("a daily window longer than a day", "daily", date(2026, 6, 1), 25, "ends_at"),
    ("a weekly window longer than a week", "weekly", date(2026, 6, 1), 7 * 24 + 1, "ends_at"),
    ("an empty window", "none", None, 0, "ends_at"),
    ("over the bound", "daily", date(2026, 5, 1) + timedelta(days=MAX_OCCURRENCES), 1, "until"),
]


@pytest.mark.parametrize(
    ("case", "rule", "until", "hours", "field"), ERRORS, ids=[e[0] for e in ERRORS]
)
def test_errors_name_their_field(
    case: str, rule: str, until: date | None, hours: int, field: str
) -> None:
    start = utc(2026, 5, 1, 8)
    with pytest.raises(SpecError) as error:
        windows_expand(
            starts_at=start,
            ends_at=start + timedelta(hours=hours),
            zone=ZoneInfo("UTC"),
            recurrence=rule,
            until=until,
        )
    assert error.value.field == field


def test_the_bound_itself_is_allowed() -> None:
    start = utc(2026, 5, 1, 8)
    until = date(2026, 5, 1) + timedelta(days=MAX_OCCURRENCES - 1)
    windows = windows_expand(
        starts_at=start,
        ends_at=start + timedelta(hours=1),
        zone=ZoneInfo("UTC"),
        recurrence="daily",
        until=until,
    )
    assert len(windows) == MAX_OCCURRENCES


def test_a_full_day_window_overlapping_across_spring_dst_is_refused() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    """08:00 to 08:30 the next day is 23.5 hours over the night the clocks go forward, yet
    each window runs into the next day's 08:00."""
    start = datetime(2026, 3, 28, 8, tzinfo=berlin)
    with pytest.raises(SpecError) as error:
        windows_expand(
            starts_at=start,
            ends_at=datetime(2026, 3, 29, 8, 30, tzinfo=berlin),
            zone=berlin,
            recurrence="daily",
            until=date(2026, 3, 30),
        )
    assert error.value.field == "ends_at"


def test_unknown_time_zone_names_its_field() -> None:
    with pytest.raises(SpecError) as error:
        zone_find("Mars/Olympus")
    assert error.value.field == "time_zone"
    assert zone_find("") == ZoneInfo("UTC")


SCHEDULE_ERRORS = [
    ({"recurrence": "hourly", "starts": "08:00", "ends": "20:00"}, "schedule.recurrence"),
    ({"recurrence": "daily", "starts": "8 am", "ends": "20:00"}, "schedule.starts"),
    ({"recurrence": "daily", "starts": "08:00"}, "schedule.ends"),
    ({"starts": "08:00", "ends": "20:00", "time_zone": "Mars/Base"}, "schedule.time_zone"),
    ({"starts": "08:00", "ends": "20:00", "every": "day"}, "schedule.every"),
    ("weekdays", "schedule"),
]


@pytest.mark.parametrize(("raw", "field"), SCHEDULE_ERRORS)
def test_a_bad_template_schedule_names_its_key(raw: object, field: str) -> None:
    with pytest.raises(SpecError) as error:
        schedule_normalise(raw)
    assert error.value.field == field


def test_a_template_schedule_is_stored_normalised() -> None:
    raw = {"recurrence": "weekdays", "starts": "08:00", "ends": "20:00:00"}
    assert schedule_normalise(raw) == {
        "recurrence": "weekdays",
        "starts": "08:00",
        "ends": "20:00",
        "time_zone": "UTC",
    }
    assert schedule_normalise({}) == {}


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        # Friday 10:00 Berlin: today's 08:00 is past, Saturday and Sunday are skipped.
        (utc(2026, 3, 27, 9), (utc(2026, 3, 30, 6), utc(2026, 3, 30, 18))),
        # Monday 06:00 Berlin: today's window is still ahead.
        (utc(2026, 3, 30, 4), (utc(2026, 3, 30, 6), utc(2026, 3, 30, 18))),
    ],
)
def test_a_template_schedule_s_next_window(now: datetime, expected: tuple) -> None:
    schedule = schedule_normalise(
        {"recurrence": "weekdays", "starts": "08:00", "ends": "20:00", "time_zone": "Europe/Berlin"}
    )
    assert schedule_first_window(schedule, ZoneInfo("Europe/Berlin"), now) == expected


def test_a_night_schedule_ends_the_next_morning() -> None:
    schedule = schedule_normalise({"recurrence": "daily", "starts": "22:00", "ends": "06:00"})
    start, end = schedule_first_window(schedule, ZoneInfo("UTC"), utc(2026, 5, 1, 12))
    assert (start, end) == (utc(2026, 5, 1, 22), utc(2026, 5, 2, 6))

"""The calendar's parameters, read by the calendar page and GET /api/v1/calendar/ alike, so a
bad value is the same error naming its field in both.

A period is `[start, end)` in UTC, whole hours; by default today (from midnight UTC) and the
next two weeks, at most eight weeks so that every read stays bounded.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any

from django import forms
from django.utils import timezone

from fabric.models import Pool

DEFAULT_DAYS = 15  # today and the next two weeks
MAX_DAYS = 56  # eight weeks
MAX_MIN_FREE = 10_000


def default_start(now: datetime | None = None) -> datetime:
    """Midnight UTC of today."""
    today = (now or timezone.now()).astimezone(UTC).date()
    return datetime.combine(today, time(0), tzinfo=UTC)


def _hour(value: datetime) -> datetime:
    """`value` in UTC, down to its hour (the calendar counts whole hours)."""
    if timezone.is_naive(value):
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


# The farthest from today a calendar may look, either way.
FARTHEST = timedelta(days=3653)


class CalendarForm(forms.Form):
    """start, end (a date or a date and time; UTC unless an offset is given), pool (a slug),
    tenant (a slug: the view checks it is one the caller may see), min_free (how many
    devices, or GiB in a memory pool, a free window must leave)."""

    start = forms.DateTimeField(required=False, label="From")
    end = forms.DateTimeField(required=False, label="To")
    pool = forms.SlugField(required=False, label="Pool")
    tenant = forms.SlugField(required=False, label="Tenant")
    min_free = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_MIN_FREE, label="At least free"
    )

    def __init__(self, *args: Any, now: datetime | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.now = now or timezone.now()
        for name, field in self.fields.items():
            field.widget.attrs["class"] = "form-control form-control-sm"
            if name in {"start", "end"}:
                field.widget.attrs["placeholder"] = "YYYY-MM-DD"

    def clean_pool(self) -> Pool | None:
        slug = self.cleaned_data.get("pool")
        if not slug:
            return None
        pool = Pool.objects.filter(slug=slug).first()
        if pool is None:
            raise forms.ValidationError(f"There is no pool {slug!r}.")
        return pool

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        start = _hour(data["start"]) if data.get("start") else default_start(self.now)
        if abs(start - self.now) > FARTHEST:  # past it, a date near the calendar's ends overflows
            self.add_error("start", "Pick a start within ten years of today.")
            return data
        if data.get("end") and abs(data["end"] - self.now) > FARTHEST:
            self.add_error("end", "Pick an end within ten years of today.")
            return data
        if data.get("end"):
            end = _hour(data["end"])
            if end < data["end"].astimezone(UTC):
                end += timedelta(hours=1)  # a partial hour counts whole
        else:
            end = start + timedelta(days=DEFAULT_DAYS)
        if end <= start:
            self.add_error("end", "The end must be after the start.")
        elif end - start > timedelta(days=MAX_DAYS):
            self.add_error("end", f"A calendar spans at most {MAX_DAYS} days (eight weeks).")
        data["start"], data["end"] = start, end
        data["min_free"] = data.get("min_free") or 1
        return data


GROUPINGS = [("pool", "Pool"), ("tenant", "Tenant"), ("booking", "Booking")]


class CalendarPageForm(CalendarForm):
    """The page's parameters: also how the timeline's rows are made (`group`): a row per
    pool, per tenant or per booking; blank for the viewer's default (operators: pool,
    members: booking)."""

    group = forms.ChoiceField(choices=[("", "Default"), *GROUPINGS], required=False, label="Rows")

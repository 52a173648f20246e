"""GET /api/v1/calendar/: the calendar page's data (booked windows, each pool's hourly load
and free windows, conflicts) with the same parameters and scoping.

The parameters are `composer.forms.calendar.CalendarForm`, so a bad one is a 400 naming it;
a `tenant` the caller may not see is a 404. The data come from
`composer.selectors.calendar.calendar`: members get their tenants' windows and every pool's
aggregate load, never another tenant's windows nor device names.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from composer.api.errors import ErrorSerializer
from composer.forms.calendar import DEFAULT_DAYS, MAX_DAYS, MAX_MIN_FREE, CalendarForm
from composer.selectors.calendar import Calendar, calendar, calendar_tenants


class CalendarConflictSerializer(serializers.Serializer):
    """A booked window that may not be served as booked."""

    occurrence = serializers.IntegerField()
    booking = serializers.IntegerField()
    reason = serializers.CharField(
        help_text="`device_unavailable` (a held device is failed, in maintenance or critical "
        "now), `device_taken` (a held whole device is allocated to another composition that "
        "will still hold it when the window starts), or "
        "the window's own state (`failed`, `missed`)."
    )
    count = serializers.IntegerField(help_text="How many held devices it concerns.")
    devices = serializers.ListField(
        child=serializers.CharField(), help_text="Their names: operators only, else empty."
    )


class CalendarOccurrenceSerializer(serializers.Serializer):
    """One booked window of a booking the caller may see."""

    id = serializers.IntegerField()
    booking = serializers.IntegerField()
    booking_name = serializers.CharField()
    tenant = serializers.CharField(source="tenant_slug", help_text="The tenant's slug.")
    starts_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField()
    state = serializers.CharField()
    composition = serializers.IntegerField(
        allow_null=True, help_text="The composition serving it, once composed."
    )
    pools = serializers.DictField(
        child=serializers.FloatField(),
        help_text="{pool slug: what it holds there, in the pool's unit}.",
    )
    conflicts = CalendarConflictSerializer(many=True)


class CalendarDaySerializer(serializers.Serializer):
    day = serializers.DateField()
    peak_booked = serializers.FloatField(help_text="The most booked at any hour of the day.")
    least_free = serializers.FloatField(help_text="The least free at any hour of the day.")


class CalendarFreeWindowSerializer(serializers.Serializer):
    starts_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField()
    free = serializers.FloatField(help_text="The least free during the window.")


class CalendarPoolSerializer(serializers.Serializer):
    """One pool's load over the period, every tenant's bookings together."""

    slug = serializers.CharField(source="pool.slug")
    name = serializers.CharField(source="pool.name")
    kind = serializers.CharField(source="pool.kind")
    unit = serializers.CharField(help_text="`GiB` for memory pools, else `devices`.")
    capacity = serializers.FloatField()
    unavailable = serializers.FloatField(help_text="Out of service now.")
    standing = serializers.FloatField(
        help_text="Held now by compositions that serve no booked window (counted as staying)."
    )
    booked = serializers.ListField(
        child=serializers.FloatField(), help_text="Booked at each hour from `start`."
    )
    free = serializers.ListField(
        child=serializers.FloatField(), help_text="Free at each hour from `start`."
    )
    days = CalendarDaySerializer(many=True)
    free_windows = CalendarFreeWindowSerializer(
        many=True, help_text="The longest runs with at least `min_free` free, by start."
    )


class CalendarSerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    min_free = serializers.IntegerField()
    truncated = serializers.BooleanField(help_text="More windows than the answer holds.")
    occurrences = CalendarOccurrenceSerializer(many=True)
    pools = CalendarPoolSerializer(many=True)
    conflicts = CalendarConflictSerializer(many=True)


@extend_schema(
    summary="The bookings calendar",
    description=(
        "Booked windows overlapping `[start, end)` (whole hours, UTC; default today from "
        f"midnight UTC and {DEFAULT_DAYS} days, at most {MAX_DAYS}), each pool's booked "
        "and free capacity hour by hour, its longest free windows, and windows in conflict. "
        "Operators see every tenant's windows; members their tenants'. Every caller sees each "
        "pool's aggregate load (all tenants' bookings together), as a pool's allocated figure."
    ),
    parameters=[
        OpenApiParameter("start", str, description="A date or date-time (UTC unless offset)."),
        OpenApiParameter("end", str, description="A date or date-time, after `start`."),
        OpenApiParameter("pool", str, description="Only this pool (its slug)."),
        OpenApiParameter(
            "tenant",
            str,
            description="Only this tenant's windows (its slug); one the caller may not see "
            "answers 404.",
        ),
        OpenApiParameter(
            "min_free",
            {"type": "integer", "minimum": 1, "maximum": MAX_MIN_FREE},
            description="How much a free window leaves free (default 1).",
        ),
    ],
    responses={200: CalendarSerializer, 404: ErrorSerializer},
)
class CalendarView(APIView):
    """GET /api/v1/calendar/."""

    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        form = CalendarForm(request.query_params)
        if not form.is_valid():
            raise ValidationError(
                {name: [str(m) for m in msgs] for name, msgs in form.errors.items()}
            )
        data = form.cleaned_data
        tenant = None
        if data["tenant"]:
            tenants = calendar_tenants(request.user)
            tenant = next((t for t in tenants if t.slug == data["tenant"]), None)
            if tenant is None:
                raise NotFound("No such tenant.")
        cal: Calendar = calendar(
            user=request.user,
            start=data["start"],
            end=data["end"],
            pool=data["pool"],
            tenant=tenant,
            min_free=data["min_free"],
            now=timezone.now(),
        )
        return Response(CalendarSerializer(cal).data)

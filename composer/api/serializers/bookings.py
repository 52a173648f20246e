"""Bookings in the API: the request body, the booking as listed and in full, its
occurrences (the plan of each without fabric internals, as a composition's)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from rest_framework import serializers

from composer.api.serializers.compositions import HostRefSerializer, plan_public
from composer.api.serializers.jobs import TenantRefSerializer
from composer.api.serializers.spec import SpecField
from composer.choices import Recurrence
from composer.models import Booking, Occurrence, Template
from fabric.permissions import is_operator

__all__ = [
    "BookingDetailSerializer",
    "BookingRefusedSerializer",
    "BookingRequestSerializer",
    "BookingSerializer",
    "OccurrenceSerializer",
]


class WallClockDateTimeField(serializers.DateTimeField):
    """A date and time as given: with an offset it is that instant; without one it stays
    naive, for the booking service to read in the booking's `time_zone` (DRF would read it
    in the server's zone, an hour or more off for most of the world)."""

    def enforce_timezone(self, value: Any) -> Any:
        return value


class BookingRequestSerializer(serializers.Serializer):
    """Body of POST /bookings/: what to book (a template, a spec, or both, as a composition
    request), the first window and its recurrence."""

    name = serializers.CharField(max_length=100)
    tenant = serializers.SlugField(
        required=False, help_text="Slug of one of your tenants (operators: any tenant)."
    )
    template = serializers.SlugField(required=False, help_text="Slug of an active template.")
    spec = SpecField(
        required=False, spec_errors=True, help_text="A custom request; overrides the template's."
    )
    starts_at = WallClockDateTimeField(
        required=False,
        help_text="Start of the (first) window, ISO 8601; without an offset it is read in "
        "`time_zone`. Left out (with `ends_at`), the template's default schedule gives the "
        "next window.",
    )
    ends_at = WallClockDateTimeField(
        required=False,
        help_text="End of the (first) window (exclusive); without an offset it is read in "
        "`time_zone`.",
    )
    time_zone = serializers.CharField(
        required=False,
        max_length=64,
        help_text="IANA time zone whose wall-clock times the windows keep across DST changes "
        "(default: the template's schedule's, else UTC).",
    )
    recurrence = serializers.ChoiceField(
        choices=Recurrence.choices,
        required=False,
        help_text="none, daily, weekdays (Monday to Friday) or weekly (the first window's "
        "weekday): iCalendar RRULE FREQ=DAILY / FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR / "
        "FREQ=WEEKLY. Default: the template's schedule's, else none.",
    )
    until = serializers.DateField(
        required=False,
        allow_null=True,
        help_text="Last date (local, inclusive) an occurrence may start; needed with a "
        "recurrence; at most 366 occurrences.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs.get("template") and attrs.get("spec") in (None, {}):
            raise serializers.ValidationError(
                {"template": ["Pick a template or give a custom spec."]}
            )
        spec = attrs.get("spec")
        if spec is not None and not isinstance(spec, dict):
            raise serializers.ValidationError({"spec": ["The spec must be an object."]})
        return attrs


class OccurrenceSerializer(serializers.ModelSerializer):
    """One window of a booking, with the host and devices held for it."""

    host = HostRefSerializer(read_only=True, allow_null=True)
    plan = serializers.SerializerMethodField(
        help_text="The devices (and memory slices) held for the window, without fabric internals."
    )

    class Meta:
        model = Occurrence
        fields = [
            "id",
            "starts_at",
            "ends_at",
            "state",
            "host",
            "plan",
            "cancelled_at",
            "composition",
            "started_at",
            "late_s",
            "warned_at",
            "finished_at",
            "reason",
        ]
        read_only_fields = fields

    def get_plan(self, occurrence: Occurrence) -> dict[str, Any] | None:
        request = self.context.get("request")
        operator = bool(request and is_operator(request.user))
        return plan_public(occurrence.placement, operator=operator)


class OccurrenceEndSerializer(serializers.Serializer):
    """The new end of one occurrence (extend or shorten)."""

    ends_at = serializers.DateTimeField(
        help_text="ISO 8601 with its offset; later than the present end to extend, earlier "
        "to shorten (and in the future)."
    )


class BookingSerializer(serializers.HyperlinkedModelSerializer):
    """A booking as listed."""

    id = serializers.IntegerField(read_only=True)
    url = serializers.HyperlinkedIdentityField(view_name="api:booking_detail")
    tenant = TenantRefSerializer(read_only=True)
    template: serializers.SlugRelatedField[Template] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True, allow_null=True
    )
    requested_by: serializers.SlugRelatedField[User] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )

    class Meta:
        model = Booking
        fields = [
            "id",
            "url",
            "name",
            "state",
            "tenant",
            "template",
            "requested_by",
            "time_zone",
            "starts_at",
            "ends_at",
            "recurrence",
            "until",
            "created_at",
            "cancelled_at",
        ]
        read_only_fields = fields


class BookingDetailSerializer(BookingSerializer):
    """A booking with its request and every occurrence."""

    occurrences = OccurrenceSerializer(many=True, read_only=True)

    class Meta(BookingSerializer.Meta):
        fields = [*BookingSerializer.Meta.fields, "spec", "occurrences"]
        read_only_fields = fields


class WindowSerializer(serializers.Serializer):
    starts_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField()


class BookingRefusedSerializer(serializers.Serializer):
    """409 body of a refused booking: the error shape plus the nearest window that fits."""

    code = serializers.CharField(help_text="`booking_refused` (or `claim_conflict`).")
    detail = serializers.CharField(
        help_text="Which occurrence does not fit (local date and time), why, and the nearest "
        "window that does."
    )
    field = serializers.CharField(allow_null=True)
    # The stubs see Serializer.errors overridden; DRF's metaclass takes declared fields off the
    # class, so the property stays.
    errors = serializers.DictField(  # type: ignore[assignment]
        child=serializers.ListField(child=serializers.CharField())
    )
    nearest = WindowSerializer(
        required=False,
        allow_null=True,
        help_text="The first window shifted by the fewest whole hours (up to a week) for which "
        "every occurrence fits; null when none does.",
    )

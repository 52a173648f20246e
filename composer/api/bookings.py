"""Bookings: capacity reserved for a window, once or on a recurrence, through the API.

Every queryset starts from the caller's own bookings (`Booking.objects.for_user`):
outsiders get 404, read-only members 403 on writes. A booking that does not fit answers
**409** `booking_refused`: `detail` names the occurrence that fails (its local date and
time) and why, `field` the part of the request at fault, and `nearest` the nearest window
that fits (`starts_at`, `ends_at` of the first window, every occurrence shifted alike), or
null when none within a week does. Nothing is written then.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db.models import Prefetch, QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.serializers import BaseSerializer

from composer.api.errors import ErrorSerializer
from composer.api.serializers.bookings import (
    BookingDetailSerializer,
    BookingRefusedSerializer,
    BookingRequestSerializer,
    BookingSerializer,
    OccurrenceEndSerializer,
)
from composer.api.tenant_requests import TenantRequests
from composer.errors import ComposerError
from composer.models import Booking, Occurrence
from composer.services.booking_changes import occurrence_reschedule
from composer.services.bookings import booking_cancel, booking_request, occurrence_cancel
from fabric.api.views import ReadOnlyViewSet

logger = logging.getLogger(__name__)

__all__ = ["BookingViewSet"]

REFUSED = OpenApiResponse(
    BookingRefusedSerializer,
    description="`booking_refused`: an occurrence does not fit, or would take the tenant "
    "over a quota (which, why, and `nearest`: the nearest window that fits, or null).",
)
NOT_BOOKED = OpenApiResponse(ErrorSerializer, description="Cancelled or over already.")


def _field(name: str | None) -> str | None:
    """A service's field name as the request body names it (spec fields inside `spec`)."""
    body = {"name", "tenant", "template", "spec", "starts_at", "ends_at", "time_zone"}
    if not name or name in body | {"recurrence", "until", "state"}:
        return name
    return f"spec.{name}"


@extend_schema_view(
    list=extend_schema(
        summary="List bookings",
        description="Operators see every booking; members their tenants'. Earliest first.",
    ),
    retrieve=extend_schema(
        summary="One booking",
        description="With its request and each occurrence: its window, state, host and "
        "the devices held for it. Other tenants' bookings answer 404.",
    ),
)
class BookingViewSet(TenantRequests, mixins.CreateModelMixin, ReadOnlyViewSet):
    """Bookings: each caller sees its own tenants' (operators every tenant's)."""

    def get_queryset(self) -> QuerySet[Booking]:
        queryset = (
            Booking.objects.for_user(self.request.user)
            .select_related("tenant", "template", "requested_by")
            .order_by("starts_at", "pk")
        )
        if self.action != "list":
            queryset = queryset.prefetch_related(
                Prefetch(
                    "occurrences",
                    queryset=Occurrence.objects.select_related("host").order_by("starts_at", "pk"),
                )
            )
        return queryset

    def get_serializer_class(self) -> type[BaseSerializer[Any]]:
        if self.action == "list":
            return BookingSerializer
        if self.action == "create":
            return BookingRequestSerializer
        return BookingDetailSerializer

    def _detail_response(self, booking: Booking, code: int = status.HTTP_200_OK) -> Response:
        fresh = self.get_queryset().get(pk=booking.pk)
        data = BookingDetailSerializer(fresh, context=self.get_serializer_context()).data
        return Response(data, status=code)

    @extend_schema(
        summary="Book capacity for a window or a recurrence",
        description="Admitted only if every occurrence fits: each is placed as a "
        "composition request would be (models, counts, same switch, latency, quotas, which "
        "count the tenant's other booked windows too) on the capacity free in its window, "
        "and the devices chosen are held for it: nobody else is given them then. **201**: "
        "the booking with its occurrences. **409** `booking_refused`: which occurrence "
        "fails, why, and `nearest`. Read-only members get 403.",
        request=BookingRequestSerializer,
        responses={201: BookingDetailSerializer, 400: ErrorSerializer, 409: REFUSED},
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        self._may_write_somewhere()
        body = BookingRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        tenant = self._tenant(data.get("tenant"), write=True)
        template = self._template(data.get("template"))
        try:
            booking = booking_request(
                tenant=tenant,
                requested_by=request.user,
                name=data["name"],
                spec=data.get("spec") or {},
                starts_at=data.get("starts_at"),
                ends_at=data.get("ends_at"),
                time_zone=data.get("time_zone"),
                recurrence=data.get("recurrence"),
                until=data.get("until"),
                template=template,
                remote_addr=request.META.get("REMOTE_ADDR"),
            )
        except ComposerError as exc:
            exc.field = _field(exc.field)
            raise
        logger.info("booking %s made via api by user_id=%s", booking.pk, request.user.pk)
        response = self._detail_response(booking, status.HTTP_201_CREATED)
        response["Location"] = reverse("api:booking_detail", args=[booking.pk], request=request)
        return response

    @extend_schema(
        summary="Cancel a booking (the whole series)",
        description="Every occurrence not ended is cancelled and its devices given back; "
        "200 with the booking. Cancelled already: 409 `invalid_transition`.",
        request=None,
        responses={200: BookingDetailSerializer, 409: NOT_BOOKED},
    )
    @action(detail=True, methods=["post"], url_path="cancel", url_name="cancel")
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        booking = self.get_object()
        self._tenant(booking.tenant.slug, write=True)
        booking_cancel(
            booking=booking, actor=request.user, remote_addr=request.META.get("REMOTE_ADDR")
        )
        return self._detail_response(booking)

    @extend_schema(
        summary="Cancel one occurrence of a booking",
        description="The occurrence's devices are given back; the series goes on. 200 with "
        "the booking. Cancelled or over already: 409 `invalid_transition`.",
        request=None,
        responses={200: BookingDetailSerializer, 404: ErrorSerializer, 409: NOT_BOOKED},
    )
    @action(
        detail=True,
        methods=["post"],
        url_path=r"occurrences/(?P<occurrence>[0-9]+)/cancel",
        url_name="occurrence_cancel",
    )
    def occurrence_cancel(
        self, request: Request, pk: str | None = None, occurrence: str | None = None
    ) -> Response:
        booking = self.get_object()
        self._tenant(booking.tenant.slug, write=True)
        found = Occurrence.objects.filter(booking=booking, pk=int(occurrence or 0)).first()
        if found is None:
            raise NotFound("This booking has no such occurrence.")
        occurrence_cancel(
            occurrence=found, actor=request.user, remote_addr=request.META.get("REMOTE_ADDR")
        )
        return self._detail_response(booking)

    def _occurrence(self, pk: str | None, occurrence: str | None) -> tuple[Booking, Occurrence]:
        booking = self.get_object()
        self._tenant(booking.tenant.slug, write=True)
        found = Occurrence.objects.filter(booking=booking, pk=int(occurrence or 0)).first()
        if found is None:
            raise NotFound("This booking has no such occurrence.")
        return booking, found

    def _reschedule(
        self, request: Request, pk: str | None, occurrence: str | None, how: str
    ) -> Response:
        booking, found = self._occurrence(pk, occurrence)
        body = OccurrenceEndSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        occurrence_reschedule(
            occurrence=found,
            ends_at=body.validated_data["ends_at"],
            actor=request.user,
            remote_addr=request.META.get("REMOTE_ADDR"),
            direction=how,
        )
        return self._detail_response(booking)

    @extend_schema(
        summary="Extend one occurrence",
        description="A later end (`ends_at`) for a booked or running occurrence, admitted "
        "only if every device it holds is free for the extra time, its host is in service "
        "and has the cores and host memory it asks then, and the tenant's quotas allow it. "
        "200 with the booking; **409** `booking_refused` (field `ends_at`) when one of "
        "those does not hold, in words; 400 naming `ends_at` for an end not later or in "
        "the past; 409 `invalid_transition` when it is over or cancelled.",
        request=OccurrenceEndSerializer,
        responses={200: BookingDetailSerializer, 404: ErrorSerializer, 409: REFUSED},
    )
    @action(
        detail=True,
        methods=["post"],
        url_path=r"occurrences/(?P<occurrence>[0-9]+)/extend",
        url_name="occurrence_extend",
    )
    def occurrence_extend(
        self, request: Request, pk: str | None = None, occurrence: str | None = None
    ) -> Response:
        return self._reschedule(request, pk, occurrence, "extend")

    @extend_schema(
        summary="Shorten one occurrence",
        description="An earlier end (`ends_at`, still in the future) for a booked or running "
        "occurrence; the devices' extra time is given back. 200 with the booking; 400 "
        "naming `ends_at` for an end not earlier or in the past; 409 `invalid_transition` "
        "when it is over or cancelled.",
        request=OccurrenceEndSerializer,
        responses={200: BookingDetailSerializer, 404: ErrorSerializer, 409: NOT_BOOKED},
    )
    @action(
        detail=True,
        methods=["post"],
        url_path=r"occurrences/(?P<occurrence>[0-9]+)/shorten",
        url_name="occurrence_shorten",
    )
    def occurrence_shorten(
        self, request: Request, pk: str | None = None, occurrence: str | None = None
    ) -> Response:
        return self._reschedule(request, pk, occurrence, "shorten")

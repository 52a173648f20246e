"""The bookings pages: the tenant's bookings, the booking form (a composition request and
a "When"), one booking with its occurrences, and cancelling the series or one occurrence.

Every read starts from `Booking.objects.for_user`: outsiders get 404; read-only members see
but get 403 on writes. The views parse, call one service, and render.
"""

from __future__ import annotations

import logging
from typing import Any
from zoneinfo import ZoneInfo

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from composer.choices import Role
from composer.errors import ComposerError
from composer.forms.bookings import BookingRequestForm
from composer.models import Booking, Membership, Occurrence, Template
from composer.placement.audience import plan_for
from composer.services.bookings import booking_cancel, booking_request, occurrence_cancel
from composer.views.compositions import writable_tenants
from fabric.kinds import requestable
from fabric.models import Device
from fabric.permissions import is_operator
from fabric.views.responses import htmx_redirect, is_htmx, remote_addr

logger = logging.getLogger(__name__)

PAGE_SIZE = 50


def _may_write(user: Any, booking: Booking) -> bool:
    """Operators, and members of the booking's tenant who are not read-only."""
    if is_operator(user):
        return True
    return (
        Membership.objects.filter(user=user, tenant_id=booking.tenant_id)
        .exclude(role=Role.READONLY)
        .exists()
    )


@login_required
def booking_list(request: HttpRequest) -> HttpResponse:
    """The caller's tenants' bookings (operators: every tenant's), the soonest first."""
    bookings = (
        Booking.objects.for_user(request.user)
        .select_related("tenant", "template")
        .order_by("state", "starts_at", "pk")
    )
    page = Paginator(bookings, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "section": "booking",
        "can_book": writable_tenants(request.user).exists(),
    }
    return render(request, "composer/booking_list.html", context)


def _form_context(form: BookingRequestForm | None) -> dict[str, Any]:
    if form is not None and form.is_bound:
        form.mark_invalid()
    return {
        "form": form,
        "section": "booking",
        "device_models": (
            Device.objects.exclude(model="")
            .filter(kind__in=requestable())
            .order_by("model")
            .values_list("model", flat=True)
            .distinct()
        ),
        "template_specs": form.template_specs() if form is not None else {},
    }


@login_required
def booking_create(request: HttpRequest) -> HttpResponse:
    """The booking form. POST: `booking_request`, then the booking's page; bad input and
    refusals (which occurrence fails, why, the nearest window) come back beside the field
    and book nothing. Read-only members get a notice (and 403 on a POST)."""
    tenants = writable_tenants(request.user)
    operator = is_operator(request.user)
    if request.method == "POST":
        if not tenants.exists():
            raise PermissionDenied("Read-only members cannot book.")
        form = BookingRequestForm(request.POST, tenants=tenants, operator=operator)
        if form.is_valid():
            data = form.cleaned_data
            try:
                booking = booking_request(
                    tenant=data["tenant"],
                    requested_by=request.user,
                    name=data["name"],
                    spec=form.spec(),
                    template=data["template"],
                    starts_at=data["starts_at"],
                    ends_at=data["ends_at"],
                    time_zone=data.get("time_zone") or None,
                    recurrence=data.get("recurrence") or None,
                    until=data.get("until"),
                    remote_addr=remote_addr(request),
                )
            except ComposerError as exc:
                form.add_composer_error(exc)
            else:
                logger.info("booking %s made from the form", booking.pk)
                messages.success(request, f"Booked {booking.name}.")
                return htmx_redirect(request, reverse("composer:booking_detail", args=[booking.pk]))
        status = 400
        if is_htmx(request):
            return render(
                request, "composer/_booking_form.html", _form_context(form), status=status
            )
        return render(request, "composer/booking_form.html", _form_context(form), status=status)
    form_or_none = None
    if tenants.exists():
        # "Book" on the templates page: that template picked; its schedule gives the When.
        slug = request.GET.get("template", "").strip()
        picked = Template.objects.filter(is_active=True, slug=slug).first() if slug else None
        initial: dict[str, Any] = {}
        if picked is not None:
            initial = {"template": picked.pk, "self_heal": bool(picked.spec.get("self_heal"))}
            if picked.schedule:
                initial.update(recurrence="", time_zone=picked.schedule.get("time_zone", "UTC"))
        form_or_none = BookingRequestForm(tenants=tenants, operator=operator, initial=initial)
    return render(request, "composer/booking_form.html", _form_context(form_or_none))


@login_required
def booking_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One booking: what it asks for, when, and each occurrence with its host and devices,
    in the booking's own time zone."""
    booking = get_object_or_404(
        Booking.objects.for_user(request.user).select_related("tenant", "template", "requested_by"),
        pk=pk,
    )
    zone = ZoneInfo(booking.time_zone)
    operator = is_operator(request.user)
    occurrences = [
        {
            "occurrence": occurrence,
            "starts": occurrence.starts_at.astimezone(zone),
            "ends": occurrence.ends_at.astimezone(zone),
            "plan": plan_for(occurrence.placement, operator=operator),
        }
        for occurrence in booking.occurrences.select_related("host").order_by("starts_at", "pk")
    ]
    context = {
        "booking": booking,
        "occurrences": occurrences,
        "starts": booking.starts_at.astimezone(zone),
        "ends": booking.ends_at.astimezone(zone),
        "can_write": _may_write(request.user, booking),
        "section": "booking",
    }
    return render(request, "composer/booking_detail.html", context)


@login_required
@require_POST
def booking_cancel_view(request: HttpRequest, pk: int) -> HttpResponse:
    """The confirmed "Cancel booking" button: every occurrence ahead is given back."""
    booking = get_object_or_404(Booking.objects.for_user(request.user), pk=pk)
    if not _may_write(request.user, booking):
        raise PermissionDenied("Read-only members cannot cancel bookings.")
    try:
        booking_cancel(booking=booking, actor=request.user, remote_addr=remote_addr(request))
    except ComposerError as exc:
        messages.error(request, f"Could not cancel {booking.name}: {exc.message}")
    else:
        messages.success(request, f"Cancelled {booking.name}.")
    return htmx_redirect(request, reverse("composer:booking_detail", args=[booking.pk]))


@login_required
@require_POST
def occurrence_cancel_view(request: HttpRequest, pk: int, occurrence: int) -> HttpResponse:
    """The "Cancel" button of one occurrence: its devices are given back, the series goes on."""
    booking = get_object_or_404(Booking.objects.for_user(request.user), pk=pk)
    found = get_object_or_404(Occurrence.objects.filter(booking=booking), pk=occurrence)
    if not _may_write(request.user, booking):
        raise PermissionDenied("Read-only members cannot cancel bookings.")
    try:
        occurrence_cancel(occurrence=found, actor=request.user, remote_addr=remote_addr(request))
    except ComposerError as exc:
        messages.error(request, f"Could not cancel that occurrence: {exc.message}")
    else:
        messages.success(request, "Cancelled that occurrence; its devices are free again.")
    return htmx_redirect(request, reverse("composer:booking_detail", args=[booking.pk]))

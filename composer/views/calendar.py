"""The calendar page: booked windows on a timeline (a row per pool, tenant or booking;
by default operators' rows are pools, members' bookings), each pool's load day by day, its
free windows, and the conflicts.

The parameters are `composer.forms.calendar.CalendarPageForm` (the API's, and `group`): a bad one
re-renders the page with the error beside its field and a 400. A tenant filter outside the
caller's tenants is a 404, as for anything of another tenant.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone

from composer.forms.calendar import GROUPINGS, CalendarPageForm
from composer.selectors.calendar import (
    Calendar,
    CalendarOccurrence,
    calendar,
    calendar_tenants,
)
from fabric.models import Pool
from fabric.permissions import is_operator

NO_POOL = "none"


def _rows(cal: Calendar, group: str) -> list[dict[str, Any]]:
    """The timeline's rows: every pool of the calendar, or the tenants and bookings that have
    a window in it."""
    if group == "pool":
        return [{"id": f"pool-{p.pool.slug}", "content": p.pool.name} for p in cal.pools]
    seen: dict[str, str] = {}
    for occ in cal.occurrences:
        if group == "tenant":
            seen.setdefault(f"tenant-{occ.tenant_slug}", occ.tenant_name)
        else:
            seen.setdefault(f"booking-{occ.booking}", occ.booking_name)
    return [{"id": key, "content": name} for key, name in seen.items()]


def _row_keys(occ: CalendarOccurrence, group: str, known: set[str]) -> list[str]:
    if group == "pool":
        return [k for k in (f"pool-{s}" for s in occ.pools) if k in known] or [NO_POOL]
    if group == "tenant":
        return [f"tenant-{occ.tenant_slug}"]
    return [f"booking-{occ.booking}"]


def timeline_data(cal: Calendar, *, group: str) -> dict[str, Any]:
    """Rows and items for the timeline: a row per pool (a window that holds in two pools is
    drawn in both), per tenant or per booking."""
    groups = _rows(cal, group)
    known = {g["id"] for g in groups}
    items: list[dict[str, Any]] = []
    for occ in cal.occurrences:
        state = "conflict" if occ.conflicts else occ.state
        title = f"{occ.booking_name} · {occ.tenant_name} · {occ.starts_at:%Y-%m-%d %H:%M} to "
        title += f"{occ.ends_at:%Y-%m-%d %H:%M} UTC · {occ.state}"
        if occ.conflicts:
            title += " · conflict: " + ", ".join(c.reason.replace("_", " ") for c in occ.conflicts)
        item = {
            "content": occ.booking_name,
            "start": occ.starts_at.isoformat(),
            "end": occ.ends_at.isoformat(),
            "title": title,
            "className": f"calendar-item calendar-{state}",
            "url": reverse("composer:booking_detail", args=[occ.booking]),
            "occurrence": occ.id,
        }
        for key in _row_keys(occ, group, known):
            if key not in known:
                groups.append({"id": key, "content": "No pool"})
                known.add(key)
            items.append({**item, "id": f"{occ.id}-{key}", "group": key})
    return {
        "groups": groups,
        "items": items,
        "start": cal.start.isoformat(),
        "end": cal.end.isoformat(),
    }


@login_required
def calendar_page(request: HttpRequest) -> HttpResponse:
    """The calendar of a period (today and the next two weeks unless the URL says)."""
    operator = is_operator(request.user)
    tenants = calendar_tenants(request.user)
    form = CalendarPageForm(request.GET)
    context: dict[str, Any] = {
        "form": form,
        "tenants": tenants,
        "pools": Pool.objects.order_by("name"),
        "operator": operator,
        "groupings": GROUPINGS,
        "section": "calendar",
    }
    if not form.is_valid():
        return render(request, "composer/calendar.html", context, status=400)
    data = form.cleaned_data
    tenant = None
    if data["tenant"]:
        tenant = next((t for t in tenants if t.slug == data["tenant"]), None)
        if tenant is None:
            raise Http404("No such tenant.")
    group = data["group"] or ("pool" if operator else "booking")
    cal = calendar(
        user=request.user,
        start=data["start"],
        end=data["end"],
        pool=data["pool"],
        tenant=tenant,
        min_free=data["min_free"],
        now=timezone.now(),
    )
    context.update(
        {
            "cal": cal,
            "timeline": timeline_data(cal, group=group),
            "group": group,
            "selected_pool": data["pool"].slug if data["pool"] else "",
            "selected_tenant": tenant.slug if tenant else "",
            "start_value": cal.start.strftime("%Y-%m-%d"),
            "end_value": cal.end.strftime("%Y-%m-%d"),
            "has_bookings_anywhere": bool(tenants) or operator,
        }
    )
    return render(request, "composer/calendar.html", context)

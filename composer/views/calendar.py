"""The calendar page: booked windows on a timeline (operators: a row per pool; members: a
row per booking), each pool's load day by day, its free windows, and the conflicts.

The parameters are `composer.forms.calendar.CalendarForm` (the API's too): a bad one
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

from composer.forms.calendar import CalendarForm
from composer.selectors.calendar import Calendar, calendar, calendar_tenants
from fabric.models import Pool
from fabric.permissions import is_operator

NO_POOL = "none"


def timeline_data(cal: Calendar, *, operator: bool) -> dict[str, Any]:
    """Groups and items for the timeline: operators group by pool (a window that holds in
    two pools is drawn in both), members by booking."""
    groups: list[dict[str, Any]] = []
    items: list[dict[str, Any]] = []
    if operator:
        groups = [{"id": p.pool.slug, "content": p.pool.name} for p in cal.pools]
        known = {g["id"] for g in groups}
    else:
        seen: dict[int, str] = {}
        for occ in cal.occurrences:
            seen.setdefault(occ.booking, occ.booking_name)
        groups = [{"id": f"booking-{pk}", "content": name} for pk, name in seen.items()]
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
        if operator:
            slugs = [s for s in occ.pools if s in known] or [NO_POOL]
            for slug in slugs:
                if slug == NO_POOL and NO_POOL not in known:
                    groups.append({"id": NO_POOL, "content": "No pool"})
                    known.add(NO_POOL)
                items.append({**item, "id": f"{occ.id}-{slug}", "group": slug})
        else:
            items.append({**item, "id": str(occ.id), "group": f"booking-{occ.booking}"})
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
    form = CalendarForm(request.GET)
    context: dict[str, Any] = {
        "form": form,
        "tenants": tenants,
        "pools": Pool.objects.order_by("name"),
        "operator": operator,
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
            "timeline": timeline_data(cal, operator=operator),
            "selected_pool": data["pool"].slug if data["pool"] else "",
            "selected_tenant": tenant.slug if tenant else "",
            "start_value": cal.start.strftime("%Y-%m-%d"),
            "end_value": cal.end.strftime("%Y-%m-%d"),
            "has_bookings_anywhere": bool(tenants) or operator,
        }
    )
    return render(request, "composer/calendar.html", context)

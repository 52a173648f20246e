"""Alerts: the list the viewer may see (live), the navbar's open-alert count, acknowledging.

Every read starts from `fabric.services.alerts.alerts_visible_to(user)`: operators
see every alert, a tenant member those that hurt one of their tenants' compositions, and an
alert someone may not see is a 404. Acknowledging is operators' work: a tenant member who
sees the alert gets 403.

The table (`_alert_rows.html`) and the navbar badge (`_alert_nav.html`) reload themselves
when static/js/live.js hears `fabric.alert` or `alert.acknowledged`: one
template draws the first page and every update.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, QueryDict, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import Resolver404, resolve, reverse
from django.utils.cache import patch_vary_headers
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.text import capfirst
from django.views.decorators.http import require_GET, require_POST

from composer.events import blast_radius_for
from composer.forms.alerts import STATE_ALL, AlertFilterForm
from composer.models import Membership, Tenant
from composer.notifications import can_manage_any
from composer.views.lists import filter_words, list_problems, ordering_of
from fabric.api.alert_filters import AlertFilterSet
from fabric.health.blast import stored_counts
from fabric.models import Alert
from fabric.permissions import is_operator
from fabric.services.alerts import alert_acknowledge, alerts_visible_to
from fabric.views.common import DEFAULT_PAGE_SIZE, BadPage, is_htmx_partial, paginate
from fabric.views.listing import (
    EXPORT_BATCH,
    Column,
    attr,
    export_query,
    export_response,
    headers,
    visible,
)

TABLE_TARGET = "alert-table"
DEFAULT_ORDERING = "-opened"


@dataclass(frozen=True)
class CompositionLink:
    """A composition named in a blast radius, as the viewer may see it."""

    id: int
    name: str
    state: str
    url: str


@dataclass(frozen=True)
class AlertRow:
    """One alert and its blast radius cut to what the viewer may know."""

    alert: Alert
    effect: str
    device_count: int  # lost
    host_count: int  # lost
    headline: str  # what is lost and degraded, in the words every page uses
    compositions: list[CompositionLink]  # hit: a binding lost
    compositions_degraded: list[CompositionLink]  # every binding kept, some over fewer paths
    tenants: list[str]  # operators only: the names of the tenants it hurts


def _links(refs: Any) -> list[CompositionLink]:
    """The compositions of a blast radius's list `refs` (rows with an id), as links."""
    return [
        CompositionLink(
            id=ref["id"],
            name=str(ref.get("name") or f"#{ref['id']}"),
            state=str(ref.get("state") or ""),
            url=reverse("composer:composition_detail", args=[ref["id"]]),
        )
        for ref in refs or ()
        if isinstance(ref, dict) and isinstance(ref.get("id"), int)
    ]


def _rows(alerts: list[Alert], *, operator: bool, tenant_ids: Collection[int]) -> list[AlertRow]:
    """The rows of one page; at most one query (the tenants' names, for operators).

    A tenant's radius is cut by `composer.events.blast_radius_for`, the rule that also cuts
    the live events (and that the registered alert scope applies): called here with the
    viewer's tenant ids read once, rather than through the scope once per row.
    """
    radii: list[Mapping[str, Any]] = []
    for alert in alerts:
        radius: Mapping[str, Any] = (
            alert.blast_radius if isinstance(alert.blast_radius, dict) else {}
        )
        if not operator:
            radius = blast_radius_for(radius, tenant_id=tenant_ids)
        radii.append(radius)
    names: dict[int, str] = {}
    if operator:
        wanted = {t for radius in radii for t in radius.get("tenants") or () if isinstance(t, int)}
        if wanted:
            names = dict(Tenant.objects.filter(pk__in=wanted).values_list("pk", "name"))
    rows = []
    for alert, radius in zip(alerts, radii, strict=True):
        tenants = [
            names.get(t, f"tenant {t}") for t in radius.get("tenants") or () if isinstance(t, int)
        ]
        counts = stored_counts(radius)
        rows.append(
            AlertRow(
                alert=alert,
                effect=str(radius.get("effect") or ""),
                device_count=counts.devices_lost,
                host_count=counts.hosts_lost,
                headline=counts.headline(),
                compositions=_links(radius.get("compositions")),
                compositions_degraded=_links(radius.get("compositions_degraded")),
                tenants=sorted(tenants) if operator else [],
            )
        )
    return rows


def _blast_words(row: AlertRow, *, operator: bool) -> str:
    """The blast radius column in words: the figures for operators, the effect for members
    (whose compositions are exported in a column of their own)."""
    if not operator:
        return {"at_risk": "At risk", "frozen": "Bindings frozen"}.get(row.effect, "")
    words = f"At risk: {row.headline}" if row.effect == "at_risk" else capfirst(row.headline)
    return f"{words} (bindings frozen)" if row.effect == "frozen" else words


def _names(links: list[CompositionLink]) -> str:
    return ", ".join(link.name for link in links)


def _columns(*, operator: bool) -> tuple[list[Column], list[Column]]:
    """The table's columns and the export's, in the viewer's words: a member's message is
    the alert's `tenant_message`, and never the source's name, the tenants it hurts or who
    acknowledged it."""
    if operator:
        message = Column("Message", "message", attr("alert.message"))
    else:
        message = Column("Message", "message", attr("alert.tenant_message"))
    table = [
        Column("Severity", "severity", attr("alert.severity"), sort="severity"),
        Column("Source", "source_type", attr("alert.source_type"), sort="source"),
        message,
        Column("Opened", "opened_at", attr("alert.opened_at"), sort="opened"),
        Column("Closed", "closed_at", attr("alert.closed_at"), sort="closed"),
        Column("Seen", "occurrences", attr("alert.occurrences"), sort="seen", numeric=True),
        Column("Blast radius", "blast_radius", partial(_blast_words, operator=operator)),
        Column(
            "Acknowledged", "acknowledged_at", attr("alert.acknowledged_at"), sort="acknowledged"
        ),
    ]
    extra = [
        Column("Source name", "source_name", attr("alert.source_name"), operator_only=True),
        Column("Rule", "rule", attr("alert.rule")),
        Column("State", "state", attr("alert.state")),
        Column("Last seen", "last_seen_at", attr("alert.last_seen_at")),
        Column("Flapping", "is_flapping", attr("alert.is_flapping")),
        Column("Compositions", "compositions", lambda r: _names(r.compositions)),
        Column(
            "Compositions degraded",
            "compositions_degraded",
            lambda r: _names(r.compositions_degraded),
        ),
        Column("Tenants", "tenants", lambda r: ", ".join(r.tenants), operator_only=True),
        Column(
            "Acknowledged by",
            "acknowledged_by",
            attr("alert.acknowledged_by.username"),
            operator_only=True,
        ),
    ]
    exported = [Column("Id", "id", attr("alert.pk")), *table, *visible(extra, operator=operator)]
    return table, exported


def _export_rows(
    alerts: QuerySet[Alert], *, operator: bool, tenant_ids: list[int]
) -> Iterator[AlertRow]:
    """Every alert of `alerts` as a row, read in batches (one query for the rows and at most
    one for the tenants' names per batch), whatever the count."""
    batch: list[Alert] = []
    for alert in alerts.iterator(chunk_size=EXPORT_BATCH):
        batch.append(alert)
        if len(batch) == EXPORT_BATCH:
            yield from _rows(batch, operator=operator, tenant_ids=tenant_ids)
            batch = []
    if batch:
        yield from _rows(batch, operator=operator, tenant_ids=tenant_ids)


@login_required
@require_GET
def alert_list(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """The alerts the viewer may see, newest first unless sorted otherwise, filtered by state,
    severity, source and text; `?export=csv|json` gives every alert the filters select.

    Bad filter values are a 400 naming the field; a page past the end a 404. htmx asks for
    the table alone (HX-Target: alert-table) when filtering, paging or when live.js says an
    alert changed.
    """
    user = request.user
    assert user.is_authenticated  # login_required
    operator = is_operator(user)
    form = AlertFilterForm(request.GET, operator=operator)
    query = form.filter_query() if form.is_valid() else QueryDict(mutable=True)
    if ordering_of(request):
        query["ordering"] = ordering_of(request)
    visible_alerts = alerts_visible_to(user)
    filterset = AlertFilterSet(
        query,
        queryset=visible_alerts.select_related("manager", "acknowledged_by"),
        request=request,
    )
    errors = list_problems(request, form, filterset.form)
    status = 400 if errors else 200
    table, exported = _columns(operator=operator)
    page = None
    rows: list[AlertRow] = []
    tenant_ids: list[int] = []
    if not operator:
        tenant_ids = list(Membership.objects.filter(user=user).values_list("tenant_id", flat=True))
    if not errors:
        alerts = filterset.qs
        alerts = alerts.order_by(*(alerts.query.order_by or ("-opened_at", "-id")), "pk")
        export = request.GET.get("export")
        if export:
            every = _export_rows(alerts, operator=operator, tenant_ids=tenant_ids)
            return export_response(every, exported, export=export, filename="alerts")
        try:
            page = paginate(alerts, page=request.GET.get("page"), per_page=DEFAULT_PAGE_SIZE)
        except BadPage as exc:
            status = exc.status
            errors.append(exc.message)
        else:
            rows = _rows(list(page.object_list), operator=operator, tenant_ids=tenant_ids)
    context: dict[str, Any] = {
        "form": form,
        "page": page,
        "rows": rows,
        "errors": errors,
        "can_acknowledge": operator,
        "headers": headers(table, ordering_of(request), default=DEFAULT_ORDERING),
        "export_query": export_query(request),
        "ordering": ordering_of(request),
        "can_silence": operator or can_manage_any(request.user),
    }
    if page is not None and not page.paginator.count:
        context["total"] = visible_alerts.count()
        context["active_filters"] = filter_words(form, unfiltered={"state": STATE_ALL})
    partial_table = is_htmx_partial(request, TABLE_TARGET)
    template = "composer/_alert_rows.html" if partial_table else "composer/alert_list.html"
    response = render(request, template, context, status=status)
    patch_vary_headers(response, ["HX-Request", "HX-Target"])
    return response


@login_required
@require_GET
def alert_count(request: HttpRequest) -> HttpResponse:
    """The navbar's alert entry with the viewer's open-alert count (what live.js reloads).

    Drawn as the navbar of the page that asks (htmx's HX-Current-URL) draws it: highlighted
    on the alert pages only.
    """
    return render(request, "composer/_alert_nav.html", {"section": _section_of(request)})


def _section_of(request: HttpRequest) -> str:
    """The navbar section (as `composer_tags.nav_section` names it) of the asking page."""
    path = urlsplit(request.headers.get("HX-Current-URL") or "").path
    try:
        match = resolve(path) if path else None
    except Resolver404:
        return ""
    return str(match.url_name).split("_")[0] if match and match.url_name else ""


@login_required
@require_POST
def alert_acknowledge_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Acknowledge an alert (operators): `fabric.services.alert_acknowledge`, audited there
    with the viewer and their address. Idempotent: the first acknowledgement is kept.

    An alert the viewer may not see is a 404; a tenant member who sees it gets 403. htmx
    gets 204 and an `HX-Trigger: refresh`, so the table the button sits in reloads itself;
    a plain form post goes back to `next` (or the list) with a message.
    """
    alert = get_object_or_404(alerts_visible_to(request.user), pk=pk)
    if not is_operator(request.user):
        raise PermissionDenied("Only operators acknowledge alerts.")
    done = alert_acknowledge(
        alert=alert,
        user=request.user,
        remote_addr=request.META.get("REMOTE_ADDR") or None,
        source="console",
    )
    if request.headers.get("HX-Request") == "true":
        response = HttpResponse(status=204)
        response["HX-Trigger"] = "refresh"
        return response
    if done:
        messages.success(request, f"Alert acknowledged: {alert.message}")
    else:
        messages.info(request, "That alert had already been acknowledged.")
    target = request.POST.get("next") or ""
    if not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        target = reverse("composer:alert_list")
    return redirect(target)

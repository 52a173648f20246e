"""The compositions list: filtered, sorted by any column, paged, exported, live.

Rows start from `Composition.objects.for_user`: a member lists, sorts and exports only their
tenants' compositions. The form draws the filters; the API's FilterSet applies them and the
sort (`?ordering=-ready`, the values of `/api/v1/compositions/`), so a filter or a sort
means the same on the page and in the API. The columns are declared once (`COLUMNS`), for
the headers, the sort and the export alike.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers

from composer.choices import Role
from composer.filters import CompositionFilterSet
from composer.forms.composition_filters import CompositionFilterForm
from composer.models import Composition, Membership
from composer.views.compositions import SETTLED_STATES, writable_tenants
from composer.views.lists import filter_words, list_problems, ordering_of
from fabric.permissions import is_operator
from fabric.views.common import DEFAULT_PAGE_SIZE, BadPage, is_htmx_partial, paginate
from fabric.views.listing import Column, attr, export_query, export_response, headers

TABLE_TARGET = "composition-table"
DEFAULT_ORDERING = "-created"

TENANT = Column("Tenant", "tenant", attr("tenant.name"), sort="tenant")
COLUMNS = (
    Column("Name", "name", attr("name"), sort="name"),
    TENANT,
    Column("State", "state", attr("state"), sort="state"),
    Column("Template", "template", attr("template.name"), sort="template"),
    # A composition's host is its own: members see it on the page and in the API too.
    Column("Host", "host", attr("host.name"), sort="host"),
    Column("Score", "score", attr("score"), sort="score", numeric=True),
    Column("Requested by", "requested_by", attr("requested_by.username"), sort="requested_by"),
    Column("Created", "created_at", attr("created_at"), sort="created"),
    Column("Ready", "ready_at", attr("ready_at"), sort="ready"),
)
# Exported besides the table's columns: the id (the API's) and when it was decomposed.
ID = Column("Id", "id", attr("pk"))
EXTRA_EXPORTED = (Column("Released", "released_at", attr("released_at")),)


def _columns(*, show_tenant: bool) -> list[Column]:
    """The table's columns: the tenant's only where the viewer sees several tenants."""
    return [c for c in COLUMNS if show_tenant or c is not TENANT]


@login_required
def composition_list(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """The compositions the viewer may see, newest first unless sorted otherwise, filtered
    and paginated; `?export=csv|json` gives every row the filters select, in that order."""
    user = request.user
    assert user.is_authenticated  # login_required
    operator = is_operator(user)
    form = CompositionFilterForm(request.GET, operator=operator)
    query = request.GET.copy()
    if not operator:
        query.pop("tenant", None)
    visible = Composition.objects.for_user(user)
    filterset = CompositionFilterSet(
        query, queryset=visible.select_related("tenant", "host", "template", "requested_by")
    )
    errors = list_problems(request, form, filterset.form)
    show_tenant = operator or Membership.objects.filter(user=user).count() > 1
    columns = _columns(show_tenant=show_tenant)
    status = 400 if errors else 200
    page = None
    if not errors:
        rows = filterset.qs
        # Newest first unless asked otherwise; the id breaks ties so pages never overlap.
        rows = rows.order_by(*(rows.query.order_by or ("-created_at", "-id")), "pk")
        export = request.GET.get("export")
        if export:
            exported = [ID, *columns, *EXTRA_EXPORTED]
            return export_response(rows, exported, export=export, filename="compositions")
        try:
            page = paginate(rows, page=request.GET.get("page"), per_page=DEFAULT_PAGE_SIZE)
        except BadPage as exc:
            status = exc.status
            errors.append(exc.message)
    bulk_tenants = None
    if not operator:
        writable = Membership.objects.filter(user=user).exclude(role=Role.READONLY)
        bulk_tenants = set(writable.values_list("tenant_id", flat=True))
    context: dict[str, Any] = {
        "form": form,
        "page": page,
        # Polled while live updates are down, as long as a composition shown is on its way.
        "unsettled": page is not None and any(c.state not in SETTLED_STATES for c in page),
        "errors": errors,
        "can_request": writable_tenants(user).exists(),
        # Rows the viewer may decompose get a tick box (operators: all; read-only: none).
        "bulk_tenants": bulk_tenants,
        "can_bulk": bulk_tenants is None or bool(bulk_tenants),
        "show_tenant": show_tenant,
        "headers": headers(columns, ordering_of(request), default=DEFAULT_ORDERING),
        "column_count": len(columns),
        "export_query": export_query(request),
        "ordering": ordering_of(request),
    }
    if page is not None and not page.paginator.count:
        # Nothing to show: say why (none yet, or none that match, and which filters).
        context["total"] = visible.count()
        context["active_filters"] = filter_words(form)
    partial = is_htmx_partial(request, TABLE_TARGET)
    template = "composer/_composition_table.html" if partial else "composer/composition_list.html"
    response = render(request, template, context, status=status)
    patch_vary_headers(response, ["HX-Request", "HX-Target"])
    return response

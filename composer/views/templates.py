"""The templates page: the named request shapes a composition may be requested from.

Everyone signed in reads it. A tenant member sees the active templates (those the request
form and `/api/v1/templates/` offer them); operators see every template, inactive ones too.
Each row says what the template asks for in words (`composer.spec_words`) and, for whoever
may request, links to the request form with that template picked. Filtered, sorted and
exported like every list, with the API's `TemplateFilterSet`.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render

from composer.filters import TemplateFilterSet
from composer.models import Template
from composer.spec_words import spec_words
from composer.views.compositions import writable_tenants
from composer.views.lists import filter_words, list_problems, ordering_of
from fabric.permissions import is_operator
from fabric.views.common import DEFAULT_PAGE_SIZE, BadPage, paginate
from fabric.views.listing import Column, attr, export_query, export_response, headers, visible

DEFAULT_ORDERING = "name"


def _columns(*, operator: bool) -> tuple[Column, ...]:
    """The table's columns; what a template asks for is in the viewer's words."""
    return (
        Column("Name", "name", attr("name"), sort="name"),
        Column("Description", "description", attr("description")),
        Column("Asks for", "asks_for", lambda t: spec_words(t.spec, operator=operator)),
        Column("Active", "is_active", attr("is_active"), operator_only=True),
        Column("Updated", "updated_at", attr("updated_at"), sort="updated"),
    )


# Exported besides the table's columns: the slug (the API's and the request form's key).
SLUG = Column("Slug", "slug", attr("slug"))


@login_required
def template_list(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """The templates the viewer may request from (operators: every one), by name unless
    sorted otherwise; `?export=csv|json` gives every row the filters select."""
    user = request.user
    assert user.is_authenticated  # login_required
    operator = is_operator(user)
    templates = Template.objects.all() if operator else Template.objects.filter(is_active=True)
    filterset = TemplateFilterSet(request.GET, queryset=templates)
    if not operator:
        filterset.filters.pop("is_active")  # they only ever see active ones
    form = filterset.form
    form.fields["q"].widget.attrs.update(
        {
            "class": "form-control form-control-sm",
            "placeholder": "Name or description",
            "type": "search",
            "autocomplete": "off",
        }
    )
    errors = list_problems(request, form)
    columns = visible(_columns(operator=operator), operator=operator)
    status = 400 if errors else 200
    page = None
    if not errors:
        rows = filterset.qs
        rows = rows.order_by(*(rows.query.order_by or ("name",)), "pk")
        export = request.GET.get("export")
        if export:
            exported = [*columns[:1], SLUG, *columns[1:]]
            return export_response(rows, exported, export=export, filename="templates")
        try:
            page = paginate(rows, page=request.GET.get("page"), per_page=DEFAULT_PAGE_SIZE)
        except BadPage as exc:
            status = exc.status
            errors.append(exc.message)
    context: dict[str, Any] = {
        "filter": filterset,
        "page": page,
        "rows": [
            {"template": t, "asks_for": spec_words(t.spec, operator=operator)} for t in (page or ())
        ],
        "errors": errors,
        "can_request": writable_tenants(user).exists(),
        "headers": headers(columns, ordering_of(request), default=DEFAULT_ORDERING),
        "column_count": len(columns) + 1,  # and the Request link
        "export_query": export_query(request),
        "ordering": ordering_of(request),
    }
    if page is not None and not page.paginator.count:
        context["total"] = templates.count()
        context["active_filters"] = filter_words(form)
    return render(request, "composer/template_list.html", context, status=status)

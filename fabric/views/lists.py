"""What the operators' lists of the fabric share (hosts, enclosures, switches, racks, power
feeds, links): one filter bar, sortable columns, strict paging with the filters and the sort
kept in the URL, an empty state that says why it is empty, CSV and JSON exports
(`fabric.views.listing`), and each object's change history on its page."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.core.paginator import Page
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render

from fabric.filters import DiscoveredFilterSet
from fabric.selectors import change_history
from fabric.views.common import (
    DEFAULT_PAGE_SIZE,
    HISTORY_PAGE_SIZE,
    BadPage,
    filtered_manager,
    paginate,
    paginate_or_raise,
)
from fabric.views.listing import Column, export_query, export_response, headers, list_errors

__all__ = ["MULTI_FILTERS", "SELECT_FILTERS", "filter_bar", "filtered_list", "history_page"]

# Filters drawn as a drop-down of checkboxes (several values at once), and as one <select>.
MULTI_FILTERS = ("kind", "protocol", "tier", "health", "state")
SELECT_FILTERS = {"rack": "Any rack", "switch": "Any switch"}


def filter_bar(
    filterset: DiscoveredFilterSet, *, placeholder: str = "Name, model, vendor, serial"
) -> dict[str, Any]:
    """The filter form's fields laid out for `fabric/_component_filters.html`: the search
    box, the multiple-choice filters and the drop-downs this filter set has."""
    form = filterset.form
    form.fields["q"].widget.attrs.update(
        {
            "class": "form-control form-control-sm",
            "placeholder": placeholder,
            "type": "search",
            "autocomplete": "off",
        }
    )
    selects = []
    for name, empty_label in SELECT_FILTERS.items():
        if name not in form.fields:
            continue
        form.fields[name].empty_label = empty_label
        form.fields[name].widget.attrs.update({"class": "form-select form-select-sm"})
        selects.append(form[name])
    multi = []
    for name in MULTI_FILTERS:
        if name not in form.fields:
            continue
        bound = form[name]
        selected = [str(v) for v in (bound.value() or [])]
        choices = [(value, label, value in selected) for value, label in bound.field.choices]
        summary = ", ".join(label for _, label, checked in choices if checked)
        multi.append(
            {
                "name": name,
                "label": bound.label,
                "choices": choices,
                "summary": summary or "Any",
                "errors": bound.errors,
            }
        )
    return {"multi_filters": multi, "select_filters": selects}


def filtered_list(
    request: HttpRequest,
    *,
    filterset_class: type[DiscoveredFilterSet],
    queryset: QuerySet[Any],
    template: str,
    noun: str,
    columns: Sequence[Column],
    exported: Sequence[Column] = (),
    order: Sequence[str] = ("name",),
    placeholder: str = "Name, model, vendor, serial",
) -> HttpResponse | StreamingHttpResponse:
    """A filtered, sorted, paged list page, or its export (`?export=csv|json`: every row the
    filters select, the table's `columns` and the `exported` ones after them).

    400 naming the field for a filter, a sort or an export it cannot apply, 400 or 404 for
    a page that is not one; `order` unless `?ordering=` says otherwise, the id breaking
    ties so that pages never overlap.
    """
    filterset = filterset_class(request.GET, queryset=queryset, request=request)
    errors = list_errors(filterset.form, request)
    status = 400 if errors else 200
    page = None
    if status == 200:
        rows = filterset.qs
        rows = rows.order_by(*(rows.query.order_by or order), "pk")
        export = request.GET.get("export")
        if export:
            filename = noun.replace(" ", "-")
            return export_response(rows, (*columns, *exported), export=export, filename=filename)
        try:
            page = paginate(rows, page=request.GET.get("page"), per_page=DEFAULT_PAGE_SIZE)
        except BadPage as exc:
            status = exc.status
            errors.append(exc.message)
    context = {
        "filter": filterset,
        "page": page,
        "errors": errors,
        "noun": noun,
        "headers": headers(columns, request.GET.get("ordering", ""), default=order[0]),
        "export_query": export_query(request),
        "is_filtered": any(
            request.GET.get(name) for name in filterset.form.fields if name != "ordering"
        ),
        **filter_bar(filterset, placeholder=placeholder),
        "filtered_manager": filtered_manager(filterset),
    }
    return render(request, template, context, status=status)


def history_page(request: HttpRequest, target_type: str, target_id: int) -> Page:
    """The page of an object's change history asked for by `?history_page=` (400 or 404
    for one that is not a page)."""
    return paginate_or_raise(
        change_history(target_type=target_type, target_id=target_id),
        page=request.GET.get("history_page"),
        per_page=HISTORY_PAGE_SIZE,
    )

"""The audit page: every change of state the viewer may see, newest first, with its exports.

Reads go through `composer.selectors.audit` only: operators see every trail, tenant members
their compositions' state changes, their jobs and their quotas' changes, without remote
addresses. The exports
(`?export=csv` / `?export=json`) carry exactly what the filters select, with the same scoping.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers

from composer.forms.audit import AuditFilterForm
from composer.selectors.audit import (
    AuditEntry,
    AuditFilters,
    audit_entries,
    audit_index,
    audit_stream,
)
from fabric.permissions import is_operator
from fabric.views.common import DEFAULT_PAGE_SIZE, BadPage, is_htmx_partial, paginate
from fabric.views.listing import EXPORTS, csv_lines, export_query, json_array

TABLE_TARGET = "audit-table"
CSV_COLUMNS = (
    "at",
    "who",
    "kind",
    "object_id",
    "label",
    "action",
    "changes",
    "message",
    "source",
    "remote_addr",
)


@login_required
def audit_list(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """The audit entries the viewer may see that the filters select, a page at a time."""
    operator = is_operator(request.user)
    form = AuditFilterForm(request.GET, operator=operator)
    status = 200
    errors: list[str] = []
    page = None
    entries: list[AuditEntry] = []
    export = request.GET.get("export", "")
    if export and export not in EXPORTS:
        errors.append(f"Export: must be csv or json; got {export[:20]!r}.")
        status = 400
    if not form.is_valid():
        errors.extend(form.error_list())
        status = 400
    if status == 200:
        filters = form.filters()
        if export:
            return _export(request, filters, export)
        index = audit_index(user=request.user, filters=filters)
        try:
            page = paginate(
                index if index is not None else [],
                page=request.GET.get("page"),
                per_page=DEFAULT_PAGE_SIZE,
            )
            entries = audit_entries(page.object_list, user=request.user)
        except BadPage as exc:
            status = exc.status
            errors.append(exc.message)
    context = {
        "form": form,
        "page": page,
        "entries": entries,
        "errors": errors,
        "operator": operator,
        "filtered": form.is_valid() and form.filters().any,
        "export_query": export_query(request),
    }
    template = "composer/_audit_table.html" if is_htmx_partial(request, TABLE_TARGET) else None
    response = render(request, template or "composer/audit_list.html", context, status=status)
    patch_vary_headers(response, ["HX-Request", "HX-Target"])
    return response


def _changes_text(entry: AuditEntry) -> str:
    return "; ".join(f"{name}: {before} -> {after}" for name, before, after in entry.changes)


def _csv_rows(entries: Iterator[AuditEntry]) -> Iterator[list[Any]]:
    yield list(CSV_COLUMNS)
    for e in entries:
        yield [
            e.at.isoformat(),
            e.who,
            e.kind,
            e.object_id if e.object_id is not None else "",
            e.label,
            e.action,
            _changes_text(e),
            e.message,
            e.source,
            e.remote_addr or "",
        ]


def _export(request: HttpRequest, filters: AuditFilters, export: str) -> StreamingHttpResponse:
    """Every entry the filters select (not only one page), streamed, read in batches."""
    entries = audit_stream(user=request.user, filters=filters)
    if export == "csv":
        body: Iterator[str] = csv_lines(_csv_rows(entries))
        content_type = "text/csv; charset=utf-8"
    else:
        body = json_array(entry.as_dict() for entry in entries)
        content_type = "application/json"
    response = StreamingHttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="audit.{export}"'
    return response

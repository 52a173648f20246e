"""What every list page shares: sortable column headers and CSV/JSON exports.

A list page declares its columns once (`Column`: the header's label, the `ordering` value that
sorts by it, and the value an export writes), so the table's headers, the sort the URL keeps
(`?ordering=-cores`, the same parameter and values as the API's) and the export's fields
cannot drift apart. An export (`?export=csv` or `?export=json`) carries every row the filters
and the ordering select, not only the page shown, streamed in batches whatever the count.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import chain
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest, StreamingHttpResponse

EXPORTS = ("csv", "json")
EXPORT_BATCH = 500


@dataclass(frozen=True)
class Column:
    """One column of a list page: its header, how it sorts, and what an export writes.

    `sort` is the column's `ordering` value ("" when it does not sort); `key` is the export's
    field name; `value(row)` the exported value (a plain str, number, bool, None or datetime);
    `operator_only` columns are left out for tenant members, in the table and the export.
    """

    label: str
    key: str
    value: Callable[[Any], Any]
    sort: str = ""
    numeric: bool = False
    operator_only: bool = False


@dataclass(frozen=True)
class Header:
    """A column's header as drawn: sorted ascending, descending or not, and where a click
    goes (`next_ordering`)."""

    column: Column
    direction: str
    next_ordering: str


def attr(path: str) -> Callable[[Any], Any]:
    """`attr("rack.name")`: the value at that dotted path, None where a link is missing."""
    names = path.split(".")

    def value(row: Any) -> Any:
        for name in names:
            if row is None:
                return None
            row = getattr(row, name)
        return row

    return value


def visible(columns: Sequence[Column], *, operator: bool) -> list[Column]:
    """The columns the viewer may see."""
    return [c for c in columns if operator or not c.operator_only]


def headers(columns: Sequence[Column], ordering: str, *, default: str) -> list[Header]:
    """Each column's header for the current `ordering` (blank: the page's `default` order).

    A click on the sorted column reverses it; on any other, sorts by it ascending.
    """
    current = (ordering or "").split(",")[0].strip() or default
    cells = []
    for column in columns:
        direction = ""
        if column.sort and current == column.sort:
            direction = "asc"
        elif column.sort and current == f"-{column.sort}":
            direction = "desc"
        next_ordering = f"-{column.sort}" if direction == "asc" else column.sort
        cells.append(Header(column=column, direction=direction, next_ordering=next_ordering))
    return cells


def export_error(request: HttpRequest) -> str | None:
    """The error for an `export` value that is not one (None when it is absent or valid)."""
    export = request.GET.get("export", "")
    if export and export not in EXPORTS:
        return f"Export: must be csv or json; got {export[:20]!r}."
    return None


def list_errors(form: Any, request: HttpRequest) -> list[str]:
    """A list page's errors in the operator's words, each naming its field: the filter
    form's (validated here) and a bad `export`."""
    errors: list[str] = []
    if not form.is_valid():
        for name, messages in form.errors.items():
            label = form.fields[name].label if name in form.fields else name
            errors.extend(f"{label or name}: {message}" for message in messages)
    bad_export = export_error(request)
    if bad_export:
        errors.append(bad_export)
    return errors


def export_query(request: HttpRequest) -> str:
    """The page's query without the page number or export: an export carries every page."""
    query = request.GET.copy()
    for name in ("page", "export"):
        query.pop(name, None)
    return query.urlencode()


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return value


class _Echo:
    """A file-like object that csv.writer writes one row into, handed back as written."""

    def write(self, value: str) -> str:
        return value


# A text cell starting with one of these is a formula to a spreadsheet that opens the file.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    """A CSV cell: empty for None, ISO 8601 for a time, and a text that a spreadsheet would
    run as a formula (a name a fabric manager or a tenant chose: "=HYPERLINK(…)") quoted
    with a leading apostrophe, as OWASP advises; numbers stay numbers."""
    if value is None:
        return ""
    value = _plain(value)
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def csv_lines(rows: Iterable[Sequence[Any]]) -> Iterator[str]:
    """Each row as one CSV line (the first row is the header)."""
    writer = csv.writer(_Echo())
    for row in rows:
        yield writer.writerow([_cell(v) for v in row])


def json_array(objects: Iterable[dict[str, Any]]) -> Iterator[str]:
    """A JSON array written an object at a time."""
    yield "["
    for i, item in enumerate(objects):
        yield ("," if i else "") + json.dumps(item, default=str)
    yield "]"


def _batched(rows: QuerySet[Any] | Iterable[Any]) -> Iterable[Any]:
    if isinstance(rows, QuerySet):
        # In batches, so an export of 100,000 rows never holds them all; `iterator` keeps
        # each batch's select_related joins (prefetches need the chunk size too).
        return rows.iterator(chunk_size=EXPORT_BATCH)
    return rows


def export_response(
    rows: QuerySet[Any] | Iterable[Any],
    columns: Sequence[Column],
    *,
    export: str,
    filename: str,
) -> StreamingHttpResponse:
    """Every row as `export` ("csv" or "json"), streamed, under `filename`.<export>."""
    if export == "csv":
        header = [[c.key for c in columns]]
        lines = (tuple(c.value(row) for c in columns) for row in _batched(rows))
        body: Iterator[str] = csv_lines(chain(header, lines))
        content_type = "text/csv; charset=utf-8"
    else:
        objects = ({c.key: _plain(c.value(row)) for c in columns} for row in _batched(rows))
        body = json_array(objects)
        content_type = "application/json"
    response = StreamingHttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}.{export}"'
    return response

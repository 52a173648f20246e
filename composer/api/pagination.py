"""Pagination for every list endpoint: page numbers, a client-chosen size with a ceiling.

Bad paging input is an error that names the parameter, not a silent fallback: `?page=abc`,
`?page_size=0` and a `page_size` above the ceiling (500, the schema's maximum) answer 400
(`invalid`, field `page` / `page_size`), a page past the end answers 404 (`not_found`,
field `page`) saying how many pages there are. An empty value is the default.

Pages are cut on the base table before the joins (`fabric.paging.IdsFirst`): one COUNT,
then one SELECT that joins only the page's rows.
"""

from __future__ import annotations

from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.views import APIView

from composer.api.errors import FieldNotFound
from fabric.paging import IdsFirst

MAX_PAGE_SIZE = 500


class Pagination(PageNumberPagination):
    """`?page=<n>|last&page_size=<1..500>`; the body is `{count, next, previous, results}`."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE
    page_query_description = "Page number, from 1; `last` for the last page."
    page_size_query_description = f"Results per page (default 50, at most {MAX_PAGE_SIZE})."

    def paginate_queryset(
        self, queryset: QuerySet[Any], request: Request, view: APIView | None = None
    ) -> list[Any]:
        self.request = request
        rows = IdsFirst(queryset) if IdsFirst.applies(queryset) else queryset
        # django-stubs' _SupportsPagination asks for indexing and iteration too; Paginator
        # only counts and slices what it pages, which is all IdsFirst does.
        paginator = self.django_paginator_class(rows, self.get_page_size(request))  # type: ignore[arg-type]
        number = self.get_page_number(request, paginator)
        if number > paginator.num_pages:
            pages = paginator.num_pages
            raise FieldNotFound(
                f"Page {number} does not exist: there {'is' if pages == 1 else 'are'} "
                f"{pages} page{'' if pages == 1 else 's'}.",
                field=self.page_query_param,
            )
        self.page: Page = paginator.page(number)
        self.display_page_controls = paginator.num_pages > 1 and self.template is not None
        return list(self.page)

    def get_page_number(self, request: Request, paginator: Paginator) -> int:
        raw = request.query_params.get(self.page_query_param, "").strip()
        if not raw:
            return 1
        if raw in self.last_page_strings:
            return paginator.num_pages
        return _positive_int(raw, self.page_query_param, "a page number from 1, or `last`")

    def get_page_size(self, request: Request) -> int:
        raw = request.query_params.get(self.page_size_query_param, "").strip()
        if not raw:
            return self.page_size
        expected = f"from 1 to {MAX_PAGE_SIZE}"
        size = _positive_int(raw, self.page_size_query_param, expected)
        if size > MAX_PAGE_SIZE:
            raise ValidationError(
                {self.page_size_query_param: [f"Expected {expected}; got {size}."]}
            )
        return size

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        """DRF's page shape, with examples of a single page (the schema's list examples are
        wrapped in it)."""
        paginated: dict[str, Any] = super().get_paginated_response_schema(schema)
        properties = paginated["properties"]
        properties["count"]["example"] = 1
        properties["next"]["example"] = None
        properties["previous"]["example"] = None
        return paginated

    def get_schema_operation_parameters(self, view: APIView) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE}
            elif parameter["name"] == self.page_query_param:
                # The schema says integer; `last` is accepted too and documented in prose.
                parameter["schema"] = {"type": "integer", "minimum": 1}
        return parameters


def _positive_int(raw: str, field: str, expected: str) -> int:
    """Parse a strictly positive integer or raise a 400 naming `field`."""
    # isascii: str.isdigit() also accepts digits such as '²' that int() rejects; the length
    # first, since int() of thousands of digits is itself an error.
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 19 or int(raw) < 1:
        raise ValidationError({field: [f"Expected {expected}; got {raw[:40]!r}."]})
    return int(raw)

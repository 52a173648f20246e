"""The `ordering` filter of list pages and endpoints whose columns may be empty or computed.

django-filter's `OrderingFilter` hands its values to `order_by()` as they are, so rows with no
value (a composition never ready, an alert still open) come first or last depending on the
direction and on the database (PostgreSQL sorts NULL as the largest value, SQLite as the
smallest): the same `?ordering=-ready` would put different rows on page 1 in development and
in production. `ListOrdering` puts them last in both directions on every database, and lets a
sort key be an expression (a job's duration, a severity's rank) rather than a column.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import django_filters
from django.db.models import F, OrderBy, QuerySet
from django_filters.constants import EMPTY_VALUES

__all__ = ["ListOrdering"]


class ListOrdering(django_filters.OrderingFilter):
    """`OrderingFilter` with empty values last either way, and computed sort keys.

    `fields` is django-filter's ((model field or expression name, parameter), ...);
    `expressions` maps the names that are not columns to the expression they sort by
    (`{"duration": ExpressionWrapper(...)}`), computed only when asked for.
    """

    def __init__(
        self, *args: Any, expressions: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> None:
        self.expressions = dict(expressions or {})
        super().__init__(*args, **kwargs)

    def order_by(self, values: list[str]) -> list[OrderBy]:
        """The `order_by()` terms of the parameters `values` ("-ready", "name")."""
        terms = []
        for param in values:
            if param in EMPTY_VALUES:
                continue
            value = self.get_ordering_value(param)
            descending = value.startswith("-")
            name = value.lstrip("-")
            expression: Any = self.expressions[name] if name in self.expressions else F(name)
            if descending:
                terms.append(expression.desc(nulls_last=True))
            else:
                terms.append(expression.asc(nulls_last=True))
        return terms

    def filter(self, qs: QuerySet[Any], value: Any) -> QuerySet[Any]:
        if value in EMPTY_VALUES:
            return qs
        return qs.order_by(*self.order_by(list(value)))

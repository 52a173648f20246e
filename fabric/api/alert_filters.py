"""The alerts' filters and sort, shared by `/api/v1/alerts/` and the console's alert list (one
FilterSet, two uses): `?severity=critical&q=switch&ordering=-opened` means the same on both."""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import Case, IntegerField, Q, QuerySet, Value, When
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field

from fabric.choices import AlertSeverity, AlertSource, AlertState
from fabric.filters import IdFilter, StrictBooleanFilter
from fabric.health.wording import tenant_wordings_with
from fabric.models import Alert
from fabric.ordering import ListOrdering
from fabric.permissions import is_operator

__all__ = ["ALERT_ORDERING", "SEVERITY_RANK", "AlertFilterSet"]


# Severity as a sort key: the most severe first when ascending (as an alert list reads).
SEVERITY_RANK = Case(
    When(severity=AlertSeverity.CRITICAL, then=Value(0)),
    When(severity=AlertSeverity.WARNING, then=Value(1)),
    default=Value(2),
    output_field=IntegerField(),
)
ALERT_ORDERING = ("severity", "source", "opened", "last_seen", "closed", "seen", "acknowledged")


class AlertFilterSet(django_filters.FilterSet):
    """Alerts by state, severity, source, rule, manager, acknowledgement, time and free text;
    sorted by any column of the alert list.

    The free text matches what the caller is shown: an operator's the alert's message, its
    source's name and its rule; a tenant member's only the sentence members read (the kind
    of element and what is wrong), never an element's name.
    """

    state = django_filters.ChoiceFilter(choices=AlertState.choices)
    severity = django_filters.MultipleChoiceFilter(choices=AlertSeverity.choices, distinct=False)
    source_type = django_filters.MultipleChoiceFilter(choices=AlertSource.choices, distinct=False)
    source_id = IdFilter()
    rule = django_filters.CharFilter(max_length=40)
    manager = IdFilter(field_name="manager_id")
    is_acknowledged = StrictBooleanFilter(method="filter_acknowledged")
    since = extend_schema_field(OpenApiTypes.DATETIME)(
        django_filters.IsoDateTimeFilter(
            method="filter_since",
            help_text="Opened, seen again or closed at or after (ISO 8601).",
        )
    )
    q = django_filters.CharFilter(
        method="filter_text",
        label="Search",
        max_length=100,
        help_text="Text in the message. Operators also match the source's name and the rule; "
        "tenant members match the message they are shown.",
    )
    ordering = ListOrdering(
        fields=(
            ("severity_rank", "severity"),
            ("source_type", "source"),
            ("opened_at", "opened"),
            ("last_seen_at", "last_seen"),
            ("closed_at", "closed"),
            ("occurrences", "seen"),
            ("acknowledged_at", "acknowledged"),
        ),
        expressions={"severity_rank": SEVERITY_RANK},
        help_text=f"Sort by {', '.join(ALERT_ORDERING)}; a leading - reverses (several, "
        "comma-separated, sort in turn). `severity` puts the most severe first, `seen` is "
        "how many polls saw the condition. Rows without a value (an open alert's `closed`) "
        "come last either way. Default: -opened (newest first).",
    )

    class Meta:
        model = Alert
        fields: list[str] = []

    def filter_acknowledged(
        self, queryset: QuerySet[Alert], name: str, value: bool | None
    ) -> QuerySet[Alert]:
        if value is None:
            return queryset
        return queryset.filter(acknowledged_at__isnull=not value)

    def filter_text(self, queryset: QuerySet[Alert], name: str, value: str) -> QuerySet[Alert]:
        value = value.strip()
        if not value:
            return queryset
        if is_operator(getattr(self.request, "user", None)):
            return queryset.filter(
                Q(message__icontains=value)
                | Q(source_name__icontains=value)
                | Q(rule__icontains=value)
            )
        match = Q()
        for source, rule in tenant_wordings_with(value, AlertSource.values):
            match |= Q(source_type=source, rule=rule)
        return queryset.filter(match) if match else queryset.none()

    def filter_since(self, queryset: QuerySet[Alert], name: str, value: Any) -> QuerySet[Alert]:
        if value is None:
            return queryset
        return queryset.filter(
            Q(opened_at__gte=value) | Q(last_seen_at__gte=value) | Q(closed_at__gte=value)
        )

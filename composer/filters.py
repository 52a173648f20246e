"""Filters shared by composer's pages and its API (one FilterSet, two uses).

`?state=ready&ordering=-ready` means the same on the compositions page and in
`/api/v1/compositions/`; so do the job and template filters on their pages and endpoints.
Each list's `ordering` values are the sort keys of the page's column headers
(`composer.views.lists`), and rows without a value sort last either way (`ListOrdering`).
"""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import DurationField, ExpressionWrapper, F, Q, QuerySet
from django.db.models.functions import Coalesce, Now

from composer.choices import CompositionState, JobKind, JobStatus
from composer.models import Composition, Job, Template
from fabric.filters import StrictBooleanFilter
from fabric.ordering import ListOrdering

__all__ = ["CompositionFilterSet", "JobFilterSet", "TemplateFilterSet", "ordering_help"]


def ordering_help(values: tuple[str, ...], default: str) -> str:
    """The `ordering` parameter's description: its values, the reverse, the default."""
    return (
        f"Sort by {', '.join(values)}; a leading - reverses (several, comma-separated, sort "
        f"in turn). Rows without a value come last either way. Default: {default}."
    )


class CompositionFilterSet(django_filters.FilterSet):
    """Compositions by state (several allowed), tenant and template slug, and free text;
    sorted by any column of the list.

    `tenant` matters to operators; a member filtering on a tenant that is not theirs gets
    an empty list (never an error that would confirm the tenant exists).
    """

    state = django_filters.MultipleChoiceFilter(choices=CompositionState.choices, distinct=False)
    tenant = django_filters.CharFilter(field_name="tenant__slug", help_text="Tenant slug.")
    template = django_filters.CharFilter(field_name="template__slug", help_text="Template slug.")
    q = django_filters.CharFilter(
        method="filter_q", help_text="Text in the name, the host's name or the template's name."
    )
    ordering = ListOrdering(
        fields=(
            ("name", "name"),
            ("tenant__name", "tenant"),
            ("state", "state"),
            ("template__name", "template"),
            ("host__name", "host"),
            ("score", "score"),
            ("requested_by__username", "requested_by"),
            ("created_at", "created"),
            ("ready_at", "ready"),
        ),
        help_text=ordering_help(
            (
                "name",
                "tenant",
                "state",
                "template",
                "host",
                "score",
                "requested_by",
                "created",
                "ready",
            ),
            "-created (newest first)",
        ),
    )

    class Meta:
        model = Composition
        fields: list[str] = []

    def filter_q(self, queryset: QuerySet[Any], name: str, value: str) -> QuerySet[Any]:
        value = value.strip()
        if not value:
            return queryset
        return queryset.filter(
            Q(name__icontains=value)
            | Q(host__name__icontains=value)
            | Q(template__name__icontains=value)
        )


# How long a job ran, or has run so far (the list's Duration column); none before it starts.
JOB_DURATION = ExpressionWrapper(
    Coalesce(F("finished_at"), Now()) - F("started_at"), output_field=DurationField()
)


class JobFilterSet(django_filters.FilterSet):
    """Jobs by status and kind (several of each allowed: `?status=queued&status=running`),
    sorted by any sortable column of the list."""

    status = django_filters.MultipleChoiceFilter(choices=JobStatus.choices, distinct=False)
    kind = django_filters.MultipleChoiceFilter(choices=JobKind.choices, distinct=False)
    ordering = ListOrdering(
        fields=(
            ("id", "id"),
            ("kind", "kind"),
            ("target_label", "target"),
            ("tenant__name", "tenant"),
            ("status", "status"),
            ("created_at", "created"),
            ("duration", "duration"),
        ),
        expressions={"duration": JOB_DURATION},
        help_text=ordering_help(
            ("id", "kind", "target", "tenant", "status", "created", "duration"),
            "-created (newest first)",
        )
        + " `duration` is how long a job ran, or has run so far; jobs not started yet have "
        "none.",
    )

    class Meta:
        model = Job
        fields: list[str] = []


class TemplateFilterSet(django_filters.FilterSet):
    """Templates by free text (name, slug, description) and whether they are active."""

    q = django_filters.CharFilter(
        method="filter_q",
        label="Search",
        max_length=100,
        help_text="Text in the name, the slug or the description.",
    )
    is_active = StrictBooleanFilter(
        label="Active",
        help_text="Operators: active or inactive ones (members only ever see active ones).",
    )
    ordering = ListOrdering(
        fields=(("name", "name"), ("updated_at", "updated")),
        help_text=ordering_help(("name", "updated"), "name"),
    )

    class Meta:
        model = Template
        fields: list[str] = []

    def filter_q(self, queryset: QuerySet[Any], name: str, value: str) -> QuerySet[Any]:
        value = value.strip()
        if not value:
            return queryset
        return queryset.filter(
            Q(name__icontains=value) | Q(slug__icontains=value) | Q(description__icontains=value)
        )

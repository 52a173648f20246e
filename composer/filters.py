"""Filters shared by composer's pages and its API (one FilterSet, two uses)."""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import Q, QuerySet

from composer.choices import CompositionState
from composer.models import Composition


class CompositionFilterSet(django_filters.FilterSet):
    """Compositions by state (several allowed), tenant and template slug, and free text.

    `tenant` matters to operators; a member filtering on a tenant that is not theirs gets
    an empty list (never an error that would confirm the tenant exists).
    """

    state = django_filters.MultipleChoiceFilter(choices=CompositionState.choices, distinct=False)
    tenant = django_filters.CharFilter(field_name="tenant__slug", help_text="Tenant slug.")
    template = django_filters.CharFilter(field_name="template__slug", help_text="Template slug.")
    q = django_filters.CharFilter(
        method="filter_q", help_text="Text in the name, the host's name or the template's name."
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

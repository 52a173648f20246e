"""FilterSets of composer's API (compositions' is shared with the page: composer.filters)."""

from __future__ import annotations

import django_filters

from composer.choices import JobKind, JobStatus
from composer.filters import CompositionFilterSet
from composer.models import Job, Quota
from fabric.choices import DeviceKind

__all__ = ["CompositionFilterSet", "JobFilterSet", "QuotaFilterSet"]


class JobFilterSet(django_filters.FilterSet):
    """Jobs by status and kind (several of each allowed: `?status=queued&status=running`)."""

    status = django_filters.MultipleChoiceFilter(choices=JobStatus.choices, distinct=False)
    kind = django_filters.MultipleChoiceFilter(choices=JobKind.choices, distinct=False)

    class Meta:
        model = Job
        fields: list[str] = []


class QuotaFilterSet(django_filters.FilterSet):
    """Quotas by tenant slug and device kind."""

    tenant = django_filters.CharFilter(field_name="tenant__slug", help_text="Tenant slug.")
    kind = django_filters.ChoiceFilter(choices=DeviceKind.choices)

    class Meta:
        model = Quota
        fields: list[str] = []

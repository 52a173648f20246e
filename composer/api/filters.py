"""FilterSets of composer's API (compositions', jobs' and templates' are shared with their
pages: composer.filters)."""

from __future__ import annotations

import django_filters

from composer.filters import CompositionFilterSet, JobFilterSet, TemplateFilterSet
from composer.models import Quota
from fabric.choices import DeviceKind

__all__ = ["CompositionFilterSet", "JobFilterSet", "QuotaFilterSet", "TemplateFilterSet"]


class QuotaFilterSet(django_filters.FilterSet):
    """Quotas by tenant slug and device kind."""

    tenant = django_filters.CharFilter(field_name="tenant__slug", help_text="Tenant slug.")
    kind = django_filters.ChoiceFilter(choices=DeviceKind.choices)

    class Meta:
        model = Quota
        fields: list[str] = []

"""FilterSets of composer's API."""

from __future__ import annotations

import django_filters

from composer.choices import JobKind, JobStatus
from composer.models import Job


class JobFilterSet(django_filters.FilterSet):
    """Jobs by status and kind (several of each allowed: `?status=queued&status=running`)."""

    status = django_filters.MultipleChoiceFilter(choices=JobStatus.choices, distinct=False)
    kind = django_filters.MultipleChoiceFilter(choices=JobKind.choices, distinct=False)

    class Meta:
        model = Job
        fields: list[str] = []

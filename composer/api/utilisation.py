"""GET /api/v1/utilisation/: the utilisation page's series, for one pool or the data centre.

The parameters are the page's form (`composer.forms.utilisation.UtilisationForm`), so a bad
one is a 400 naming it; the series come from `composer.selectors.utilisation`, with the same
scoping as the page. Not a list: one answer of bounded size (at most about 1,500 points per
series), so it is not paginated.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from composer.forms.utilisation import UtilisationForm
from composer.selectors.utilisation import PERIODS, Utilisation, utilisation_series
from fabric.api.serializers import for_caller


def _stamp(at: Any) -> str:
    return str(at.isoformat().replace("+00:00", "Z"))


class PointSerializer(serializers.Serializer):
    """One bucket of a pool's (or of the data centre's pools of one kind) figures."""

    at = serializers.DateTimeField(help_text="The bucket's start (UTC).")
    capacity = serializers.FloatField(help_text="allocated + free + unavailable.")
    allocated = serializers.FloatField(help_text="Mean over the bucket's minute samples.")
    allocated_peak = serializers.FloatField(help_text="Highest allocated in the bucket.")
    free = serializers.FloatField()
    unavailable = serializers.FloatField()
    utilisation_percent = serializers.FloatField(help_text="allocated / capacity, in percent.")


class OperatorPointSerializer(PointSerializer):
    """A bucket as operators see it: also the stranded capacity."""

    stranded = serializers.FloatField(
        help_text="Free capacity that no usable host could reach (part of `free`)."
    )


class SeriesSerializer(serializers.Serializer):
    """One pool's series, or (`pool` null) the data centre's pools of one kind summed."""

    pool = serializers.CharField(allow_null=True, help_text="The pool's slug; null: all pools.")
    label = serializers.CharField()  # type: ignore[assignment]
    kind = serializers.CharField(help_text="The device kind.")
    unit = serializers.CharField(help_text="`GiB` for partitionable memory, else `devices`.")
    points = PointSerializer(many=True)


class OperatorSeriesSerializer(SeriesSerializer):
    points = OperatorPointSerializer(many=True)


class TenantPointSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    compositions = serializers.FloatField(
        help_text="Compositions holding resources (a rollup: the mean over its samples)."
    )


class TenantSeriesSerializer(serializers.Serializer):
    tenant = serializers.CharField(help_text="The tenant's slug.")
    name = serializers.CharField()
    points = TenantPointSerializer(many=True)


class UtilisationSerializer(serializers.Serializer):
    period = serializers.ChoiceField(choices=list(PERIODS))
    resolution = serializers.ChoiceField(choices=["minute", "hour", "day"])
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    series = SeriesSerializer(many=True)
    tenants = TenantSeriesSerializer(many=True)


class OperatorUtilisationSerializer(UtilisationSerializer):
    series = OperatorSeriesSerializer(many=True)


def utilisation_body(data: Utilisation) -> dict[str, Any]:
    """The answer: the page's series as JSON (a member's points have no `stranded`)."""
    return {
        "period": data.period,
        "resolution": data.resolution,
        "start": _stamp(data.start),
        "end": _stamp(data.end),
        "series": [
            {
                "pool": series.pool.slug if series.pool else None,
                "label": series.label,
                "kind": series.kind,
                "unit": series.unit,
                "points": [point.as_dict() for point in series.points],
            }
            for series in data.pools
        ],
        "tenants": [
            {
                "tenant": tenant.slug,
                "name": tenant.name,
                "points": [
                    {"at": _stamp(at), "compositions": round(count, 3)}
                    for at, count in tenant.points
                ],
            }
            for tenant in data.tenants
        ],
    }


@extend_schema(
    summary="Utilisation over time",
    description=(
        "A pool's figures (capacity, allocated, free, unavailable) over the last day, week, "
        "month or year, sampled every minute: a day answers a point a minute, a week a point "
        "an hour, a month or a year a point a day, each the mean of its minute samples. "
        "Without `pool`, one series per device kind summing every pool of that kind (the "
        "data centre). Operators also get the stranded capacity: free capacity that no "
        "usable host could reach. `tenants`: live compositions per tenant across the data "
        "centre; operators get every tenant with any, members their own tenants only. "
        "A bad `pool` or `period` answers 400 naming it."
    ),
    parameters=[
        OpenApiParameter(
            "pool", str, description="A pool's slug; leave it out for the whole data centre."
        ),
        OpenApiParameter(
            "period", str, enum=list(PERIODS), description="How far back (default `day`)."
        ),
    ],
    responses=for_caller(
        "UtilisationForCaller", OperatorUtilisationSerializer, UtilisationSerializer
    ),
    examples=[
        OpenApiExample(
            "One pool over the last day (operator)",
            response_only=True,
            status_codes=["200"],
            value={
                "period": "day",
                "resolution": "minute",
                "start": "2026-12-03T05:21:00Z",
                "end": "2026-12-04T05:21:30Z",
                "series": [
                    {
                        "pool": "h100",
                        "label": "H100 GPUs",
                        "kind": "gpu",
                        "unit": "devices",
                        "points": [
                            {
                                "at": "2026-12-03T05:21:00Z",
                                "capacity": 64.0,
                                "allocated": 40.0,
                                "allocated_peak": 40.0,
                                "free": 22.0,
                                "unavailable": 2.0,
                                "utilisation_percent": 62.5,
                                "stranded": 3.0,
                            }
                        ],
                    }
                ],
                "tenants": [
                    {
                        "tenant": "acme",
                        "name": "Acme",
                        "points": [{"at": "2026-12-03T05:21:00Z", "compositions": 7.0}],
                    }
                ],
            },
        )
    ],
)
class UtilisationView(APIView):
    """GET /api/v1/utilisation/?pool=&period=: the series the utilisation page charts."""

    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        form = UtilisationForm(request.query_params)
        if not form.is_valid():
            raise ValidationError(
                {name: [str(m) for m in msgs] for name, msgs in form.errors.items()}
            )
        data = utilisation_series(
            user=request.user,
            period=form.cleaned_data["period"],
            pool=form.cleaned_data["pool"],
            now=timezone.now(),
        )
        return Response(utilisation_body(data))

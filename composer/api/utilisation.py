"""GET /api/v1/utilisation/: the utilisation page's series, for one pool or the data centre.

The parameters are the page's form (`composer.forms.utilisation.UtilisationForm`), so a bad
one is a 400 naming it; the series come from `composer.selectors.utilisation`, with the same
scoping as the page. Not a list: one answer of bounded size (at most about 1,500 points per
series), so it is not paginated.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from composer.forms.utilisation import UtilisationForm
from composer.selectors.utilisation import (
    PERIODS,
    Utilisation,
    aligned,
    at_of,
    rounded,
    utilisation_series,
)


def _stamp(at: datetime) -> str:
    return str(at.isoformat().replace("+00:00", "Z"))


FIGURES = ("capacity", "allocated", "allocated_peak", "free", "unavailable")


def _numbers(help_text: str) -> serializers.ListField:
    return serializers.ListField(child=serializers.FloatField(allow_null=True), help_text=help_text)


class UtilisationSeriesSerializer(serializers.Serializer):
    """One pool's series, or (`pool` null) the data centre's pools of one kind, as columns
    aligned on the answer's `at`: the n-th value of each figure belongs to its n-th time."""

    pool = serializers.CharField(allow_null=True, help_text="The pool's slug; null: all pools.")
    label = serializers.CharField()  # type: ignore[assignment]
    kind = serializers.CharField(help_text="The device kind.")
    unit = serializers.CharField(help_text="`GiB` for partitionable memory, else `devices`.")
    capacity = _numbers("allocated + free + unavailable; null: no sample at that time.")
    allocated = _numbers("Mean over the bucket's minute samples.")
    allocated_peak = _numbers("Highest allocated of the bucket's minute samples.")
    free = _numbers("Free (stranded included).")
    unavailable = _numbers("Failed, in maintenance or critical health.")
    utilisation_percent = _numbers("allocated / capacity, in percent.")
    stranded = serializers.ListField(
        child=serializers.FloatField(allow_null=True),
        required=False,
        help_text="Operators only: free capacity that no usable host could reach (part of `free`).",
    )


class UtilisationTenantSeriesSerializer(serializers.Serializer):
    tenant = serializers.CharField(help_text="The tenant's slug.")
    name = serializers.CharField()
    compositions = _numbers(
        "Compositions holding resources (a rollup: the mean over its minute samples), "
        "aligned on the answer's `at`; null: no sample at that time."
    )


class UtilisationSerializer(serializers.Serializer):
    period = serializers.ChoiceField(choices=list(PERIODS))
    resolution = serializers.ChoiceField(choices=["minute", "hour", "day"])
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    at = serializers.ListField(
        child=serializers.DateTimeField(),
        help_text="Each bucket's start (UTC), oldest first: the times of every column.",
    )
    series = UtilisationSeriesSerializer(many=True)
    tenants = UtilisationTenantSeriesSerializer(many=True)


def utilisation_body(data: Utilisation) -> dict[str, Any]:
    """The answer: one time axis, and every series (a member's without `stranded`) and
    tenant as columns aligned on it, rounded as the page shows them. One axis rather than a
    copy per series: a day of the data centre is a few thousand times that every series
    shares, and their text was most of the answer."""
    axis = data.time_axis()
    series = []
    for one in data.pools:
        columns: dict[str, Any] = {
            "pool": one.pool.slug if one.pool else None,
            "label": one.label,
            "kind": one.kind,
            "unit": one.unit,
        }
        for name in FIGURES:
            columns[name] = aligned(one.times, rounded(getattr(one, name)), axis)
        columns["utilisation_percent"] = aligned(one.times, one.utilisation_percent(), axis)
        if data.show_stranded and one.stranded is not None:
            columns["stranded"] = aligned(one.times, rounded(one.stranded), axis)
        series.append(columns)
    return {
        "period": data.period,
        "resolution": data.resolution,
        "start": _stamp(data.start),
        "end": _stamp(data.end),
        "at": [_stamp(at_of(seconds)) for seconds in axis],
        "series": series,
        "tenants": [
            {
                "tenant": tenant.slug,
                "name": tenant.name,
                "compositions": aligned(tenant.times, rounded(tenant.compositions), axis),
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
        "`at` lists the buckets' times once; each series is a set of columns aligned on it: "
        "the n-th value of every figure belongs to the n-th time, null where that series has "
        "no sample at that time. Without `pool`, one series per device kind summing every pool of "
        "that kind (the data centre). Operators also get the stranded capacity: free "
        "capacity that no usable host could reach. `tenants`: live compositions per tenant "
        "across the data centre; operators get every tenant with any, members their own "
        "tenants only. A bad `pool` or `period` answers 400 naming it."
    ),
    parameters=[
        OpenApiParameter(
            "pool", str, description="A pool's slug; leave it out for the whole data centre."
        ),
        OpenApiParameter(
            "period", str, enum=list(PERIODS), description="How far back (default `day`)."
        ),
    ],
    responses=UtilisationSerializer,
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
                "at": ["2026-12-03T05:21:00Z", "2026-12-03T05:22:00Z"],
                "series": [
                    {
                        "pool": "h100",
                        "label": "H100 GPUs",
                        "kind": "gpu",
                        "unit": "devices",
                        "capacity": [64.0, 64.0],
                        "allocated": [40.0, 42.0],
                        "allocated_peak": [40.0, 42.0],
                        "free": [22.0, 20.0],
                        "unavailable": [2.0, 2.0],
                        "utilisation_percent": [62.5, 65.62],
                        "stranded": [3.0, 3.0],
                    }
                ],
                "tenants": [
                    {
                        "tenant": "acme",
                        "name": "Acme",
                        "compositions": [7.0, 8.0],
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

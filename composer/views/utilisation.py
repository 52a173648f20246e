"""Utilisation history: charts of a pool (or the data centre) over the last day, week, month
or year, a summary table that also serves as the charts' text, and the CSV of the series."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from statistics import fmean
from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponseBase, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone

from composer.forms.utilisation import UtilisationForm
from composer.selectors.utilisation import (
    PERIOD_LABELS,
    PoolSeries,
    Utilisation,
    aligned,
    at_of,
    rounded,
    utilisation_series,
)
from fabric.models import Pool
from fabric.views.listing import csv_lines

CSV_COLUMNS = ("at", "series", "unit", "measure", "value")
STEP_S = {"minute": 60, "hour": 3600, "day": 86400}


class UtilisationPageForm(UtilisationForm):
    """The page's choices, and `export=csv` for the series it shows."""

    export = forms.ChoiceField(
        required=False,
        choices=[("", "none"), ("csv", "CSV")],
        error_messages={"invalid_choice": "Export as csv."},
    )


@login_required
def utilisation(request: HttpRequest) -> HttpResponseBase:
    """The page (or, with `export=csv`, its series as CSV). Bad choices: the page with the
    error next to its field, status 400."""
    form = UtilisationPageForm(request.GET)
    pools = Pool.objects.order_by("name")
    if not form.is_valid():
        context = {"form": form, "pools": pools, "periods": PERIOD_LABELS, "data": None}
        return render(request, "composer/utilisation.html", context, status=400)
    data = utilisation_series(
        user=request.user,
        period=form.cleaned_data["period"],
        pool=form.cleaned_data["pool"],
        now=timezone.now(),
    )
    if form.cleaned_data["export"] == "csv":
        response = StreamingHttpResponse(
            csv_lines(_csv_rows(data)), content_type="text/csv; charset=utf-8"
        )
        name = data.pool.slug if data.pool else "data-centre"
        response["Content-Disposition"] = (
            f'attachment; filename="utilisation-{name}-{data.period}.csv"'
        )
        return response
    # Each series' utilisation column, computed once for its summary and its chart.
    percents = [series.utilisation_percent() for series in data.pools]
    context = {
        "form": form,
        "pools": pools,
        "periods": PERIOD_LABELS,
        "data": data,
        "summaries": [
            _summary(series, percent, data.show_stranded)
            for series, percent in zip(data.pools, percents, strict=True)
        ],
        "chart": _chart_json(data, percents),
        "query_pool": data.pool.slug if data.pool else "",
    }
    return render(request, "composer/utilisation.html", context)


def _chart_json(data: Utilisation, percents: list[list[float]]) -> dict[str, Any]:
    """The series as the page's script draws them (uPlot's aligned data): one time axis in
    epoch seconds, each line a column of numbers on it, null where its series has no sample
    or where the samples stop for a while (`percents`: each series' utilisation)."""
    axis = data.time_axis()
    x, breaks = _with_gaps(axis, STEP_S[data.resolution])

    def column(times: Sequence[int], values: Sequence[float]) -> list[float | None]:
        return _broken(aligned(times, values, axis), breaks)

    series = []
    for i, (one, percent) in enumerate(zip(data.pools, percents, strict=True)):
        line: dict[str, Any] = {
            "id": f"series-{i}",
            "label": one.label,
            "unit": one.unit,
            "utilisation": column(one.times, percent),
            "allocated": column(one.times, rounded(one.allocated)),
            "free": column(one.times, rounded(one.free)),
            "unavailable": column(one.times, rounded(one.unavailable)),
        }
        if data.show_stranded and one.stranded is not None:
            line["stranded"] = column(one.times, rounded(one.stranded))
        series.append(line)
    tenants = [
        {"name": tenant.name, "y": column(tenant.times, rounded(tenant.compositions))}
        for tenant in data.tenants
    ]
    return {"x": x, "series": series, "tenants": tenants}


def _with_gaps(axis: list[int], step: int) -> tuple[list[int], list[int]]:
    """The axis with a time one bucket after each time that the next does not follow within
    a bucket and a half, and the positions of the axis before which those times go: the
    charts break their lines there (no samples, e.g. while no worker ran) instead of drawing
    a straight line across the gap."""
    x: list[int] = []
    breaks: list[int] = []
    for i, at in enumerate(axis):
        if i and at - axis[i - 1] > 1.5 * step:
            x.append(axis[i - 1] + step)
            breaks.append(i)
        x.append(at)
    return x, breaks


def _broken(values: list[float | None], breaks: list[int]) -> list[float | None]:
    """`values` with a None before each position of `breaks`."""
    if not breaks:
        return values
    out: list[float | None] = []
    last = 0
    for at in breaks:
        out.extend(values[last:at])
        out.append(None)
        last = at
    out.extend(values[last:])
    return out


def _summary(series: PoolSeries, percent: list[float], show_stranded: bool) -> dict[str, Any]:
    """The period in a few figures: the latest bucket, the mean and peak utilisation, the
    mean and most stranded capacity (operators)."""
    if not series.times:
        return {"series": series, "latest": None}
    stranded = series.stranded if show_stranded else None
    return {
        "series": series,
        "latest": {
            "at": at_of(series.times[-1]),
            "capacity": series.capacity[-1],
            "allocated": series.allocated[-1],
            "free": series.free[-1],
            "unavailable": series.unavailable[-1],
            "stranded": stranded[-1] if stranded else None,
        },
        "mean_utilisation": round(fmean(percent), 1),
        "peak_allocated": max(series.allocated_peak),
        "mean_stranded": round(fmean(stranded), 2) if stranded else None,
        "most_stranded": max(stranded) if stranded else None,
    }


def _stamp(seconds: int) -> str:
    return at_of(seconds).isoformat().replace("+00:00", "Z")


def _csv_rows(data: Utilisation) -> Iterator[list[Any]]:
    """One row per (bucket, series, measure): the same figures as the page's charts, in a
    long form any spreadsheet pivots."""
    yield list(CSV_COLUMNS)
    for series in data.pools:
        measures: list[tuple[str, str, list[float]]] = [
            (name, series.unit, rounded(getattr(series, name)))
            for name in ("capacity", "allocated", "allocated_peak", "free", "unavailable")
        ]
        measures.append(("utilisation_percent", "percent", series.utilisation_percent()))
        if data.show_stranded and series.stranded is not None:
            measures.append(("stranded", series.unit, rounded(series.stranded)))
        for i, seconds in enumerate(series.times):
            at = _stamp(seconds)
            for measure, unit, values in measures:
                yield [at, series.label, unit, measure, values[i]]
    for tenant in data.tenants:
        for seconds, count in zip(tenant.times, rounded(tenant.compositions), strict=True):
            yield [_stamp(seconds), tenant.name, "compositions", "compositions", count]

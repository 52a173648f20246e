"""Utilisation history: charts of a pool (or the data centre) over the last day, week, month
or year, a summary table that also serves as the charts' text, and the CSV of the series."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
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
    PoolPoint,
    PoolSeries,
    Utilisation,
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
    context = {
        "form": form,
        "pools": pools,
        "periods": PERIOD_LABELS,
        "data": data,
        "summaries": [_summary(series, data.show_stranded) for series in data.pools],
        "chart": _chart_json(data),
        "query_pool": data.pool.slug if data.pool else "",
    }
    return render(request, "composer/utilisation.html", context)


def _epoch(at: datetime) -> int:
    return int(at.timestamp())


def _chart_json(data: Utilisation) -> dict[str, Any]:
    """The series as the page's script draws them: columns of numbers, times in epoch
    seconds, a tenant's gaps as null."""
    step = STEP_S[data.resolution]
    series = []
    for i, pool_series in enumerate(data.pools):
        points = _with_gaps(pool_series.points, step)
        column: dict[str, Any] = {
            "id": f"series-{i}",
            "label": pool_series.label,
            "unit": pool_series.unit,
            "x": [_epoch(at) for at, _ in points],
            "utilisation": [p and p.utilisation_percent for _, p in points],
            "allocated": [p and round(p.allocated, 3) for _, p in points],
            "free": [p and round(p.free, 3) for _, p in points],
            "unavailable": [p and round(p.unavailable, 3) for _, p in points],
        }
        if data.show_stranded:
            column["stranded"] = [p and round(p.stranded or 0.0, 3) for _, p in points]
        series.append(column)
    times = sorted({_epoch(at) for t in data.tenants for at, _ in t.points})
    tenants = []
    for tenant in data.tenants:
        by_time = {_epoch(at): round(count, 3) for at, count in tenant.points}
        tenants.append({"name": tenant.name, "y": [by_time.get(x) for x in times]})
    return {"series": series, "tenants": {"x": times, "series": tenants}}


def _with_gaps(points: list[PoolPoint], step: int) -> list[tuple[datetime, PoolPoint | None]]:
    """The points, with a None one bucket after each point that the next does not follow
    within a bucket and a half: the chart breaks its line there (no samples, e.g. while no
    worker ran) instead of drawing a straight line across the gap."""
    out: list[tuple[datetime, PoolPoint | None]] = []
    for before, point in zip([None, *points], points, strict=False):
        if before is not None and (point.at - before.at).total_seconds() > 1.5 * step:
            out.append((before.at + timedelta(seconds=step), None))
        out.append((point.at, point))
    return out


def _summary(series: PoolSeries, show_stranded: bool) -> dict[str, Any]:
    """The period in a few figures: the latest point, the mean and peak utilisation, the mean
    and most stranded capacity (operators)."""
    points = series.points
    if not points:
        return {"series": series, "latest": None}
    return {
        "series": series,
        "latest": points[-1],
        "mean_utilisation": round(fmean(p.utilisation_percent for p in points), 1),
        "peak_allocated": max(p.allocated_peak for p in points),
        "mean_stranded": round(fmean(p.stranded or 0.0 for p in points), 2)
        if show_stranded
        else None,
        "most_stranded": max(p.stranded or 0.0 for p in points) if show_stranded else None,
    }


def _csv_rows(data: Utilisation) -> Iterator[list[Any]]:
    """One row per (bucket, series, measure): the same figures as the page's charts, in a
    long form any spreadsheet pivots."""
    yield list(CSV_COLUMNS)
    for series in data.pools:
        for point in series.points:
            figures = point.as_dict()
            at = figures.pop("at")
            for measure, value in figures.items():
                unit = "percent" if measure == "utilisation_percent" else series.unit
                yield [at, series.label, unit, measure, value]
    for tenant in data.tenants:
        for at, count in tenant.points:
            stamp = at.isoformat().replace("+00:00", "Z")
            yield [stamp, tenant.name, "compositions", "compositions", round(count, 3)]

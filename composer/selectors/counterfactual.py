"""The fixed-ratio counterfactual's reads: the compositions that ran in a period, as the
replay's runs, and the replay itself on the chosen server shapes.

What a composition held is kept after it is gone: `ready_at` and `released_at` on the
composition, its spec (cores, host memory), and every allocation it had (device, GPU share,
CXL GiB) with when it was bound and released. Two queries, then `composer.counterfactual`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q
from django.utils import timezone

from composer.counterfactual.replay import MILLI, Held, Resources, Result, Run, Shape, peak_held
from composer.counterfactual.replay import replay as replay_runs
from composer.models import Allocation, Composition, ServerShape
from fabric.kinds import balanced, is_sliced, shares_per_device

__all__ = ["Counterfactual", "counterfactual", "counterfactual_runs", "shape_of"]


@dataclass(frozen=True)
class Counterfactual:
    """The period and shapes asked about, and the replay's answer."""

    start: datetime
    end: datetime
    shapes: tuple[ServerShape, ...]
    result: Result


def shape_of(row: ServerShape) -> Shape:
    """The replay's view of a catalogue row."""
    return Shape(
        name=row.name,
        gpus=row.gpus,
        cores=row.cores,
        memory_gib=row.memory_gib,
        gpu_model=row.gpu_model,
    )


def counterfactual_runs(
    *, start: datetime, end: datetime, now: datetime | None = None
) -> list[Run]:
    """Every composition that was up (ready, not yet released) at some time in `start`..`end`,
    clipped to it; one still up runs until `now`. Its demand is the most it held at once:
    GPUs (the kinds placement balances against cores; a share as its fraction), its cores,
    and memory (host memory plus CXL GiB)."""
    now = now or timezone.now()
    up = Q(ready_at__isnull=False, ready_at__lt=end) & (
        Q(released_at__isnull=True) | Q(released_at__gt=start)
    )
    compositions = list(
        Composition.objects.filter(up)
        .order_by("ready_at", "pk")
        .values_list("pk", "name", "spec", "ready_at", "released_at")
    )
    held: dict[int, list[Held]] = defaultdict(list)
    models: dict[int, set[str]] = defaultdict(set)
    gpu_kinds = balanced()
    # The same condition through the join, not a list of ids: a year's compositions may
    # be more than a database takes as parameters of one query.
    rows = Allocation.objects.filter(
        composition__in=Composition.objects.filter(up).values("pk")
    ).values_list(
        "composition_id",
        "device__kind",
        "device__model",
        "share",
        "gib",
        "created_at",
        "bound_at",
        "released_at",
    )
    for comp_id, kind, model, share, gib, created_at, bound_at, released_at in rows:
        if kind in gpu_kinds:
            parts = shares_per_device(kind)
            milli = round(share * MILLI / parts) if share and parts else MILLI
            amount = Resources(gpu_milli=milli)
            if model:
                models[comp_id].add(model)
        elif is_sliced(kind) and gib:
            amount = Resources(memory_gib=gib)
        else:
            continue  # storage, NICs: fixed servers are not sized by them here
        held[comp_id].append(Held(bound_at or created_at, released_at, amount))
    runs: list[Run] = []
    for comp_id, name, spec, ready_at, released_at in compositions:
        until = min(released_at or now, end)
        clipped_start = max(ready_at, start)
        if until <= clipped_start:
            continue
        # What it held while up: allocations rolled back before it was ready do not count.
        during = [h for h in held[comp_id] if h.end is None or h.end > ready_at]
        peak = peak_held(during, until=until)
        spec = spec or {}
        demand = Resources(
            gpu_milli=peak.gpu_milli,
            cores=int(spec.get("cores") or 0),
            memory_gib=int(spec.get("host_memory_gib") or 0) + peak.memory_gib,
        )
        runs.append(
            Run(
                key=comp_id,
                name=name,
                start=clipped_start,
                end=until,
                demand=demand,
                gpu_models=frozenset(models[comp_id]),
            )
        )
    return runs


def counterfactual(
    *,
    start: datetime,
    end: datetime,
    shapes: Sequence[ServerShape],
    now: datetime | None = None,
) -> Counterfactual:
    """The compositions of `start`..`end` replayed onto servers of `shapes` (at least one)."""
    runs = counterfactual_runs(start=start, end=end, now=now)
    result = replay_runs(runs, [shape_of(s) for s in shapes], start=start, end=end)
    return Counterfactual(start=start, end=end, shapes=tuple(shapes), result=result)

"""The request shapes a fabric expects (`Snapshot.workload`), which the default policy's
scoring keeps room for (`composer.placement.fragmentation`). Pure Python.

Where they come from: a benchmark gives the trace's typical shapes; the console's snapshot
(`composer.services.composition_placement.placement_snapshot`) gives the shapes of the
compositions that are live (`from_specs`), by the
thought that what tenants run now is what they will ask for next (`shapes`). With none
known, scoring keeps room for the request being placed and for the fabric's CPU:GPU ratio.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fabric.kinds import balanced

__all__ = ["COVERAGE", "WorkloadShape", "from_specs", "shapes"]

COVERAGE = 0.95  # the most frequent shapes kept until they cover this share of requests


@dataclass(frozen=True, slots=True)
class WorkloadShape:
    """One shape of the requests the fabric expects: `cores`, `gpus` GPUs (0: none), each
    a `share` of one GPU when set (in the kind's shares, e.g. 250 of 1000) or whole, of
    `model` (None: any), asked with relative frequency `weight`."""

    cores: int
    gpus: int = 0
    share: int | None = None
    model: str | None = None
    weight: float = 1.0


def shapes(
    asked: Iterable[tuple[int, int, int | None, str | None]], coverage: float = COVERAGE
) -> tuple[WorkloadShape, ...]:
    """The typical shapes of `asked` (cores, GPUs, share, model), as FGD takes a workload's
    typical tasks: the most frequent first (ties: the larger first), kept until they cover
    `coverage` of the requests, weighted by how often each is asked among those kept. A
    long tail of rare shapes would cost every decision time and say little."""
    counts = Counter(asked)
    total = sum(counts.values())
    kept: list[tuple[tuple[int, int, int | None, str | None], int]] = []
    covered = 0
    for shape, count in sorted(
        counts.items(),
        key=lambda item: (item[1], item[0][0], item[0][2] or 0, item[0][1], item[0][3] or ""),
        reverse=True,
    ):
        if covered >= coverage * total:
            break
        kept.append((shape, count))
        covered += count
    return tuple(
        WorkloadShape(cores, gpus, share, model, count / covered)
        for (cores, gpus, share, model), count in kept
    )


def from_specs(specs: Iterable[Mapping[str, Any]]) -> tuple[WorkloadShape, ...]:
    """The typical shapes of live compositions' specs: their cores and GPUs (the kinds
    whose balance with cores scoring keeps), a share where an item asks one, the model
    where one is named."""
    kept = balanced()
    asked = []
    for spec in specs:
        items = [i for i in spec.get("items") or () if i.get("kind") in kept]
        models = {i.get("model") for i in items}
        share = next((int(i["share"]) for i in items if i.get("share")), None)
        asked.append(
            (
                int(spec.get("cores") or 0),
                sum(int(i.get("count") or 0) for i in items),
                share,
                models.pop() if len(models) == 1 else None,
            )
        )
    return shapes(asked)

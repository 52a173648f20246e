"""A small history of compositions, as rows, for the counterfactual's database tests.

Times are hours from T0; the period asked about is T0 to T0 + 10 h, "now" is T0 + 12 h.

    train   ready 0 h, released 6 h: 2 whole GPUs and a 64 GiB CXL slice (0-6 h), 16 cores,
            128 GiB host memory; a third GPU bound at -1 h and rolled back at -0.5 h, before
            it was ready, does not count.                       -> 2 GPU, 16 c, 192 GiB
    infer   ready -2 h, still up: half a GPU (a 500/1000 share), 4 cores, 32 GiB; clipped
            to 0-10 h.                                           -> 0.5 GPU, 4 c, 32 GiB
    healed  ready 1 h, released 3 h: GPU a 1-2 h, replaced by GPU b 2-3 h (one at a time),
            8 cores.                                             -> 1 GPU, 8 c, 0 GiB
    old     ready -5 h, released -1 h: before the period.
    never   rejected, never ready.
    later   ready 11 h: after the period.

On one 8-GPU, 64-core, 512 GiB server all three fit together: one server, fullest at 1 h
(3.5 GPU, 28 c, 224 GiB in use; idle 4.5 GPU, 36 c, 288 GiB).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from composer.choices import AllocationState, CompositionState
from composer.models import Allocation, Composition, ServerShape
from fabric.choices import DeviceKind
from tests.factories.fabric import DeviceFactory

T0 = datetime(2026, 11, 30, tzinfo=UTC)
START, END, NOW = T0, T0 + timedelta(hours=10), T0 + timedelta(hours=12)


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def _composition(
    tenant: Any, name: str, ready: float | None, released: float | None, spec: dict[str, Any]
) -> Composition:
    if ready is None:
        state = CompositionState.REJECTED
    else:
        state = CompositionState.READY if released is None else CompositionState.RELEASED
    return Composition.objects.create(
        tenant=tenant,
        name=name,
        state=state,
        spec=spec,
        ready_at=at(ready) if ready is not None else None,
        released_at=at(released) if released is not None else None,
    )


def _held(
    composition: Composition,
    device: Any,
    bound: float,
    released: float | None,
    *,
    share: int | None = None,
    gib: int | None = None,
) -> None:
    allocation = Allocation.objects.create(
        composition=composition,
        device=device,
        share=share,
        gib=gib,
        state=AllocationState.BOUND if released is None else AllocationState.RELEASED,
        bound_at=at(bound),
        released_at=at(released) if released is not None else None,
    )
    Allocation.objects.filter(pk=allocation.pk).update(created_at=at(bound))


def build_history(tenant: Any) -> dict[str, Composition]:
    """The rows above, for `tenant`; returns the compositions by name."""
    gpus = [DeviceFactory(model="H100 SXM") for _ in range(6)]
    cxl = DeviceFactory(kind=DeviceKind.CXL_MEMORY, model="CXL 1 TiB", memory_gib=1024)
    train = _composition(tenant, "train", 0, 6, {"cores": 16, "host_memory_gib": 128})
    _held(train, gpus[0], 0, 6)
    _held(train, gpus[1], 0, 6)
    _held(train, gpus[2], -1, -0.5)
    _held(train, cxl, 0, 6, gib=64)
    infer = _composition(tenant, "infer", -2, None, {"cores": 4, "host_memory_gib": 32})
    _held(infer, gpus[3], -2, None, share=500)
    healed = _composition(tenant, "healed", 1, 3, {"cores": 8})
    _held(healed, gpus[4], 1, 2)
    _held(healed, gpus[5], 2, 3)
    old = _composition(tenant, "old", -5, -1, {"cores": 2})
    _held(old, gpus[2], -5, -1)
    _composition(tenant, "never", None, None, {"cores": 2})
    _composition(tenant, "later", 11, None, {"cores": 2})
    return {c.name: c for c in Composition.objects.all()}


def eight_gpu_shape() -> ServerShape:
    return ServerShape.objects.create(name="8-GPU", gpus=8, cores=64, memory_gib=512)

"""Pools: how much of each is allocated and free, and what they are made of."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from composer.selectors.compositions import pool_holders, pool_shared_devices
from fabric.choices import DeviceState
from fabric.kinds import is_sliced
from fabric.models import Pool
from fabric.selectors import pool_capacities, pool_capacity, pool_device_breakdown

# Column order of the model-by-state table (absent devices are not counted anywhere).
STATES = [s for s in DeviceState if s != DeviceState.ABSENT]


@dataclass
class ModelRow:
    """One model's devices in a pool, counted per state."""

    model: str
    devices: dict[str, int] = field(default_factory=dict)
    gib: dict[str, int] = field(default_factory=dict)

    @property
    def cells(self) -> list[tuple[int, int]]:
        return [(self.devices.get(s, 0), self.gib.get(s, 0)) for s in STATES]

    @property
    def total(self) -> int:
        return sum(self.devices.values())

    @property
    def total_gib(self) -> int:
        return sum(self.gib.values())


@login_required
def pool_list(request: HttpRequest) -> HttpResponse:
    """Every pool with its capacity bar."""
    return render(request, "composer/pool_list.html", {"capacities": pool_capacities()})


@login_required
def pool_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """One pool: capacity, and its devices by model and state. Everyone who may log in sees
    availability; operators also get the way into the pool's device list."""
    pool = get_object_or_404(Pool.objects.select_related("rack"), slug=slug)
    rows: dict[str, ModelRow] = {}
    for item in pool_device_breakdown(pool=pool):
        row = rows.setdefault(item.model, ModelRow(model=item.model or "(no model)"))
        row.devices[item.state] = item.devices
        row.gib[item.state] = item.gib
    model_rows = sorted(rows.values(), key=lambda r: (-r.total, r.model))
    state_totals = [sum(r.devices.get(s, 0) for r in model_rows) for s in STATES]
    context = {
        "pool": pool,
        "cap": pool_capacity(pool=pool),
        "is_memory_pool": is_sliced(pool.kind),
        "states": STATES,
        "model_rows": model_rows,
        "state_totals": state_totals,
        "device_total": sum(state_totals),
        "holders": pool_holders(pool=pool, user=request.user),
        "shared": pool_shared_devices(pool=pool, user=request.user),
    }
    return render(request, "composer/pool_detail.html", context)

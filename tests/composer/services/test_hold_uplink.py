"""A host's uplink carries what its compositions claim, bound or not yet: a hold's devices
(RESERVED, bound to nothing) count, so a second request cannot take the budget a hold
needs, and a composed device counts once."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from composer.choices import CompositionState
from composer.models import Composition
from composer.placement.load import build_snapshot
from composer.services import composition_placement
from composer.services.composition_placement import placement_snapshot
from composer.services.compositions import composition_request
from composer.services.holds import composition_hold
from fabric.models import FabricManager

pytestmark = pytest.mark.django_db

ONE_GPU = {"items": [{"kind": "gpu", "count": 1}]}


def demand(composition: Composition) -> float:
    plan = composition.placement
    return sum(p["bottleneck_gbps"] for p in (*plan["devices"], *plan["memory"]))


def test_a_holds_devices_are_charged_to_its_hosts_uplink(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    held = composition_hold(tenant=acme, requested_by=alice, spec=ONE_GPU, name="h", ttl_s=600)
    assert held.state == CompositionState.HELD and held.host is not None
    host = f"host:{held.host.pk}"
    assert placement_snapshot().hosts[host].uplink_used_gbps == pytest.approx(demand(held))
    # Composed (bound to the host, and still claimed): charged once, not twice.
    with django_capture_on_commit_callbacks(execute=True):
        ready = composition_request(
            tenant=acme, requested_by=alice, spec={**ONE_GPU, "host": held.host.name}, name="r"
        )
    ready.refresh_from_db()
    assert ready.state == CompositionState.READY
    used = placement_snapshot().hosts[host].uplink_used_gbps
    assert used == pytest.approx(demand(held) + demand(ready))


def test_a_second_request_cannot_take_the_uplink_a_hold_needs(
    synced: FabricManager, acme: Any, alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = composition_hold(tenant=acme, requested_by=alice, spec=ONE_GPU, name="h", ttl_s=600)
    assert held.host is not None
    uplink = placement_snapshot().hosts[f"host:{held.host.pk}"].uplink_gbps
    # The host's budget: the hold's GPU and a little more, not a second GPU.
    oversubscription = (demand(held) + 1.0) / uplink
    monkeypatch.setattr(
        composition_placement,
        "build_snapshot",
        partial(build_snapshot, oversubscription=oversubscription),
    )
    second = composition_request(
        tenant=acme, requested_by=alice, spec={**ONE_GPU, "host": held.host.name}, name="s"
    )
    assert second.state == CompositionState.REJECTED
    assert "uplink" in second.failure_reason.lower()

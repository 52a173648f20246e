"""A ResourceClaim read down to what decides the controller's work, and the binding
conditions written back (no database)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from composer.choices import CompositionState
from composer.kubernetes.claims import Verdict, claim_view, status_devices, verdict
from tests.support.kube import FakeKube

NOON = datetime(2026, 12, 4, 12, tzinfo=UTC)
LATER = datetime(2026, 12, 4, 12, 5, tzinfo=UTC)


def allocated(driver: str = "fabric.composer.dev") -> dict:
    kube = FakeKube()
    kube.claim_allocate(
        "ml", "gpus", uid="u-1", node="node-1", driver=driver,
        devices=[("sim/h100-pcie-80gb", "gpu-3"), ("sim/h100-pcie-80gb", "gpu-4")],
    )  # fmt: skip
    return kube.claims[("ml", "gpus")]


def test_a_claim_allocated_to_composer_names_its_node_devices_and_pods() -> None:
    view = claim_view(allocated())

    assert view is not None
    assert (view.uid, view.namespace, view.name, view.node) == ("u-1", "ml", "gpus", "node-1")
    assert view.devices == (("sim/h100-pcie-80gb", "gpu-3"), ("sim/h100-pcie-80gb", "gpu-4"))
    assert view.pods == ("trainer-0",) and not view.deleting


def test_claims_of_other_drivers_or_not_allocated_are_not_composer_s() -> None:
    assert claim_view(allocated(driver="gpu.nvidia.com")) is None
    assert claim_view({"metadata": {"uid": "u-2", "name": "x", "namespace": "ml"}}) is None
    claim = allocated()
    claim["metadata"]["deletionTimestamp"] = "2026-12-04T12:00:00Z"
    view = claim_view(claim)
    assert view is not None and view.deleting
    claim["status"]["allocation"]["nodeSelector"] = {}
    view = claim_view(claim)
    assert view is not None and view.node is None


@pytest.mark.parametrize(
    ("state", "condition"),
    [
        (None, None),
        (CompositionState.PLACING, None),
        (CompositionState.BINDING, None),
        (CompositionState.READY, "FabricDeviceReady"),
        (CompositionState.RESIZING, "FabricDeviceReady"),
        (CompositionState.REJECTED, "FabricDeviceReschedule"),
        (CompositionState.FAILED, "FabricDeviceReschedule"),
        (CompositionState.DEGRADED, "FabricDeviceFailed"),
        (CompositionState.HEALING, "FabricDeviceFailed"),
        (CompositionState.DECOMPOSING, "FabricDeviceFailed"),
        (CompositionState.RELEASED, "FabricDeviceFailed"),
    ],
)
def test_the_composition_s_state_decides_the_binding_condition(
    state: str | None, condition: str | None
) -> None:
    settled = verdict(state, "GPU gpu-3 did not answer")
    assert (settled.type if settled else None) == condition
    if condition in ("FabricDeviceReschedule", "FabricDeviceFailed") and state in (
        CompositionState.REJECTED, CompositionState.FAILED, CompositionState.DEGRADED,
    ):  # fmt: skip
        assert settled is not None and settled.message == "GPU gpu-3 did not answer"


def test_conditions_keep_other_drivers_entries_and_their_transition_times() -> None:
    claim = allocated()
    claim["status"]["devices"] = [{"driver": "gpu.nvidia.com", "pool": "p", "device": "d"}]
    view = claim_view(claim)
    assert view is not None

    pending = status_devices(claim, view, None, NOON)
    assert pending[0] == {"driver": "gpu.nvidia.com", "pool": "p", "device": "d"}
    assert [d["device"] for d in pending[1:]] == ["gpu-3", "gpu-4"]
    assert all(
        c["status"] == "False" and c["reason"] == "Pending" for c in pending[1]["conditions"]
    )

    claim["status"]["devices"] = pending
    ready = status_devices(claim, view, Verdict("FabricDeviceReady", "Composed", "bound"), LATER)
    by_type = {c["type"]: c for c in ready[1]["conditions"]}
    assert by_type["FabricDeviceReady"]["status"] == "True"
    assert by_type["FabricDeviceReady"]["lastTransitionTime"] == "2026-12-04T12:05:00Z"
    # Still False: its time is when it became False.
    assert by_type["FabricDeviceFailed"]["lastTransitionTime"] == "2026-12-04T12:00:00Z"
    claim["status"]["devices"] = ready
    again = status_devices(claim, view, Verdict("FabricDeviceReady", "Composed", "bound"), NOON)
    assert again == ready  # nothing changed: the same status, nothing to write

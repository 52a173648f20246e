"""What the controller writes has the shape of Kubernetes' own types.

The real-server tier stores CRD stand-ins without a schema, so a misnamed or misplaced field
would pass there and be refused (or dropped) by a cluster. Here every slice, claim status
and Lease the controller writes is read into the `kubernetes` client's models of
`resource.k8s.io/v1` and `coordination.k8s.io/v1` (generated from Kubernetes' OpenAPI: a
missing required field raises) and written back: a field the model does not know is
dropped on the way, so the round trip must give back what was written."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

import pytest
from kubernetes.client import ApiClient

from composer.kubernetes.controller import Controller
from composer.kubernetes.leader import Elector
from fabric.models import FabricManager
from tests.support.kube import FakeKube

pytestmark = pytest.mark.django_db

_STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")


class _Answer:
    """What `ApiClient.deserialize` reads: a response's body."""

    def __init__(self, body: Any) -> None:
        self.data = json.dumps(body)


def typed(body: Any, model: str) -> Any:
    """`body` read into the client's `model` and written back as JSON."""
    with ApiClient() as client:
        return client.sanitize_for_serialization(client.deserialize(_Answer(body), model))


def normal(value: Any) -> Any:
    """`value` with its timestamps as datetimes (the client writes them back in another,
    equal form: "+00:00" for "Z")."""
    if isinstance(value, dict):
        return {key: normal(item) for key, item in value.items()}
    if isinstance(value, list):
        return [normal(item) for item in value]
    if isinstance(value, str) and _STAMP.match(value):
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value


def test_slices_claim_statuses_and_leases_are_kubernetes_types(
    synced: FabricManager, acme: Any, django_capture_on_commit_callbacks: Any
) -> None:
    kube = FakeKube()
    kube.node_add("node-1", host="host-a-01")
    kube.namespace_add("ml", tenant="acme")
    with django_capture_on_commit_callbacks(execute=True):
        Controller(kube).reconcile()
    slices = list(kube.slices.values())
    (h100,) = [s for s in slices if s["spec"]["pool"]["name"] == "sim/h100-pcie-80gb"]
    device = h100["spec"]["devices"][0]["name"]
    kube.claim_allocate(
        "ml", "gpus", uid="u-1", node="node-1", devices=[("sim/h100-pcie-80gb", device)]
    )
    for _ in range(2):  # composed, then told
        with django_capture_on_commit_callbacks(execute=True):
            Controller(kube).reconcile()
    Elector(kube, "composer", "controller", "a").lead()
    Elector(kube, "composer", "controller", "a").lead()  # renewed: a replace

    assert slices and all(normal(typed(body, "V1ResourceSlice")) == normal(body) for body in slices)
    (claim,) = kube.claims.values()
    statuses = claim["status"]["devices"]
    assert [c["type"] for c in statuses[0]["conditions"] if c["status"] == "True"] == [
        "FabricDeviceReady"
    ]
    assert normal(typed(statuses, "list[V1AllocatedDeviceStatus]")) == normal(statuses)
    (lease,) = kube.leases.values()
    assert normal(typed(lease, "V1Lease")) == normal(lease)

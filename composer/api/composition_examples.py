"""The schema's examples and shared responses of the composition endpoints."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse

from composer.api.errors import ErrorSerializer
from composer.api.templates import TEMPLATE_EXAMPLE

COMPOSITION_EXAMPLE = {
    "id": 7,
    "url": "https://composer.example/api/v1/compositions/7/",
    "name": "llm-serving",
    "state": "placing",
    "tenant": {"id": 1, "slug": "acme", "name": "Acme"},
    "template": "inference-2gpu-bigmem",
    "host": {"id": 3, "name": "host-a-03"},
    "requested_by": "alice",
    "score": 0.82,
    "failure_reason": "",
    "job": "https://composer.example/api/v1/jobs/41/",
    "created_at": "2025-01-01T12:00:00Z",
    "ready_at": None,
    "released_at": None,
    "spec": TEMPLATE_EXAMPLE["spec"],
    "placement": {
        "ok": True,
        "host_name": "host-a-03",
        "score": 0.82,
        "explanation": [
            "2 of 2 devices sit behind the host's own switch; mean path latency 420 ns."
        ],
        "devices": [
            {
                "name": "gpu-a-01-1",
                "kind": "gpu",
                "latency_ns": 420,
                "bottleneck_gbps": 64.0,
                "gib": None,
            }
        ],
        "memory": [
            {
                "name": "mem-a-01-1",
                "kind": "cxl_memory",
                "latency_ns": 610,
                "bottleneck_gbps": 64.0,
                "gib": 1024,
            }
        ],
        "funnel": [["kind", 64, 64], ["latency", 64, 40]],
    },
    "allocations": [
        {
            "id": 12,
            "device": {
                "id": 5,
                "name": "gpu-a-01-1",
                "kind": "gpu",
                "model": "H100 PCIe 80GB",
                "memory_gib": 80,
                "capacity_gb": None,
            },
            "gib": None,
            "state": "reserved",
            "created_at": "2025-01-01T12:00:00Z",
            "bound_at": None,
            "released_at": None,
        }
    ],
    "history": [
        {
            "from_state": "",
            "to_state": "requested",
            "reason": "Requested from template inference-2gpu-bigmem",
            "actor": "alice",
            "source": "",
            "at": "2025-01-01T12:00:00Z",
        }
    ],
}
REQUEST_EXAMPLES = [
    OpenApiExample(
        "From a template",
        request_only=True,
        value={"name": "llm-serving", "template": "inference-2gpu-bigmem"},
    ),
    OpenApiExample(
        "Custom",
        request_only=True,
        value={
            "name": "train-1",
            "tenant": "acme",
            "spec": {
                "items": [{"kind": "gpu", "model": "H100 PCIe 80GB", "count": 4}],
                "memory_gib": 512,
                "cores": 32,
                "policy": "switch",
            },
            "host": "host-a-03",
        },
    ),
    OpenApiExample(
        "Named devices",
        description="A specific composition: these devices exactly, on a host that reaches "
        "them all (here the one named). A memory device without gib gives all its free GiB.",
        request_only=True,
        value={
            "name": "pinned-1",
            "spec": {
                "devices": [{"device": "gpu-a-01-1"}, {"device": "cxl-a-01", "gib": 256}],
                "host": "host-a-03",
            },
        },
    ),
]
REJECTION_EXAMPLE = {
    "ok": False,
    "code": "domain_conflict",
    "message": "No host reaches 8 GPUs behind one switch.",
    "nearest": "6 of 8 GPUs fit behind one switch; relax 'same switch' or wait.",
    "funnel": [
        ["hosts: cores and memory", 16, 16],
        ["GPUs: kind and model", 64, 12],
        ["hosts: reach 8 GPUs", 16, 16],
        ["hosts: same switch", 16, 0],
    ],
}
BAD_INPUT = OpenApiResponse(
    ErrorSerializer,
    description="Bad input, nothing written. `invalid` (body shape, unknown template or "
    "tenant) or `invalid_spec` (the spec: negative or absurd counts, unknown models, a "
    "number that is not one, a host that does not exist, more than the fabric has); "
    "`field` names it, e.g. `spec.items[0].count`, `spec.memory_gib`, `host`.",
)
OVER_QUOTA = OpenApiResponse(
    ErrorSerializer,
    description="`quota_exceeded`: over a quota of the tenant; the message names the quota "
    "and the excess. `name_taken` (field `name`): another live composition of the tenant has "
    "the name. Nothing written.",
)
IDEMPOTENCY = OpenApiParameter(
    "Idempotency-Key",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    description="Up to 200 characters, unique per tenant. A retried POST with the same key "
    "returns the first result (the same composition and status) and composes nothing new.",
)

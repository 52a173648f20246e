"""Resizing a ready composition: its preview, and the resize itself (a job).

Both call `composer.services.resize`. Bad input answers 400 naming the entry (`add[0].count`,
`remove[1]`); a composition that is not ready 409 `invalid_transition` (field `state`); a
quota 409 `quota_exceeded`; additions that do not fit now 422 `placement_rejected` with the
rejection. Read-only members may preview and get 403 on the resize; other tenants 404.
"""

from __future__ import annotations

import logging

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from composer.api.composition_examples import BAD_INPUT
from composer.api.errors import ErrorSerializer, error_body
from composer.api.holds import CompositionHoldActions
from composer.api.serializers import JobSerializer
from composer.api.serializers.resize import (
    ResizePlanSerializer,
    ResizeRejectedSerializer,
    ResizeRequestSerializer,
    resize_plan_public,
)
from composer.services.resize import ResizeRejected, resize_preview, resize_request
from fabric.permissions import is_operator

logger = logging.getLogger(__name__)

__all__ = ["CompositionResizeActions"]

NOT_READY = OpenApiResponse(
    ErrorSerializer,
    description="`invalid_transition` (field `state`): the composition is not ready; or "
    "`quota_exceeded`: what is added, less what is given back, is over a quota (the field "
    "names the entry).",
)
REQUEST_EXAMPLES = [
    OpenApiExample("One more GPU", value={"add": [{"kind": "gpu", "count": 1}]}, request_only=True),
    OpenApiExample(
        "256 GiB of CXL memory and a quarter of a GPU",
        value={"add": [{"kind": "cxl_memory", "gib": 256}, {"kind": "gpu", "share": 250}]},
        request_only=True,
    ),
    OpenApiExample(
        "Swap a GPU for another model",
        value={"add": [{"kind": "gpu", "model": "L40S 48GB"}], "remove": [41]},
        request_only=True,
    ),
]
PLAN_EXAMPLE = {
    "ok": True,
    "host_name": "host-a-01",
    "score": 0.912,
    "explanation": [
        "host-a-01 reaches 1 usable GPU within the rules.",
        "Removes GPU gpu-a-02-1: unbound from host-a-01 once what is added is bound and "
        "verified, then given back to the pools.",
    ],
    "devices": [
        {
            "name": "gpu-a-01-2",
            "kind": "gpu",
            "latency_ns": 298,
            "bottleneck_gbps": 64.0,
            "gib": None,
            "share": None,
        }
    ],
    "memory": [],
    "funnel": [["GPUs: kind and model", 4, 1]],
    "remove": [{"allocation": 41, "name": "gpu-a-02-1", "kind": "gpu", "gib": None, "share": None}],
    "spec": {
        "items": [{"kind": "gpu", "model": "L40S 48GB", "count": 1, "minima": {}}],
        "devices": [],
        "memory_gib": 0,
        "storage_tb": 0,
        "cores": 0,
        "host_memory_gib": 0,
        "host": None,
        "max_latency_ns": None,
        "policy": "none",
        "same_switch": False,
        "critical": False,
        "self_heal": False,
    },
}
REJECTION_EXAMPLE = {
    "ok": False,
    "code": "no_capacity",
    "message": "Nothing fits on host-a-01 for what train-a would add: 0 usable GPUs match; 1 "
    "asked.",
    "nearest": "gpu-a-02-2 at 310 ns, breaking the failure-domain rules.",
    "funnel": [["GPUs: kind and model", 4, 0]],
    "remove": [],
}


class CompositionResizeActions(CompositionHoldActions):
    """Resize and its preview, for the compositions viewset."""

    @extend_schema(
        summary="Preview a resize (dry run)",
        description="What a resize would do now, holding nothing: the devices, CXL memory "
        "slices and GPU shares it would add, placed on the composition's host under its own "
        "rules (latency ceiling, failure-domain policy, same switch, isolation, the pool of "
        "its devices of that kind), with the explanation; what it would give back "
        "(`remove`); and the request once resized (`spec`). Or, with `ok` false, why nothing "
        "fits and the nearest alternative. Read-only members may preview.",
        request=ResizeRequestSerializer,
        responses={200: ResizePlanSerializer, 400: BAD_INPUT, 409: NOT_READY},
        examples=[
            *REQUEST_EXAMPLES,
            OpenApiExample("Plan", value=PLAN_EXAMPLE, response_only=True),
            OpenApiExample("Nothing fits", value=REJECTION_EXAMPLE, response_only=True),
        ],
    )
    @action(detail=True, methods=["post"], url_path="resize/preview", url_name="resize_preview")
    def resize_preview(self, request: Request, pk: str | None = None) -> Response:
        composition = self.get_object()
        body = ResizeRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        plan = resize_preview(
            composition=composition,
            add=body.validated_data.get("add"),
            remove=body.validated_data.get("remove"),
        )
        return Response(resize_plan_public(plan, operator=is_operator(request.user)))

    @extend_schema(
        summary="Resize a ready composition",
        description="Adds devices, CXL memory or GPU shares to a ready composition, and gives "
        "devices back, as a job: the additions are placed and claimed now (as the preview "
        "says), the composition is `resizing` (in use with what it keeps), and the job binds "
        "and verifies what is added, then unbinds and releases what goes; it ends `ready` "
        "with its new request and plan, or, when an addition cannot be bound, `ready` with "
        "what it had and the reason in `failure_reason`. **202** with the job (`Location` is "
        "its URL). **422** `placement_rejected`: the additions do not fit now; the body "
        "carries the `rejection` (nothing is claimed). Removing every device is refused "
        "(400 on `remove`): decompose instead. Read-only members get 403; other tenants 404.",
        request=ResizeRequestSerializer,
        responses={
            202: OpenApiResponse(JobSerializer, description="The queued resize job."),
            400: BAD_INPUT,
            409: NOT_READY,
            422: OpenApiResponse(ResizeRejectedSerializer, description="Nothing fits now."),
        },
        examples=[
            *REQUEST_EXAMPLES,
            OpenApiExample(
                "Nothing fits",
                response_only=True,
                status_codes=["422"],
                value={
                    "code": "placement_rejected",
                    "detail": REJECTION_EXAMPLE["message"],
                    "field": None,
                    "errors": {},
                    "rejection": REJECTION_EXAMPLE,
                },
            ),
        ],
    )
    @action(detail=True, methods=["post"], url_path="resize", url_name="resize")
    def resize(self, request: Request, pk: str | None = None) -> Response:
        composition = self.get_object()
        self._tenant_writable(composition.tenant)
        body = ResizeRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            job = resize_request(
                composition=composition,
                add=body.validated_data.get("add"),
                remove=body.validated_data.get("remove"),
                requested_by=request.user,
                remote_addr=request.META.get("REMOTE_ADDR"),
                source="api",
            )
        except ResizeRejected as exc:
            answer = error_body(code=exc.code, detail=exc.message)
            answer["rejection"] = resize_plan_public(exc.plan, operator=is_operator(request.user))
            return Response(answer, status=exc.status_code)
        logger.info("composition %s resize requested via api as job %s", composition.pk, job.pk)
        data = JobSerializer(job, context=self.get_serializer_context()).data
        return Response(data, status=status.HTTP_202_ACCEPTED, headers={"Location": data["url"]})

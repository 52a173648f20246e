"""Compositions: the API through which tenants compose, preview, decompose, heal, resize.

Every queryset starts from the caller's own compositions: outsiders get 404, read-only
members 403 on writes. Composing and decomposing call the services and answer 202 with the
job.

A request the fabric cannot satisfy now answers **422** `placement_rejected` (chosen over
a 202 in state `rejected`, so a client branches on the status, not on a field of a
success body). The composition is still kept, in state `rejected`, as the record of the
request; the 422 body carries its URL, the funnel and the nearest alternative, and an
idempotent retry answers the same 422.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from django.db.models import OuterRef, Prefetch, QuerySet, Subquery
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.serializers import BaseSerializer

from composer.api.composition_examples import (
    BAD_INPUT,
    COMPOSITION_EXAMPLE,
    IDEMPOTENCY,
    OVER_QUOTA,
    REJECTION_EXAMPLE,
    REQUEST_EXAMPLES,
)
from composer.api.errors import CompositionBusy, ErrorSerializer, error_body
from composer.api.filters import CompositionFilterSet
from composer.api.resize import CompositionResizeActions
from composer.api.serializers import (
    CompositionDetailSerializer,
    CompositionRequestSerializer,
    CompositionSerializer,
    JobSerializer,
    PlacementRejectedSerializer,
    PlanSerializer,
    plan_public,
)
from composer.api.tenant_requests import TenantRequests
from composer.choices import CompositionState
from composer.errors import ComposerError, InvalidTransition, SpecError
from composer.models import (
    Allocation,
    Composition,
    Job,
    StateChange,
)
from composer.services.compositions import (
    COMPOSITION_TARGET,
    composition_decompose,
    composition_preview,
    composition_request,
    placement_as_dict,
)
from composer.services.heal import heal_request
from composer.services.holds import composition_hold
from fabric.api.views import ReadOnlyViewSet
from fabric.permissions import is_operator

logger = logging.getLogger(__name__)

_S = CompositionState
BUSY_STATES = {_S.REQUESTED, _S.PLACING, _S.BINDING, _S.RESIZING}
# Fields of the request body itself; every other field a service names is inside `spec`.
BODY_FIELDS = {
    "name",
    "tenant",
    "template",
    "host",
    "spec",
    "idempotency_key",
    "override_bookings",
}


def _latest_job() -> Subquery:
    return Subquery(
        Job.objects.filter(target_type=COMPOSITION_TARGET, target_id=OuterRef("pk"))
        .order_by("-created_at", "-pk")
        .values("pk")[:1]
    )


def _field(name: str | None) -> str | None:
    """A service's field name as the request body names it."""
    if name == "ttl_s":
        return "hold_s"
    if not name or name in BODY_FIELDS:
        return name
    return f"spec.{name}"


@extend_schema_view(
    list=extend_schema(
        summary="List compositions",
        description="Operators see every composition; members their tenants'. Newest first "
        "unless `ordering` says otherwise. Filters: `state` (several allowed), `tenant` and "
        "`template` (slugs), `q` (name, host, template). `job` is the URL of the latest "
        "compose or decompose job.",
    ),
    retrieve=extend_schema(
        summary="One composition",
        description="With its normalised request, the plan (host, devices and memory "
        "slices with path latency and bandwidth, score, explanation, funnel), the devices it "
        "holds (no serials or fabric addresses), and its state history. Other tenants' "
        "compositions answer 404.",
        examples=[OpenApiExample("Placing", value=COMPOSITION_EXAMPLE, response_only=True)],
    ),
)
class CompositionViewSet(
    CompositionResizeActions, TenantRequests, mixins.CreateModelMixin, ReadOnlyViewSet
):
    """Compositions: each caller sees its own tenants' (operators every tenant's)."""

    filterset_class = CompositionFilterSet

    def get_queryset(self) -> QuerySet[Composition]:
        queryset = (
            Composition.objects.for_user(self.request.user)
            .select_related("tenant", "template", "host", "requested_by")
            .annotate(latest_job_id=_latest_job())
            .order_by("-created_at", "-pk")
        )
        if self.action != "list":
            queryset = queryset.prefetch_related(
                Prefetch(
                    "allocations",
                    queryset=Allocation.objects.select_related("device").order_by("pk"),
                ),
                Prefetch(
                    "state_changes",
                    queryset=StateChange.objects.select_related("actor").order_by("at", "pk"),
                ),
            )
        return queryset

    def get_serializer_class(self) -> type[BaseSerializer[Any]]:
        if self.action == "list":
            return CompositionSerializer
        if self.action in ("create", "preview"):
            return CompositionRequestSerializer
        if self.action in ("decompose", "heal", "apply", "resize"):
            return JobSerializer
        return CompositionDetailSerializer

    @staticmethod
    def _spec(data: dict[str, Any]) -> dict[str, Any]:
        spec = dict(data.get("spec") or {})
        if data.get("host") not in (None, ""):
            spec["host"] = data["host"]
        return spec

    def _detail(self, composition: Composition) -> Composition:
        return self.get_queryset().get(pk=composition.pk)

    # -- actions --

    @extend_schema(
        summary="Request a composition",
        description="Validates, checks the quota, places and claims the devices in one "
        "transaction, and queues the compose job. **202**: the composition (state `placing`, "
        "or further along; `held` with `hold_s`, no job) with `job`, the URL of its compose "
        "job; `Location` is the "
        "composition's URL. **422** `placement_rejected`: nothing fits now; the body is "
        "the error shape plus `rejection` (message, funnel, nearest alternative) and "
        "`composition`, the URL of the request kept in state `rejected`. Read-only members "
        "get 403.",
        request=CompositionRequestSerializer,
        parameters=[IDEMPOTENCY],
        responses={
            202: OpenApiResponse(CompositionDetailSerializer, description="Accepted; queued."),
            400: BAD_INPUT,
            409: OVER_QUOTA,
            422: OpenApiResponse(
                PlacementRejectedSerializer, description="No placement exists now."
            ),
        },
        examples=[
            *REQUEST_EXAMPLES,
            OpenApiExample(
                "Accepted", value=COMPOSITION_EXAMPLE, response_only=True, status_codes=["202"]
            ),
            OpenApiExample(
                "Rejected",
                response_only=True,
                status_codes=["422"],
                value={
                    "code": "placement_rejected",
                    "detail": REJECTION_EXAMPLE["message"],
                    "field": None,
                    "errors": {},
                    "rejection": REJECTION_EXAMPLE,
                    "composition": "https://composer.example/api/v1/compositions/8/",
                },
            ),
        ],
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        self._may_write_somewhere()
        body = CompositionRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        tenant = self._tenant(data.get("tenant"), write=True)
        template = self._template(data.get("template"))
        hold = data.get("hold_s") is not None
        override = data.get("override_bookings")
        if hold and override is not None:
            raise SpecError(
                "A hold never takes booked devices; leave override_bookings out.",
                field="override_bookings",
            )
        try:
            composition = (
                partial(composition_hold, ttl_s=data["hold_s"])
                if hold
                else partial(composition_request, override_bookings=override)
            )(
                tenant=tenant,
                requested_by=request.user,
                spec=self._spec(data),
                name=data.get("name", ""),
                template=template,
                idempotency_key=request.headers.get("Idempotency-Key"),
                remote_addr=request.META.get("REMOTE_ADDR"),
            )
        except ComposerError as exc:
            exc.field = _field(exc.field)
            raise
        composition = self._detail(composition)
        context = self.get_serializer_context()
        url = reverse("api:composition_detail", args=[composition.pk], request=request)
        if composition.state == CompositionState.REJECTED:
            rejection = plan_public(composition.placement, operator=is_operator(request.user)) or {
                "ok": False,
                "funnel": [],
            }
            message = composition.failure_reason or rejection.get("message") or "No placement."
            body_422 = error_body(code="placement_rejected", detail=message)
            body_422.update(rejection=rejection, composition=url)
            return Response(body_422, status=422)
        logger.info(
            "composition %s requested via api by user_id=%s", composition.pk, request.user.pk
        )
        data_out = CompositionDetailSerializer(composition, context=context).data
        return Response(data_out, status=status.HTTP_202_ACCEPTED, headers={"Location": url})

    @extend_schema(
        summary="Preview a composition (dry run)",
        description="The same body as a request (`name` optional); nothing is written. "
        "Answers 200 with the plan that a request would get now (`ok` true: host, devices, "
        "score, explanation, funnel) or the rejection (`ok` false: message, funnel, nearest "
        "alternative). Bad input and quotas answer as a request does; `hold_s` answers 400 (a "
        "preview holds nothing). Read-only members may preview.",
        request=CompositionRequestSerializer,
        responses={200: PlanSerializer, 400: BAD_INPUT, 409: OVER_QUOTA},
        examples=[
            *REQUEST_EXAMPLES,
            OpenApiExample("Plan", value=COMPOSITION_EXAMPLE["placement"], response_only=True),
            OpenApiExample("Rejection", value=REJECTION_EXAMPLE, response_only=True),
        ],
    )
    @action(detail=False, methods=["post"], url_path="preview", url_name="preview")
    def preview(self, request: Request) -> Response:
        body = CompositionRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        if data.get("hold_s") is not None:
            raise SpecError(
                "A preview holds nothing: leave hold_s out, or request the composition with "
                "hold_s to hold it.",
                field="hold_s",
            )
        tenant = self._tenant(data.get("tenant"), write=False)
        template = self._template(data.get("template"))
        spec = {**(template.spec if template else {}), **self._spec(data)}
        try:
            outcome = composition_preview(tenant=tenant, spec=spec)
        except ComposerError as exc:
            exc.field = _field(exc.field)
            raise
        return Response(plan_public(placement_as_dict(outcome), operator=is_operator(request.user)))

    @extend_schema(
        summary="Decompose a composition",
        description="Queues the job that unbinds and releases the devices; 202 with the job "
        "(`Location` is its URL). While the composition is still requested, placing or "
        "binding: 409 `composition_busy` (field `state`); when there is nothing to "
        "decompose (released, rejected): 409 `invalid_transition`. Read-only members get "
        "403; other tenants 404.",
        request=None,
        responses={
            202: OpenApiResponse(JobSerializer, description="The queued decompose job."),
            409: OpenApiResponse(ErrorSerializer, description="Busy, or nothing to decompose."),
        },
    )
    @action(detail=True, methods=["post"], url_path="decompose", url_name="decompose")
    def decompose(self, request: Request, pk: str | None = None) -> Response:
        composition = self.get_object()
        self._tenant_writable(composition.tenant)
        try:
            job = composition_decompose(
                composition=composition,
                actor=request.user,
                remote_addr=request.META.get("REMOTE_ADDR"),
            )
        except InvalidTransition as exc:
            composition.refresh_from_db(fields=["state"])
            if composition.state in BUSY_STATES:
                raise CompositionBusy(exc.message, field="state") from exc
            raise
        data = JobSerializer(job, context=self.get_serializer_context()).data
        return Response(data, status=status.HTTP_202_ACCEPTED, headers={"Location": data["url"]})

    @extend_schema(
        summary="Heal a degraded composition now",
        description="Queues the job that replaces the composition's lost devices from spares "
        "under its own rules (same kind, model, pool, latency ceiling and failure-domain "
        "policy; the host stays), unbinds the lost ones and makes it ready again; 202 with "
        "the job (`Location` is its URL). Works whether or not the composition opts in to "
        "self-heal; a heal already queued or running is returned. When no spare exists the "
        "job fails and the composition stays `degraded` with the reason. Not degraded: 409 "
        "`invalid_transition` (field `state`). Read-only members get 403; other tenants 404.",
        request=None,
        responses={
            202: OpenApiResponse(JobSerializer, description="The queued (or pending) heal job."),
            409: OpenApiResponse(ErrorSerializer, description="The composition is not degraded."),
        },
    )
    @action(detail=True, methods=["post"], url_path="heal", url_name="heal")
    def heal(self, request: Request, pk: str | None = None) -> Response:
        composition = self.get_object()
        self._tenant_writable(composition.tenant)
        job = heal_request(
            composition=composition,
            actor=request.user,
            remote_addr=request.META.get("REMOTE_ADDR"),
        )
        logger.info("composition %s heal requested via api as job %s", composition.pk, job.pk)
        data = JobSerializer(job, context=self.get_serializer_context()).data
        return Response(data, status=status.HTTP_202_ACCEPTED, headers={"Location": data["url"]})

"""Templates, quotas and compositions: the API through which tenants compose.

Every queryset starts from `for_user` (STYLE §8): outsiders get 404, read-only members 403
on writes. Composing and decomposing call the services and answer 202 with the job.

A request the fabric cannot satisfy now answers **422** `placement_rejected` (chosen over
a 202 in state `rejected`, so a client branches on the status, not on a field of a
success body). The composition is still kept, in state `rejected`, as the record of the
request; the 422 body carries its URL, the funnel and the nearest alternative, and an
idempotent retry answers the same 422.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db.models import OuterRef, Prefetch, QuerySet, Subquery
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.serializers import BaseSerializer

from composer.api.errors import CompositionBusy, ErrorSerializer, error_body
from composer.api.filters import CompositionFilterSet, QuotaFilterSet
from composer.api.serializers import (
    CompositionDetailSerializer,
    CompositionRequestSerializer,
    CompositionSerializer,
    JobSerializer,
    PlacementRejectedSerializer,
    PlanSerializer,
    QuotaSerializer,
    TemplateSerializer,
    plan_public,
)
from composer.choices import CompositionState
from composer.errors import ComposerError, InvalidTransition
from composer.models import (
    Allocation,
    Composition,
    Job,
    Membership,
    Quota,
    StateChange,
    Template,
    Tenant,
)
from composer.selectors.quotas import quota_usage
from composer.services.compositions import (
    COMPOSITION_TARGET,
    composition_decompose,
    composition_preview,
    composition_request,
    placement_as_dict,
)
from composer.services.heal import heal_request
from fabric.api.views import ReadOnlyViewSet
from fabric.permissions import is_operator

logger = logging.getLogger(__name__)

BUSY_STATES = {CompositionState.REQUESTED, CompositionState.PLACING, CompositionState.BINDING}
# Fields of the request body itself; every other field a service names is inside `spec`.
BODY_FIELDS = {"name", "tenant", "template", "host", "spec", "idempotency_key"}


class OperatorWrites(BasePermission):
    """Everyone signed in reads; only operators write. A member writing gets 403 on what it
    can see, and (through the 404 of `get_object`) 404 on what it cannot."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        if request.method in SAFE_METHODS or is_operator(request.user):
            return True
        # A detail write: decide once the object is found (or 404s).
        return (view.lookup_url_kwarg or view.lookup_field) in view.kwargs

    def has_object_permission(self, request: Request, view: Any, obj: Any) -> bool:
        return request.method in SAFE_METHODS or is_operator(request.user)


class WritableViewSet(
    mixins.CreateModelMixin, mixins.UpdateModelMixin, mixins.DestroyModelMixin, ReadOnlyViewSet
):
    """ReadOnlyViewSet (total order) plus create, update and delete."""


# --- templates ----------------------------------------------------------------------------

TEMPLATE_EXAMPLE = {
    "id": 2,
    "url": "https://composer.example/api/v1/templates/inference-2gpu-bigmem/",
    "name": "inference-2gpu-bigmem",
    "slug": "inference-2gpu-bigmem",
    "description": "2 GPUs and 1 TiB of CXL memory within 800 ns.",
    "spec": {
        "items": [{"kind": "gpu", "model": None, "count": 2, "minima": {}}],
        "memory_gib": 1024,
        "storage_tb": 0,
        "cores": 16,
        "host_memory_gib": 0,
        "host": None,
        "max_latency_ns": 800,
        "policy": "none",
        "same_switch": False,
        "critical": False,
        "self_heal": False,
    },
    "is_active": True,
    "updated_at": "2025-01-01T12:00:00Z",
}


@extend_schema_view(
    list=extend_schema(
        summary="List templates",
        description="Named request shapes. Tenant members see the active ones; operators all.",
        examples=[OpenApiExample("Templates", value=[TEMPLATE_EXAMPLE], response_only=True)],
    ),
    retrieve=extend_schema(summary="One template", description="By slug."),
    create=extend_schema(
        summary="Create a template (operators)",
        description="The spec is checked and stored normalised; a bad spec answers 400 "
        "(field `spec`, the message names the part). Tenant members get 403.",
        examples=[
            OpenApiExample(
                "Inference",
                request_only=True,
                value={k: TEMPLATE_EXAMPLE[k] for k in ("name", "slug", "description")}
                | {"spec": {"items": [{"kind": "gpu", "count": 2}], "memory_gib": 1024}},
            )
        ],
    ),
    update=extend_schema(summary="Replace a template (operators)"),
    partial_update=extend_schema(summary="Change a template (operators)"),
    destroy=extend_schema(
        summary="Delete a template (operators)",
        description="Compositions made from it keep their spec and lose the link.",
    ),
)
class TemplateViewSet(WritableViewSet):
    """Templates by slug; writes for operators only."""

    serializer_class = TemplateSerializer
    permission_classes = [OperatorWrites]
    lookup_field = "slug"
    lookup_value_regex = "[^/]+"

    def get_queryset(self) -> QuerySet[Template]:
        queryset = Template.objects.order_by("name", "pk")
        if not is_operator(self.request.user):
            queryset = queryset.filter(is_active=True)
        return queryset


# --- quotas -------------------------------------------------------------------------------


@extend_schema_view(
    list=extend_schema(
        summary="List quotas with current usage",
        description="Members see their tenants' quotas; operators every tenant's. `usage` is "
        "what the tenant's active compositions hold now. A null limit means no limit.",
        examples=[
            OpenApiExample(
                "Acme's GPUs",
                response_only=True,
                value=[
                    {
                        "id": 1,
                        "url": "https://composer.example/api/v1/quotas/1/",
                        "tenant": "acme",
                        "kind": "gpu",
                        "model": "",
                        "label": "GPU",
                        "max_count": 16,
                        "max_memory_gib": None,
                        "max_storage_tb": None,
                        "usage": {"count": 2, "memory_gib": 0, "storage_tb": 0.0},
                    }
                ],
            )
        ],
    ),
    retrieve=extend_schema(summary="One quota with its usage"),
    create=extend_schema(
        summary="Create a quota (operators)",
        description="One per tenant, kind and model. `max_memory_gib` only for kind "
        "`cxl_memory`, `max_storage_tb` only for `nvme`. Members get 403.",
        examples=[
            OpenApiExample(
                "GPU quota",
                request_only=True,
                value={"tenant": "acme", "kind": "gpu", "model": "", "max_count": 16},
            )
        ],
    ),
    update=extend_schema(summary="Replace a quota (operators)"),
    partial_update=extend_schema(summary="Change a quota (operators)"),
    destroy=extend_schema(summary="Delete a quota (operators)"),
)
class QuotaViewSet(WritableViewSet):
    """Quotas, scoped by `Quota.objects.for_user`; writes for operators only."""

    serializer_class = QuotaSerializer
    permission_classes = [OperatorWrites]
    filterset_class = QuotaFilterSet

    def get_queryset(self) -> QuerySet[Quota]:
        return (
            Quota.objects.for_user(self.request.user)
            .select_related("tenant")
            .order_by("tenant__name", "kind", "model", "pk")
        )

    def get_serializer(self, *args: Any, **kwargs: Any) -> BaseSerializer[Any]:
        instance = args[0] if args else None
        if instance is not None:
            quotas = instance if kwargs.get("many") else [instance]
            context = self.get_serializer_context()
            context["usage"] = quota_usage(quotas)
            kwargs["context"] = context
        return super().get_serializer(*args, **kwargs)


# --- compositions -------------------------------------------------------------------------

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
]
REJECTION_EXAMPLE = {
    "ok": False,
    "code": "no_capacity",
    "message": "No host can reach 8 free GPUs behind one switch.",
    "nearest": "6 of 8 GPUs fit behind one switch; relax 'same switch' or wait.",
    "funnel": [["kind/model/count", 64, 12], ["same switch", 12, 0]],
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


def _latest_job() -> Subquery:
    return Subquery(
        Job.objects.filter(target_type=COMPOSITION_TARGET, target_id=OuterRef("pk"))
        .order_by("-created_at", "-pk")
        .values("pk")[:1]
    )


def _field(name: str | None) -> str | None:
    """A service's field name as the request body names it."""
    if not name or name in BODY_FIELDS:
        return name
    return f"spec.{name}"


@extend_schema_view(
    list=extend_schema(
        summary="List compositions",
        description="Operators see every composition; members their tenants'. Filters: "
        "`state` (several allowed), `tenant` and `template` (slugs), `q` (name, host, "
        "template). `job` is the URL of the latest compose or decompose job.",
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
class CompositionViewSet(mixins.CreateModelMixin, ReadOnlyViewSet):
    """Compositions, scoped by `Composition.objects.for_user` (the one path, STYLE §8)."""

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
        if self.action in ("decompose", "heal"):
            return JobSerializer
        return CompositionDetailSerializer

    # -- who asks for whom --

    def _tenant(self, slug: str | None, *, write: bool) -> Tenant:
        """The tenant a request is for: named by `slug`, or the caller's only tenant.

        Operators act for any tenant and must name it. Members must belong to it; with
        `write`, read-only members get 403.
        """
        user = self.request.user
        if is_operator(user):
            if not slug:
                raise ValidationError({"tenant": ["Operators name the tenant (its slug)."]})
            tenant = Tenant.objects.filter(slug=slug, is_active=True).first()
            if tenant is None:
                raise ValidationError({"tenant": [f"There is no tenant {slug!r}."]})
            return tenant
        memberships = self._memberships()
        if slug:
            membership = next((m for m in memberships if m.tenant.slug == slug), None)
            if membership is None:
                raise ValidationError({"tenant": [f"You are not a member of a tenant {slug!r}."]})
        elif len(memberships) == 1:
            membership = memberships[0]
        elif not memberships:
            raise PermissionDenied("You belong to no tenant.")
        else:
            slugs = ", ".join(m.tenant.slug for m in memberships)
            raise ValidationError(
                {"tenant": [f"You belong to several tenants; name one: {slugs}."]}
            )
        if write and not membership.can_write:
            raise PermissionDenied(f"You have read-only access to {membership.tenant.name}.")
        return membership.tenant

    def _may_write_somewhere(self) -> None:
        if is_operator(self.request.user):
            return
        if not any(m.can_write for m in self._memberships()):
            raise PermissionDenied("Read-only members cannot compose.")

    def _memberships(self) -> list[Membership]:
        """The caller's memberships of active tenants, with their tenants: read once per
        request (a viewset instance serves one request), since a POST asks twice."""
        cached: list[Membership] | None = getattr(self, "_memberships_cache", None)
        if cached is None:
            user = self.request.user
            assert user.is_authenticated  # OperatorWrites lets no anonymous caller in
            cached = self._memberships_cache = list(
                Membership.objects.filter(user=user, tenant__is_active=True).select_related(
                    "tenant"
                )
            )
        return cached

    def _template(self, slug: str | None) -> Template | None:
        if not slug:
            return None
        template = Template.objects.filter(slug=slug, is_active=True).first()
        if template is None:
            raise ValidationError({"template": [f"There is no active template {slug!r}."]})
        return template

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
        "or further along) with `job`, the URL of its compose job; `Location` is the "
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
        try:
            composition = composition_request(
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
        "alternative). Bad input and quotas answer as a request does. Read-only members may "
        "preview.",
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

    def _tenant_writable(self, tenant: Tenant) -> None:
        user = self.request.user
        if is_operator(user):
            return
        assert user.is_authenticated  # OperatorWrites lets no anonymous caller in
        membership = Membership.objects.filter(user=user, tenant=tenant).first()
        if membership is None or not membership.can_write:
            raise PermissionDenied(f"You have read-only access to {tenant.name}.")

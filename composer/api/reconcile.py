"""The reconciler in the API (operators only): its runs, their findings, and "reconcile now".

GET /api/v1/reconcile/runs/ lists the runs (newest first), each with its findings;
GET /api/v1/reconcile/runs/{id}/ is one; POST /api/v1/reconcile/runs/ (no body) queues a
run and answers 202 with it (who asked and from where are on the row: the audit). Tenant
members get 404, like every fabric resource: fabric internals are not theirs to see.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.db.models import Prefetch, QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from composer.models import ReconcileFinding, ReconcileRun
from composer.services.reconcile import reconcile_request
from fabric.api.permissions import IsOperatorOr404

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)


class ReconcileFindingSerializer(serializers.ModelSerializer):
    """One disagreement a run found, what it did, and how that ended."""

    manager = serializers.CharField(source="manager.name", allow_null=True, default=None)
    device = serializers.CharField(source="device.name", allow_null=True, default=None)
    host = serializers.CharField(source="host.name", allow_null=True, default=None)
    composition = serializers.IntegerField(source="composition_id", allow_null=True)

    class Meta:
        model = ReconcileFinding
        fields = [
            "id",
            "kind",
            "outcome",
            "manager",
            "device",
            "host",
            "composition",
            "binding_id",
            "action",
            "detail",
            "at",
        ]
        read_only_fields = fields


class ReconcileRunSerializer(serializers.HyperlinkedModelSerializer):
    """A reconcile run: when, why (schedule or operator), how it ended, what it found."""

    id = serializers.IntegerField(read_only=True)
    url = serializers.HyperlinkedIdentityField(view_name="api:reconcile_run_detail")
    requested_by: serializers.SlugRelatedField[User] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    findings = ReconcileFindingSerializer(many=True, read_only=True)

    class Meta:
        model = ReconcileRun
        fields = [
            "id",
            "url",
            "trigger",
            "status",
            "requested_by",
            "created_at",
            "started_at",
            "finished_at",
            "repeats",
            "managers",
            "error",
            "findings",
        ]
        read_only_fields = fields


@extend_schema_view(
    list=extend_schema(
        summary="List reconcile runs (operators)",
        description=(
            "The reconciler's runs, newest first, each with its findings: bindings on the "
            "fabric nothing claims (unbound), bindings missing (bound again), bindings still "
            "to undo, unfinished compositions, health and allocated-memory corrections. "
            "Consecutive scheduled runs that repaired nothing and found the same share one "
            "row (`repeats`)."
        ),
    ),
    retrieve=extend_schema(summary="One reconcile run (operators)"),
    create=extend_schema(
        summary="Reconcile now (operators)",
        description="Queues a run at once; answers 202 with it. Poll its URL for the outcome.",
        request=None,  # nothing to send: a run compares every fabric manager
        responses={202: ReconcileRunSerializer},
    ),
)
class ReconcileRunViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    """The reconciler's runs, and POST to start one."""

    permission_classes = [IsOperatorOr404]
    serializer_class = ReconcileRunSerializer

    def get_queryset(self) -> QuerySet[ReconcileRun]:
        findings = ReconcileFinding.objects.select_related("manager", "device", "host")
        return (
            ReconcileRun.objects.select_related("requested_by")
            .prefetch_related(Prefetch("findings", queryset=findings.order_by("pk")))
            .order_by("-created_at", "-id")
        )

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        run = reconcile_request(
            requested_by=request.user, remote_addr=request.META.get("REMOTE_ADDR") or None
        )
        logger.info("reconcile run %s requested user_id=%s", run.pk, request.user.pk)
        run = self.get_queryset().get(pk=run.pk)
        data = self.get_serializer(run).data
        return Response(data, status=status.HTTP_202_ACCEPTED, headers={"Location": data["url"]})

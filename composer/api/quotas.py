"""Quotas: each tenant's limits with what its compositions hold now (operators write)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_view
from rest_framework.serializers import BaseSerializer

from composer.api.filters import QuotaFilterSet
from composer.api.serializers import QuotaSerializer
from composer.api.viewsets import OperatorWrites, WritableViewSet
from composer.models import Quota
from composer.selectors.quotas import quota_usage


@extend_schema_view(
    list=extend_schema(
        summary="List quotas with current usage",
        description="Members see their tenants' quotas; operators every tenant's. `usage` is "
        "what the tenant's active compositions hold now. A null limit means no limit.",
        examples=[
            OpenApiExample(
                "Acme's GPUs",
                response_only=True,
                value={
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
                },
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
    """Each tenant's quotas with their use: members read their tenants', operators every
    tenant's and write them."""

    # The queryset starts from the caller's own quotas (Quota.objects.for_user).

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

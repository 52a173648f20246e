"""Templates: named request shapes, read by everyone signed in, written by operators."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_view

from composer.api.filters import TemplateFilterSet
from composer.api.serializers import TemplateSerializer
from composer.api.viewsets import OperatorWrites, WritableViewSet
from composer.models import Template
from fabric.permissions import is_operator

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
        description="Named request shapes, by name unless `ordering` says otherwise. Tenant "
        "members see the active ones; operators all. Filters: `q` (name, slug, description), "
        "`is_active`.",
        examples=[OpenApiExample("Templates", value=TEMPLATE_EXAMPLE, response_only=True)],
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
    filterset_class = TemplateFilterSet
    permission_classes = [OperatorWrites]
    lookup_field = "slug"
    lookup_value_regex = "[^/]+"

    def get_queryset(self) -> QuerySet[Template]:
        queryset = Template.objects.order_by("name", "pk")
        if not is_operator(self.request.user):
            queryset = queryset.filter(is_active=True)
        return queryset

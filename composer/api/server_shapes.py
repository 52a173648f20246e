"""/api/v1/server-shapes/: the fixed-ratio server catalogue the counterfactual replays onto.

Operators only (tenant members get 404, as for the fabric's resources); every write is
audited like a template's (`composer.api.viewsets.WritableViewSet`).
"""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_view
from rest_framework import serializers

from composer.api.viewsets import WritableViewSet
from composer.models import ServerShape
from fabric.api.fields import StrictModelSerializerMixin
from fabric.api.permissions import IsOperatorOr404
from fabric.validators import text_problem

EXAMPLE = {
    "id": 3,
    "url": "https://composer.example/api/v1/server-shapes/3/",
    "name": "PAI V100 8x 96c 512 GiB",
    "gpu_model": "V100",
    "gpus": 8,
    "cores": 96,
    "memory_gib": 512,
    "machines": 59,
    "source": "Alibaba PAI trace 2020 (pai_machine_spec.csv)",
    "updated_at": "2026-12-01T12:00:00Z",
}


class ServerShapeSerializer(StrictModelSerializerMixin, serializers.HyperlinkedModelSerializer):
    """A fixed-ratio server: GPUs, cores and memory in one box. `gpu_model` blank takes GPUs
    of any model; a name takes GPUs whose model contains it."""

    id = serializers.IntegerField(read_only=True)
    url = serializers.HyperlinkedIdentityField(view_name="api:server_shape_detail")

    class Meta:
        model = ServerShape
        fields = [
            "id",
            "url",
            "name",
            "gpu_model",
            "gpus",
            "cores",
            "memory_gib",
            "machines",
            "source",
            "updated_at",
        ]
        read_only_fields = ["id", "url", "updated_at"]

    def _printable(self, value: str) -> str:
        problem = text_problem(value)
        if problem is not None:
            raise serializers.ValidationError(problem)
        return value

    def validate_name(self, value: str) -> str:
        return self._printable(value)

    def validate_gpu_model(self, value: str) -> str:
        return self._printable(value)

    def validate_source(self, value: str) -> str:
        return self._printable(value)


@extend_schema_view(
    list=extend_schema(
        summary="List server shapes (operators)",
        description="The fixed-ratio server shapes the counterfactual may replay onto, "
        "smallest first.",
        examples=[OpenApiExample("Server shapes", value=EXAMPLE, response_only=True)],
    ),
    retrieve=extend_schema(summary="One server shape (operators)"),
    create=extend_schema(
        summary="Add a server shape (operators)",
        description="A bad value answers 400 naming the field; a name in use answers 400 on "
        "`name`.",
        examples=[
            OpenApiExample(
                "An 8-GPU server",
                request_only=True,
                value={"name": "DGX H100", "gpu_model": "H100", "gpus": 8, "cores": 112}
                | {"memory_gib": 2048},
            )
        ],
    ),
    update=extend_schema(summary="Replace a server shape (operators)"),
    partial_update=extend_schema(summary="Change a server shape (operators)"),
    destroy=extend_schema(summary="Delete a server shape (operators)"),
)
class ServerShapeViewSet(WritableViewSet):
    """The catalogue; operators only, every write audited."""

    serializer_class = ServerShapeSerializer
    permission_classes = [IsOperatorOr404]

    def get_queryset(self) -> QuerySet[ServerShape]:
        return ServerShape.objects.order_by("gpus", "cores", "memory_gib", "name", "pk")

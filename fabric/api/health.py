"""A device's health samples (operators): `GET /api/v1/devices/{id}/health/`."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import (
    OpenApiExample,
    extend_schema,
)
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from fabric.api.permissions import IsOperatorOr404
from fabric.api.serializers import NamedRefSerializer
from fabric.models import Device, HealthSample
from fabric.services.alerts import (
    health_samples_for,
)

SAMPLE_LIMIT_DEFAULT = 100
SAMPLE_LIMIT_MAX = 1000


class HealthSampleSerializer(serializers.ModelSerializer):
    """One health sample: health, the named metrics (null when not reported), the rest."""

    class Meta:
        model = HealthSample
        fields = [
            "id",
            "taken_at",
            "health",
            "state",
            "detail",
            "temperature_c",
            "correctable_errors",
            "uncorrectable_errors",
            "poison_count",
            "link_errors",
            "link_retrains",
            "link_width",
            "link_speed_gts",
            "power_state",
            "utilisation_pct",
            "metrics",
        ]
        read_only_fields = fields


class DeviceHealthSerializer(serializers.Serializer):
    """A window of one device's samples, newest first."""

    device = NamedRefSerializer(read_only=True)
    count = serializers.IntegerField(read_only=True, help_text="Samples in `results`.")
    truncated = serializers.BooleanField(
        read_only=True, help_text="More samples match: ask again with `until` = the oldest."
    )
    results = HealthSampleSerializer(many=True, read_only=True)


class HealthQuery(serializers.Serializer):
    """`?since=&until=&limit=`: the window of samples, newest first."""

    since = serializers.DateTimeField(required=False, help_text="Taken at or after (ISO 8601).")
    until = serializers.DateTimeField(required=False, help_text="Taken before (ISO 8601).")
    limit = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=SAMPLE_LIMIT_MAX,
        default=SAMPLE_LIMIT_DEFAULT,
        help_text=f"At most this many, newest first (default {SAMPLE_LIMIT_DEFAULT}).",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        since, until = attrs.get("since"), attrs.get("until")
        if since is not None and until is not None and since >= until:
            raise serializers.ValidationError({"until": "Must be later than `since`."})
        return attrs


class DeviceHealthActions:
    """`GET /api/v1/devices/{id}/health/`: the device's samples (operators)."""

    @extend_schema(
        summary="A device's health samples (operators)",
        operation_id="device_health",
        parameters=[HealthQuery],
        responses={200: DeviceHealthSerializer},
        description=(
            "Newest first, at most `limit`; not paginated: a time window. For older samples "
            "ask again with `until` set to the oldest `taken_at`. Samples are kept for "
            "COMPOSER_HEALTH_RETENTION_HOURS; a healthy device has one per sample interval, "
            "an unwell one one per poll."
        ),
        examples=[
            OpenApiExample(
                "A GPU",
                response_only=True,
                value={
                    "device": {"id": 12, "name": "gpu-a-01-3"},
                    "count": 1,
                    "truncated": True,
                    "results": [
                        {
                            "id": 9001,
                            "taken_at": "2026-11-29T10:15:02Z",
                            "health": "warning",
                            "state": "enabled",
                            "detail": "degraded (injected fault)",
                            "temperature_c": 74.5,
                            "correctable_errors": 124.0,
                            "uncorrectable_errors": 0.0,
                            "poison_count": None,
                            "link_errors": None,
                            "link_retrains": None,
                            "link_width": None,
                            "link_speed_gts": None,
                            "power_state": "on",
                            "utilisation_pct": 81.2,
                            "metrics": {"power_w": 290.1},
                        }
                    ],
                },
            )
        ],
    )
    @action(
        detail=True,
        methods=["get"],
        url_path="health",
        url_name="health",
        permission_classes=[IsOperatorOr404],
        filterset_class=None,
        pagination_class=None,
    )
    def health(self, request: Request, pk: str | None = None) -> Response:
        device: Device = self.get_object()  # type: ignore[attr-defined]
        query = HealthQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        data = query.validated_data
        limit = data["limit"]
        rows = list(
            health_samples_for(
                target_type="device",
                target_id=device.pk,
                since=data.get("since"),
                until=data.get("until"),
            )[: limit + 1]
        )
        body = {
            "device": {"id": device.pk, "name": device.name},
            "count": min(len(rows), limit),
            "truncated": len(rows) > limit,
            "results": HealthSampleSerializer(rows[:limit], many=True).data,
        }
        return Response(body)

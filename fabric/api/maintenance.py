"""The maintenance action of devices, switches and enclosures (operators)."""

from __future__ import annotations

from drf_spectacular.utils import (
    extend_schema,
)
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from fabric.api.fields import StrictBooleanField, StrictCharField
from fabric.api.permissions import IsOperatorOr404
from fabric.models import Device, Enclosure, Switch
from fabric.services.maintenance import maintenance_dependents, maintenance_set


class MaintenanceInput(serializers.Serializer):
    """POST body of the maintenance action."""

    on = StrictBooleanField(help_text="true: into maintenance; false: back in service.")
    reason = StrictCharField(
        required=False, allow_blank=True, max_length=200, help_text="Kept in the audit trail."
    )


class MaintenanceOutput(serializers.Serializer):
    """The element's state after the call and what depends on it."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    state = serializers.CharField()
    changed = serializers.BooleanField(help_text="False when it already was in that state.")
    devices = serializers.ListField(
        child=serializers.DictField(), help_text="Devices that lose something without it."
    )
    hosts = serializers.ListField(child=serializers.DictField())
    compositions = serializers.ListField(child=serializers.JSONField())
    tenants = serializers.ListField(child=serializers.JSONField())
    held_count = serializers.IntegerField(help_text="Of `devices`, how many a composition holds.")


class MaintenanceActions:
    """`GET|POST .../{id}/maintenance/` on devices, switches and enclosures (operators)."""

    @extend_schema(
        summary="Maintenance: what depends on it (GET), put in or take out (POST) (operators)",
        request=MaintenanceInput,
        responses={200: MaintenanceOutput},
        description=(
            "In maintenance, what runs there keeps running but nothing new is placed on it "
            "(nor, for a switch, routed through it). A device goes in from free, bound or "
            "failed (not while reserved by a composition being built). GET lists what "
            "depends on it without changing anything. Idempotent: `changed` is false when it "
            "already was in the asked state."
        ),
    )
    @action(
        detail=True,
        methods=["get", "post"],
        url_path="maintenance",
        url_name="maintenance",
        permission_classes=[IsOperatorOr404],
        filterset_class=None,
        pagination_class=None,
    )
    def maintenance(self, request: Request, pk: str | None = None) -> Response:
        target: Device | Switch | Enclosure = self.get_object()  # type: ignore[attr-defined]
        changed = False
        if request.method == "POST":
            body = MaintenanceInput(data=request.data)
            body.is_valid(raise_exception=True)
            changed = maintenance_set(
                target=target,
                on=body.validated_data["on"],
                reason=body.validated_data.get("reason", ""),
                actor=request.user,
                remote_addr=request.META.get("REMOTE_ADDR") or None,
                source="api",
            )
        dependents = maintenance_dependents(target=target, user=request.user)
        return Response(
            {
                "id": target.pk,
                "name": target.name,
                "state": target.state,
                "changed": changed,
                "devices": dependents.devices,
                "hosts": dependents.hosts,
                "compositions": dependents.compositions,
                "tenants": dependents.tenants,
                "held_count": dependents.held_count,
            },
            status=status.HTTP_200_OK,
        )

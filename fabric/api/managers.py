"""Fabric managers in the API (operators): list, read, add, change, delete, test connection.

The serializers parse JSON types only; the rules (and their words) are those of the pages,
in `fabric.services.managers`. Credentials are write-only: `username`, `password`, `token`
are accepted and never returned, `has_credentials` says whether some are stored. Tenant
members get 404 for every route, as for every fabric internal.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.exceptions import APIException
from rest_framework.request import Request
from rest_framework.response import Response

from fabric import filters
from fabric.api.fields import StrictBooleanField, StrictCharField
from fabric.api.permissions import IsOperatorOr404
from fabric.api.serializers import FabricManagerSerializer
from fabric.api.views import OperatorViewSet
from fabric.models import FabricManager
from fabric.services.managers import (
    CredentialsInput,
    ManagerInput,
    ManagerInUse,
    manager_create,
    manager_delete,
    manager_test_connection,
    manager_update,
)

WRITE_ONLY_NOTE = (
    "`username` and `password`, or `token`, are the credentials the console signs in to the "
    "manager with: stored encrypted, never returned (`has_credentials` says whether some "
    "are stored). Leave them out to keep the stored ones, unless `endpoint` moves to another "
    "scheme, host or port: then enter them again; `clear_credentials: true` removes "
    "them. TLS: `verify_tls` (default true) and `ca_bundle` (a CA file's full path on the "
    "console's server). A password inside `endpoint`, or a secret-looking key at any depth "
    "of `settings`, is refused: secrets go in the credentials."
)


class ManagerConflict(APIException):
    """The manager cannot be deleted now (bound devices, compositions); 409."""

    status_code = status.HTTP_409_CONFLICT
    default_code = "manager_in_use"
    default_detail = "The fabric manager is in use."


class FabricManagerWriteSerializer(serializers.Serializer):
    """The body of a create (POST), a replace (PUT) or a change (PATCH)."""

    name = StrictCharField(max_length=100)
    driver = StrictCharField(max_length=40, help_text="A registered driver, e.g. `redfish`.")
    endpoint = StrictCharField(max_length=300, required=False, allow_blank=True)
    settings = serializers.JSONField(
        required=False, help_text="The driver's options, a JSON object (no secrets)."
    )
    verify_tls = StrictBooleanField(required=False)
    ca_bundle = StrictCharField(max_length=500, required=False, allow_blank=True)
    is_enabled = StrictBooleanField(required=False)
    health_poll_interval_s = serializers.IntegerField(
        required=False,
        min_value=1,
        error_messages={"min_value": "The interval must be at least 1 second."},
    )
    username = StrictCharField(required=False, allow_blank=True, write_only=True)
    password = StrictCharField(
        required=False, allow_blank=True, write_only=True, trim_whitespace=False
    )
    token = StrictCharField(
        required=False, allow_blank=True, write_only=True, trim_whitespace=False
    )
    clear_credentials = StrictBooleanField(required=False, write_only=True)

    def manager_input(self, *, instance: FabricManager | None) -> ManagerInput:
        """The validated body over what `instance` holds (a PATCH changes only what it names)."""
        data = self.validated_data
        defaults: dict[str, Any] = (
            asdict(ManagerInput.of(instance))
            if instance is not None
            else {
                "endpoint": "",
                "settings": {},
                "verify_tls": True,
                "ca_bundle": "",
                "is_enabled": True,
                "health_poll_interval_s": 30,
            }
        )
        names = {f.name for f in fields(ManagerInput)}
        return ManagerInput(**{**defaults, **{k: v for k, v in data.items() if k in names}})

    def credentials_input(self) -> CredentialsInput:
        data = self.validated_data
        return CredentialsInput(
            username=data.get("username", "").strip(),
            password=data.get("password", ""),
            token=data.get("token", ""),
            clear=bool(data.get("clear_credentials", False)),
        )


class ProbeSerializer(serializers.Serializer):
    """What a connection test found, or why it failed."""

    ok = serializers.BooleanField()
    elapsed_ms = serializers.IntegerField()
    service = serializers.CharField(help_text="What answered, in the manager's words.")
    counts = serializers.DictField(
        child=serializers.IntegerField(), help_text="How many of each kind it reports."
    )
    composition_methods = serializers.ListField(child=serializers.CharField())
    notes = serializers.ListField(child=serializers.CharField())
    error = serializers.CharField(help_text="Why it failed; empty when `ok`.")


def _origin(request: Request) -> dict[str, Any]:
    return {
        "actor": request.user,
        "source": "api",
        "remote_addr": request.META.get("REMOTE_ADDR") or None,
    }


@extend_schema_view(
    list=extend_schema(
        summary="List fabric managers (operators)",
        description=(
            "Values of settings keys that look secret (containing password, secret, token, "
            "key, credential, private) and passwords in the endpoint URL are masked; "
            "credentials are never returned."
        ),
    ),
    retrieve=extend_schema(summary="One fabric manager (operators)"),
    create=extend_schema(
        summary="Add a fabric manager (operators)",
        description=WRITE_ONLY_NOTE,
        request=FabricManagerWriteSerializer,
        responses={201: FabricManagerSerializer},
        examples=[
            OpenApiExample(
                "A Redfish manager",
                request_only=True,
                value={
                    "name": "fm-rack-a",
                    "driver": "redfish",
                    "endpoint": "https://fm-rack-a.example:443",
                    "verify_tls": True,
                    "username": "composer",
                    "password": "********",
                },
            )
        ],
    ),
    update=extend_schema(
        summary="Replace a fabric manager's fields (operators)",
        description=WRITE_ONLY_NOTE,
        request=FabricManagerWriteSerializer,
        responses={200: FabricManagerSerializer},
    ),
    partial_update=extend_schema(
        summary="Change some of a fabric manager's fields (operators)",
        description=WRITE_ONLY_NOTE + " `is_enabled: false` disables it: no syncs, no polls.",
        request=FabricManagerWriteSerializer,
        responses={200: FabricManagerSerializer},
    ),
    destroy=extend_schema(
        summary="Delete a fabric manager (operators)",
        responses={
            204: None,
            409: OpenApiResponse(
                # The API's one error shape (a component every error response refers to).
                response={"$ref": "#/components/schemas/Error"},
                description="Still in use (`manager_in_use`): the detail says what holds it.",
            ),
        },
        description=(
            "Removes the manager and the inventory it reported. Refused with 409 "
            "(`manager_in_use`) while any of its devices is bound or held by a composition, "
            "or while records of past compositions refer to its devices; disable it instead "
            "(PATCH `is_enabled: false`)."
        ),
    ),
)
class FabricManagerViewSet(
    mixins.CreateModelMixin, mixins.UpdateModelMixin, mixins.DestroyModelMixin, OperatorViewSet
):
    """Fabric managers; an inventory sync is POST .../fabric-managers/{id}/sync/."""

    queryset = FabricManager.objects.order_by("name", "pk")
    filterset_class = filters.FabricManagerFilterSet

    def get_serializer_class(self) -> type[serializers.BaseSerializer[Any]]:
        if self.action in ("create", "update", "partial_update"):
            return FabricManagerWriteSerializer
        return FabricManagerSerializer

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        body = FabricManagerWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        manager = manager_create(
            data=body.manager_input(instance=None),
            credentials=body.credentials_input(),
            **_origin(request),
        )
        data = FabricManagerSerializer(manager, context=self.get_serializer_context()).data
        return Response(data, status=status.HTTP_201_CREATED, headers={"Location": data["url"]})

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        manager: FabricManager = self.get_object()
        partial = bool(kwargs.get("partial"))
        body = FabricManagerWriteSerializer(data=request.data, partial=partial)
        body.is_valid(raise_exception=True)
        manager_update(
            manager=manager,
            data=body.manager_input(instance=manager),
            credentials=body.credentials_input(),
            **_origin(request),
        )
        return Response(
            FabricManagerSerializer(manager, context=self.get_serializer_context()).data
        )

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        manager: FabricManager = self.get_object()
        try:
            manager_delete(manager=manager, **_origin(request))
        except ManagerInUse as exc:
            raise ManagerConflict(exc.message) from None
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="Test the connection to a fabric manager (operators)",
        description=(
            "Signs in with the stored credentials and reads what the manager is and holds, "
            "within the console's probe time limit. Always 200: `ok` false and `error` say "
            "exactly why it failed (unreachable, refused credentials, a certificate that "
            "does not verify, credentials that cannot be decrypted)."
        ),
        request=None,
        responses={200: ProbeSerializer},
    )
    @action(
        detail=True,
        methods=["post"],
        url_path="test-connection",
        url_name="test_connection",
        permission_classes=[IsOperatorOr404],
        filterset_class=None,
        pagination_class=None,
    )
    def test_connection(self, request: Request, pk: str | None = None) -> Response:
        manager: FabricManager = self.get_object()
        outcome = manager_test_connection(manager=manager, **_origin(request))
        return Response(
            ProbeSerializer(
                {
                    "ok": outcome.ok,
                    "elapsed_ms": outcome.elapsed_ms,
                    "service": outcome.service,
                    "counts": dict(outcome.counts),
                    "composition_methods": list(outcome.composition_methods),
                    "notes": list(outcome.notes),
                    "error": outcome.error,
                }
            ).data
        )

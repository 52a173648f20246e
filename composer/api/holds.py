"""The actions on a held composition: apply (compose it) and release (give its devices back).

A hold is made by `POST /compositions/` with `hold_s` (composer.api.compositions); these
two end it. Both call `composer.services.holds`; a composition that is not held answers
409 `invalid_transition` (field `state`). Read-only members get 403, other tenants 404.
"""

from __future__ import annotations

import logging

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from composer.api.errors import ErrorSerializer
from composer.api.serializers import CompositionDetailSerializer, JobSerializer
from composer.models import Composition, Membership, Tenant
from composer.services.holds import composition_hold_apply, composition_hold_release
from fabric.permissions import is_operator

logger = logging.getLogger(__name__)

__all__ = ["CompositionHoldActions"]

NOT_HELD = OpenApiResponse(ErrorSerializer, description="The composition is not held.")


class CompositionHoldActions(viewsets.GenericViewSet[Composition]):
    """Apply and release, for the compositions viewset; and the write check its actions
    share."""

    def _tenant_writable(self, tenant: Tenant) -> None:
        """PermissionDenied unless the caller may change `tenant`'s compositions."""
        user = self.request.user
        if is_operator(user):
            return
        assert user.is_authenticated  # OperatorWrites lets no anonymous caller in
        membership = Membership.objects.filter(user=user, tenant=tenant).first()
        if membership is None or not membership.can_write:
            raise PermissionDenied(f"You have read-only access to {tenant.name}.")

    @extend_schema(
        summary="Apply a hold: compose the held devices",
        description="The held composition goes on to `placing` with the devices it holds, "
        "and its compose job is queued; 202 with the job (`Location` is its URL). Not held "
        "(or the hold lapsed): 409 `invalid_transition`.",
        request=None,
        responses={
            202: OpenApiResponse(JobSerializer, description="The compose job."),
            409: NOT_HELD,
        },
    )
    @action(detail=True, methods=["post"], url_path="apply", url_name="apply")
    def apply(self, request: Request, pk: str | None = None) -> Response:
        composition = self.get_object()
        self._tenant_writable(composition.tenant)
        job = composition_hold_apply(
            composition=composition, actor=request.user, remote_addr=request.META.get("REMOTE_ADDR")
        )
        logger.info("composition %s hold applied via api as job %s", composition.pk, job.pk)
        data = JobSerializer(job, context=self.get_serializer_context()).data
        return Response(data, status=status.HTTP_202_ACCEPTED, headers={"Location": data["url"]})

    @extend_schema(
        summary="Release a hold",
        description="The held devices are given back at once and the composition is "
        "`released`; 200 with it. Not held: 409 `invalid_transition`.",
        request=None,
        responses={200: CompositionDetailSerializer, 409: NOT_HELD},
    )
    @action(detail=True, methods=["post"], url_path="release", url_name="release")
    def release(self, request: Request, pk: str | None = None) -> Response:
        composition = self.get_object()
        self._tenant_writable(composition.tenant)
        composition_hold_release(
            composition=composition, actor=request.user, remote_addr=request.META.get("REMOTE_ADDR")
        )
        fresh = self.get_queryset().get(pk=composition.pk)
        return Response(
            CompositionDetailSerializer(fresh, context=self.get_serializer_context()).data
        )

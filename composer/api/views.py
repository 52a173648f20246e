"""Composer's endpoints: jobs, the token exchange, inventory sync, and the API's edges.

The sync action lives here rather than in fabric.api because it creates a composer `Job`,
and fabric never imports composer.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.contrib.auth import authenticate
from django.db.models import QuerySet
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.generics import GenericAPIView
from rest_framework.permissions import AllowAny, BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle
from rest_framework.views import APIView

from composer.api.errors import ErrorSerializer, InvalidCredentials
from composer.api.filters import JobFilterSet
from composer.api.serializers import (
    JobDetailSerializer,
    JobSerializer,
    TokenRequestSerializer,
    TokenSerializer,
)
from composer.models import ApiToken, Job
from composer.services.api_tokens import api_token_issue, api_token_revoke
from composer.services.jobs import inventory_sync_request
from fabric.api.permissions import IsOperatorOr404
from fabric.api.views import ReadOnlyViewSet
from fabric.models import FabricManager

logger = logging.getLogger(__name__)


@extend_schema_view(
    list=extend_schema(
        summary="List jobs",
        description=(
            "Jobs the caller may see, newest first unless `ordering` says otherwise: "
            "operators see every job; tenant members their tenants' jobs (fabric work such as "
            "inventory sync has no tenant and is operators' only)."
        ),
    ),
    retrieve=extend_schema(
        summary="One job with its log",
        description=(
            "Progress, status, error and the log, oldest line first: operators read every "
            "captured line, members of the job's tenant the lines about their job."
        ),
    ),
)
class JobViewSet(ReadOnlyViewSet):
    """Jobs the caller may see: operators every job, members their tenants'."""

    # The queryset starts from Job.objects.for_user, the one path to the rows.

    filterset_class = JobFilterSet

    def get_queryset(self) -> QuerySet[Job]:
        # A job's log is read by the serializer through composer.selectors.jobs.job_log,
        # in the caller's words.
        return (
            Job.objects.for_user(self.request.user)
            .select_related("tenant", "requested_by")
            .order_by("-created_at", "-pk")
        )

    def get_serializer_class(self) -> type[BaseSerializer[Any]]:
        return JobDetailSerializer if self.action == "retrieve" else JobSerializer


@extend_schema(
    summary="Start an inventory sync (operators)",
    description=(
        "Queues a job that reads the fabric manager's inventory and diffs it into the tables. "
        "Answers 202 with the job; follow its `url` (also in the `Location` header) for "
        "progress and log. While a sync of the same manager is queued or running, that job "
        "is returned instead of a second one. A disabled manager answers 400 (field "
        "`manager`). Tenant members get 404."
    ),
    request=None,
    responses={
        202: OpenApiResponse(JobSerializer, description="The queued job."),
        400: OpenApiResponse(
            ErrorSerializer, description="The manager is disabled (field `manager`)."
        ),
    },
)
class FabricManagerSyncView(GenericAPIView):
    """POST /api/v1/fabric-managers/{id}/sync/ -> 202 and the queued job."""

    queryset = FabricManager.objects.all()
    serializer_class = JobSerializer
    permission_classes = [IsOperatorOr404]

    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        manager = self.get_object()
        job = inventory_sync_request(manager=manager, requested_by=request.user)
        logger.info(
            "inventory sync requested manager_id=%s job_id=%s user_id=%s",
            manager.pk,
            job.pk,
            request.user.pk,
        )
        data = JobSerializer(job, context=self.get_serializer_context()).data
        return Response(data, status=status.HTTP_202_ACCEPTED, headers={"Location": data["url"]})


class AuthTokenThrottle(SimpleRateThrottle):
    """Token requests per client address: slows password guessing without bothering scripts.

    The counters live in the shared cache (Redis). When it cannot be reached the request is
    let through with a warning (fails open): a token must still be obtainable during a Redis
    outage, and a minute without the limit costs less than an API nobody can sign in to.
    """

    scope = "auth_token"
    rate = "30/min"

    def allow_request(self, request: Request, view: APIView) -> bool:
        try:
            return bool(super().allow_request(request, view))
        except Exception as exc:  # redis-py raises ConnectionError, TimeoutError, ...
            logger.warning(
                "token throttle skipped: the cache is unreachable (%s: %s)",
                type(exc).__name__,
                exc,
            )
            return True

    def get_cache_key(self, request: Request, view: APIView) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


@extend_schema_view(
    post=extend_schema(
        summary="Obtain an API token",
        description=(
            "Exchanges a username and password for a new API token, shown this once (only "
            "its digest is kept), working until revoked or, with `expires_in_days`, until "
            "`expires_at`. Send it as `Authorization: Token <token>`. Each call issues "
            "another, so that each script keeps its own; a user holds at most "
            "`COMPOSER_API_TOKENS_PER_USER` (10), and one more revokes the least recently "
            "used. Wrong credentials answer 400 with code `invalid_credentials`; more than 30 "
            "attempts a minute from one address answer 429."
        ),
        request=TokenRequestSerializer,
        responses={
            200: TokenSerializer,
            400: OpenApiResponse(ErrorSerializer, description="Missing or wrong credentials."),
            429: OpenApiResponse(ErrorSerializer, description="Too many attempts."),
        },
        examples=[
            OpenApiExample(
                "Credentials",
                request_only=True,
                value={
                    "username": "alice",
                    "password": "...",
                    "name": "nightly-report",
                    "expires_in_days": 90,
                },
            ),
            OpenApiExample(
                "Token",
                response_only=True,
                status_codes=["200"],
                value={
                    "id": 7,
                    "name": "nightly-report",
                    "expires_at": "2027-03-05T09:00:00Z",
                    "token": "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b",
                },
            ),
        ],
        auth=[],
    ),
    delete=extend_schema(
        summary="Revoke your API token",
        description=(
            "Revokes the token the request is signed with (with a console session: every "
            "token of the user); requests that send it answer 401 from then on."
        ),
        request=None,
        responses={204: OpenApiResponse(description="Revoked (or there was none).")},
    ),
)
class AuthTokenView(GenericAPIView):
    """POST credentials for a token; DELETE to revoke the caller's token."""

    serializer_class = TokenRequestSerializer

    def get_permissions(self) -> list[BasePermission]:
        if self.request.method == "POST":
            return [AllowAny()]
        return [IsAuthenticated()]

    def get_throttles(self) -> list[BaseThrottle]:
        return [AuthTokenThrottle()] if self.request.method == "POST" else []

    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        user = authenticate(
            request._request,
            username=serializer.validated_data["username"],
            password=serializer.validated_data["password"],
        )
        # authenticate() already refuses inactive users (ModelBackend.user_can_authenticate).
        if user is None:
            raise InvalidCredentials()
        days = serializer.validated_data.get("expires_in_days")
        issued = api_token_issue(
            user=user,
            remote_addr=request.META.get("REMOTE_ADDR") or None,
            name=serializer.validated_data.get("name", ""),
            lifetime=timedelta(days=days) if days else None,
        )
        token = issued.token
        body = {
            "id": token.pk,
            "name": token.name,
            "expires_at": token.expires_at,
            "token": issued.key,
        }
        # The key is shown this once: no cache along the way may keep the answer.
        return Response(TokenSerializer(body).data, headers={"Cache-Control": "no-store"})

    def delete(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        user = request.user
        assert user.is_authenticated  # get_permissions: only POST lets anonymous callers in
        # A token caller revokes the token it sent; a console session, every token it holds.
        token = request.auth if isinstance(request.auth, ApiToken) else None
        api_token_revoke(
            user=user, token=token, remote_addr=request.META.get("REMOTE_ADDR") or None
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class NotFoundView(APIView):
    """Anything under /api/v1/ that matches no route: a JSON 404, not the HTML error page."""

    schema = None  # not an endpoint
    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]

    def not_found(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        raise NotFound("No such endpoint; see /api/docs/ for the API.")

    # Every method, known or not, gets the same answer (not 405: there is nothing here).
    get = post = put = patch = delete = head = options = trace = not_found
    http_method_not_allowed = not_found

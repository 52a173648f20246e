"""The notification pages: routes, webhooks (each with its delivery log and "Send a test")
and silences; the forms that change them are in `notification_edit`.

Everyone signed in reads their own: operators every owner's, a tenant member its tenants'
(`composer.notifications.access`). Operators and a tenant's admins manage; a row the viewer
may not see is a 404, a change the viewer may not make a 403.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from composer.errors import ComposerError
from composer.models import DeliveryStatus, Membership, NotificationDelivery, Silence, Webhook
from composer.notifications import (
    Actor,
    can_manage,
    deliveries_for,
    manageable_tenants,
    routes_for,
    silences_for,
    webhook_secret_rotate,
    webhook_test,
    webhooks_for,
)
from composer.notifications.silences import silence_end
from fabric.permissions import is_operator
from fabric.views.common import paginate_or_raise

__all__ = [
    "actor_of",
    "managed_owner_ids",
    "route_list",
    "silence_end_view",
    "silence_list",
    "webhook_detail",
    "webhook_list",
    "webhook_secret_view",
    "webhook_test_view",
]

DELIVERIES_PER_PAGE = 25
SILENCES_PER_PAGE = 50
SILENCE_STATES = {"active": "Active", "expired": "Ended", "all": "All"}


def actor_of(request: HttpRequest) -> Actor:
    """The signed-in user and their address, as the audit records them."""
    return Actor(
        user=request.user, source="console", remote_addr=request.META.get("REMOTE_ADDR") or None
    )


def managed_owner_ids(request: HttpRequest) -> tuple[bool, set[int]]:
    """(operator, the tenants the viewer manages): what the rows' buttons ask."""
    if is_operator(request.user):
        return True, set()
    return False, set(manageable_tenants(request.user).values_list("pk", flat=True))


def _can(operator: bool, tenants: set[int], tenant_id: int | None) -> bool:
    return operator or (tenant_id is not None and tenant_id in tenants)


def _context(request: HttpRequest, tab: str, **extra: Any) -> dict[str, Any]:
    operator, tenants = managed_owner_ids(request)
    return {
        "tab": tab,
        "can_add": operator or bool(tenants),
        # The owner column, where rows may have different owners.
        "show_owner": operator
        or Membership.objects.filter(user_id=int(request.user.pk or 0)).count() > 1,
        **extra,
    }


@login_required
@require_GET
def route_list(request: HttpRequest) -> HttpResponse:
    """Every route the viewer may see: what it matches and where it sends."""
    operator, tenants = managed_owner_ids(request)
    routes = routes_for(request.user).order_by("tenant__name", "name", "pk")
    rows = [(route, _can(operator, tenants, route.tenant_id)) for route in routes]
    return render(
        request, "composer/notifications/route_list.html", _context(request, "routes", rows=rows)
    )


@login_required
@require_GET
def webhook_list(request: HttpRequest) -> HttpResponse:
    """Every webhook the viewer may see, with its newest delivery and how many wait: one
    query."""
    operator, tenants = managed_owner_ids(request)
    newest = NotificationDelivery.objects.filter(webhook=OuterRef("pk")).order_by(
        "-created_at", "-pk"
    )
    waiting = (
        NotificationDelivery.objects.filter(webhook=OuterRef("pk"), status=DeliveryStatus.PENDING)
        .order_by()
        .values("webhook")
        .annotate(n=Count("pk"))
        .values("n")
    )
    hooks = (
        webhooks_for(request.user)
        .annotate(
            last_status=Subquery(newest.values("status")[:1]),
            last_at=Subquery(newest.values("created_at")[:1]),
            last_code=Subquery(newest.values("status_code")[:1]),
            last_error=Subquery(newest.values("error")[:1]),
            waiting=Coalesce(Subquery(waiting), 0),
        )
        .order_by("tenant__name", "name", "pk")
    )
    rows = [(hook, _can(operator, tenants, hook.tenant_id)) for hook in hooks]
    return render(
        request,
        "composer/notifications/webhook_list.html",
        _context(request, "webhooks", rows=rows),
    )


@login_required
@require_GET
def webhook_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A webhook, the routes that send to it, and its delivery log, newest first."""
    hook = get_object_or_404(webhooks_for(request.user), pk=pk)
    deliveries = (
        deliveries_for(request.user)
        .filter(webhook=hook)
        .select_related("alert", "created_by")
        .order_by("-created_at", "-pk")
    )
    page = paginate_or_raise(deliveries, page=request.GET.get("page"), per_page=DELIVERIES_PER_PAGE)
    return render(
        request,
        "composer/notifications/webhook_detail.html",
        _context(
            request,
            "webhooks",
            hook=hook,
            page=page,
            routes=list(hook.routes.order_by("name")),
            can_manage=can_manage(request.user, hook.tenant_id),
        ),
    )


def _managed_webhook(request: HttpRequest, pk: int) -> Webhook:
    hook = get_object_or_404(webhooks_for(request.user), pk=pk)
    if not can_manage(request.user, hook.tenant_id):
        raise PermissionDenied("Only operators and the tenant's admins change its webhooks.")
    return hook


@login_required
@require_POST
def webhook_test_view(request: HttpRequest, pk: int) -> HttpResponse:
    """ "Send a test": a signed test body, delivered and logged like any other."""
    hook = _managed_webhook(request, pk)
    try:
        webhook_test(webhook=hook, actor=actor_of(request))
    except ComposerError as exc:
        messages.warning(request, exc.message)
    else:
        messages.success(request, "A test is on its way: its attempt shows in the log below.")
    return redirect("composer:webhook_detail", pk=hook.pk)


@login_required
@require_POST
def webhook_secret_view(request: HttpRequest, pk: int) -> HttpResponse:
    """A new signing secret, made and shown once (this answer is the only place it is)."""
    hook = _managed_webhook(request, pk)
    secret = webhook_secret_rotate(webhook=hook, actor=actor_of(request))
    response = render(
        request,
        "composer/notifications/webhook_secret.html",
        _context(request, "webhooks", hook=hook, secret=secret, rotated=True),
    )
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_GET
def silence_list(request: HttpRequest) -> HttpResponse:
    """Silences in force (or ended, or all), newest end first, with "End now"."""
    state = request.GET.get("state") or "active"
    if state not in SILENCE_STATES:
        state = "active"
    operator, tenants = managed_owner_ids(request)
    silences = silences_for(request.user).select_related("alert")
    now = timezone.now()
    if state == "active":
        silences = silences.filter(ends_at__gt=now).order_by("ends_at", "pk")
    elif state == "expired":
        silences = silences.filter(ends_at__lte=now).order_by("-ends_at", "-pk")
    else:
        silences = silences.order_by("-ends_at", "-pk")
    page = paginate_or_raise(silences, page=request.GET.get("page"), per_page=SILENCES_PER_PAGE)
    rows = [(s, _can(operator, tenants, s.tenant_id)) for s in page.object_list]
    return render(
        request,
        "composer/notifications/silence_list.html",
        _context(
            request,
            "silences",
            page=page,
            rows=rows,
            state=state,
            states=SILENCE_STATES,
            now=now,
            operator=operator,
        ),
    )


@login_required
@require_POST
def silence_end_view(request: HttpRequest, pk: int) -> HttpResponse:
    """End a silence now (audited); one already over is left as it is."""
    silence: Silence = get_object_or_404(silences_for(request.user), pk=pk)
    if not can_manage(request.user, silence.tenant_id):
        raise PermissionDenied("Only operators and the tenant's admins end its silences.")
    if silence_end(silence=silence, actor=actor_of(request)):
        messages.success(request, f"{silence} ended.")
    else:
        messages.info(request, "That silence had ended already.")
    return redirect("composer:silence_list")

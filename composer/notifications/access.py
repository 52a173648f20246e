"""Who reads and who manages notification routes, webhooks, silences and deliveries.

Reads start from each model's `for_user` (operators: every owner's; a tenant member: its
tenants' rows, never the operators'). Managing is for operators (any owner: they run the
console) and a tenant's admins (`Role.ADMIN`) for that tenant; other members read only.
Pages and the API both ask here, and the services check again.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet

from composer.choices import Role
from composer.models import (
    Membership,
    NotificationDelivery,
    NotificationRoute,
    Silence,
    Tenant,
    Webhook,
)
from fabric.permissions import is_operator

__all__ = [
    "can_manage",
    "can_manage_any",
    "deliveries_for",
    "manage_check",
    "manageable_tenants",
    "routes_for",
    "silences_for",
    "webhooks_for",
]


def routes_for(user: Any) -> QuerySet[NotificationRoute]:
    return NotificationRoute.objects.for_user(user).select_related("tenant", "webhook")


def webhooks_for(user: Any) -> QuerySet[Webhook]:
    return Webhook.objects.for_user(user).select_related("tenant")


def silences_for(user: Any) -> QuerySet[Silence]:
    return Silence.objects.for_user(user).select_related("tenant", "created_by", "ended_by")


def deliveries_for(user: Any) -> QuerySet[NotificationDelivery]:
    return NotificationDelivery.objects.for_user(user).select_related("webhook", "route")


def manageable_tenants(user: Any) -> QuerySet[Tenant]:
    """The tenants whose notifications `user` manages: every one for operators, those it
    is an admin of for a member."""
    if is_operator(user):
        return Tenant.objects.order_by("name")
    if not getattr(user, "is_authenticated", False):
        return Tenant.objects.none()
    return Tenant.objects.filter(memberships__user=user, memberships__role=Role.ADMIN).order_by(
        "name"
    )


def can_manage(user: Any, tenant: Tenant | int | None) -> bool:
    """Whether `user` may change the notifications of `tenant` (None: the operators')."""
    if is_operator(user):
        return True
    if tenant is None or not getattr(user, "is_authenticated", False):
        return False
    tenant_id = tenant.pk if isinstance(tenant, Tenant) else tenant
    return Membership.objects.filter(user=user, tenant_id=tenant_id, role=Role.ADMIN).exists()


def can_manage_any(user: Any) -> bool:
    """Whether `user` manages anyone's notifications (the pages' buttons)."""
    return is_operator(user) or manageable_tenants(user).exists()


def manage_check(user: Any, tenant: Tenant | int | None) -> None:
    """PermissionDenied unless `user` may change `tenant`'s notifications (the message names
    no other tenant: the caller could already see this owner's rows, or got a 404)."""
    if not can_manage(user, tenant):
        raise PermissionDenied(
            "Only operators change the operators' notifications."
            if tenant is None
            else "Only the tenant's admins change its notifications."
        )

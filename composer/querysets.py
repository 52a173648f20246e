"""Tenant scoping: every read of tenant-owned rows starts here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import models

from fabric.permissions import is_operator

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractUser, AnonymousUser


class TenantScopedQuerySet(models.QuerySet[Any]):
    """Adds `for_user`: operators see every row, members their tenants' rows, others none."""

    tenant_field = "tenant"

    def for_user(self, user: AbstractUser | AnonymousUser) -> TenantScopedQuerySet:
        if not user.is_authenticated:
            return self.none()
        if is_operator(user):
            return self.all()
        return self.filter(**{f"{self.tenant_field}__memberships__user": user})

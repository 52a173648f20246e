"""Who a request is for: the tenant a body names (or the caller's only one), whether the
caller may write there, and the template it names. Shared by the viewsets through which
tenants ask for capacity: compositions now, bookings for later."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import PermissionDenied, ValidationError

from composer.models import Membership, Template, Tenant
from fabric.permissions import is_operator

__all__ = ["TenantRequests"]


class TenantRequests:
    """Mixin of a viewset: `_tenant`, `_may_write_somewhere`, `_memberships`, `_template`."""

    request: Any

    def _tenant(self, slug: str | None, *, write: bool) -> Tenant:
        """The tenant a request is for: named by `slug`, or the caller's only tenant.

        Operators act for any tenant and must name it. Members must belong to it; with
        `write`, read-only members get 403.
        """
        user = self.request.user
        if is_operator(user):
            if not slug:
                raise ValidationError({"tenant": ["Operators name the tenant (its slug)."]})
            tenant = Tenant.objects.filter(slug=slug, is_active=True).first()
            if tenant is None:
                raise ValidationError({"tenant": [f"There is no tenant {slug!r}."]})
            return tenant
        memberships = self._memberships()
        if slug:
            membership = next((m for m in memberships if m.tenant.slug == slug), None)
            if membership is None:
                raise ValidationError({"tenant": [f"You are not a member of a tenant {slug!r}."]})
        elif len(memberships) == 1:
            membership = memberships[0]
        elif not memberships:
            raise PermissionDenied("You belong to no tenant.")
        else:
            slugs = ", ".join(m.tenant.slug for m in memberships)
            raise ValidationError(
                {"tenant": [f"You belong to several tenants; name one: {slugs}."]}
            )
        if write and not membership.can_write:
            raise PermissionDenied(f"You have read-only access to {membership.tenant.name}.")
        return membership.tenant

    def _may_write_somewhere(self) -> None:
        if is_operator(self.request.user):
            return
        if not any(m.can_write for m in self._memberships()):
            raise PermissionDenied("Read-only members cannot compose.")

    def _memberships(self) -> list[Membership]:
        """The caller's memberships of active tenants, with their tenants: read once per
        request (a viewset instance serves one request), since a POST asks twice."""
        cached: list[Membership] | None = getattr(self, "_memberships_cache", None)
        if cached is None:
            user = self.request.user
            assert user.is_authenticated  # OperatorWrites lets no anonymous caller in
            cached = self._memberships_cache = list(
                Membership.objects.filter(user=user, tenant__is_active=True).select_related(
                    "tenant"
                )
            )
        return cached

    def _template(self, slug: str | None) -> Template | None:
        if not slug:
            return None
        template = Template.objects.filter(slug=slug, is_active=True).first()
        if template is None:
            raise ValidationError({"template": [f"There is no active template {slug!r}."]})
        return template

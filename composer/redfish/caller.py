"""Who is asking, and what a Redfish request carries to the resource that answers it."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from composer.models import Membership
from fabric.permissions import is_operator

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractUser, AnonymousUser
    from django.http import HttpRequest


@dataclass
class Caller:
    """An authenticated user: an operator (sees and does everything) or a tenant member
    (its tenants' things only; read-only members never change anything)."""

    user: AbstractUser | AnonymousUser
    session_id: str = ""  # the Redfish session's public id; "" for HTTP Basic
    remote_addr: str | None = None

    @classmethod
    def anonymous(cls, remote_addr: str | None) -> Caller:
        """Nobody signed in: reads the open resources (the root) and logs in."""
        from django.contrib.auth.models import AnonymousUser

        return cls(user=AnonymousUser(), remote_addr=remote_addr)

    @property
    def signed_in(self) -> bool:
        return bool(self.user.is_authenticated)

    @cached_property
    def operator(self) -> bool:
        return is_operator(self.user)

    @cached_property
    def memberships(self) -> list[Membership]:
        """The caller's memberships of active tenants, read once per request."""
        if not self.signed_in:
            return []
        return list(
            Membership.objects.filter(
                user_id=self.user.pk or 0, tenant__is_active=True
            ).select_related("tenant")
        )

    @cached_property
    def tenant_ids(self) -> frozenset[int]:
        return frozenset(m.tenant_id for m in self.memberships)

    def sees_tenant(self, tenant_id: int | None) -> bool:
        """Whether the caller may see a tenant's things (None: no tenant's; operators)."""
        return self.operator or (tenant_id is not None and tenant_id in self.tenant_ids)

    def writes_tenant(self, tenant_id: int) -> bool:
        if self.operator:
            return True
        return any(m.tenant_id == tenant_id and m.can_write for m in self.memberships)


@dataclass
class Call:
    """One request as a resource sees it: who, which path and parameters, the body."""

    caller: Caller
    path: str
    params: dict[str, str] = field(default_factory=dict)  # from the route's {names}
    body: dict[str, Any] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)
    request: HttpRequest | None = None

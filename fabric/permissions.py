"""Who is an operator. Fabric internals (ports, links, serials, endpoints) are for operators.

An operator is an active staff user: the same flag that opens the Django admin, since
operators administer every model there too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractUser, AnonymousUser


def is_operator(user: AbstractUser | AnonymousUser | None) -> bool:
    """True for an authenticated, active staff user."""
    return bool(user is not None and user.is_authenticated and user.is_active and user.is_staff)

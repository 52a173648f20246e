"""Values every page template needs: whether the viewer is an operator, their tenants, and
whether the optional simulator app (`fabric.simulator`: the fault page) is installed, so
the navbar links to its page only then."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from fabric.permissions import is_operator


def console(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)

    def memberships() -> list[Any]:
        # Lazy: one query, and only on pages that draw the user menu.
        if user is None or not user.is_authenticated:
            return []
        from composer.models import Membership

        return list(Membership.objects.filter(user=user).select_related("tenant"))

    return {
        "is_operator": is_operator(user),
        "user_memberships": SimpleLazyObject(memberships),
        "simulator_installed": apps.is_installed("fabric.simulator"),
    }

"""Values every page template needs: whether the viewer is an operator, their tenants."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from fabric.permissions import is_operator


def console(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    return {"is_operator": is_operator(user)}

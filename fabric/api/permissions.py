"""Who may call the fabric endpoints.

Fabric internals (hosts, switches, links, managers, racks, ...) are for operators only. A
tenant member asking for them gets 404, not 403: a 403 would confirm that the
thing exists. Anonymous callers get 401, so a client knows to send a token.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework.exceptions import NotFound
from rest_framework.permissions import BasePermission

from fabric.permissions import is_operator

if TYPE_CHECKING:
    from rest_framework.request import Request
    from rest_framework.views import APIView


class IsOperatorOr404(BasePermission):
    """Operators pass; other authenticated users get 404; anonymous users get 401."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False  # DRF answers NotAuthenticated (401)
        if not is_operator(request.user):
            raise NotFound()
        return True

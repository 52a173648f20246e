"""Under /api/: a method an endpoint does not have answers 405 before anything else.

DRF decides the method last: authentication, permissions and throttles run first, so
`TRACE /api/v1/auth/token/` answered 401 and a tenant member's `PUT /api/v1/hosts/`
answered 404 (operators' endpoints hide from members). Which methods an endpoint has is in
the public schema; the answer to one it does not have is the same for everybody: 405 with
the error shape and an `Allow` header.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.deprecation import MiddlewareMixin

from composer.api.errors import error_body


class ApiMethodsFirst(MiddlewareMixin):
    """MIDDLEWARE entry: the 405 of an API endpoint, before its view runs."""

    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., Any],
        view_args: Any,
        view_kwargs: Any,
    ) -> HttpResponse | None:
        if not request.path_info.startswith("/api/"):
            return None
        allowed = allowed_methods(view_func)
        if allowed is None or request.method in allowed:
            return None
        body = error_body(
            code="method_not_allowed", detail=f'Method "{request.method}" not allowed.'
        )
        return JsonResponse(body, status=405, headers={"Allow": ", ".join(sorted(allowed))})


def allowed_methods(view_func: Callable[..., Any]) -> set[str] | None:
    """The methods a DRF view answers (its viewset actions, or its handlers), OPTIONS and
    HEAD with GET included; None for anything that is not a DRF view."""
    view_class = getattr(view_func, "cls", None)
    if view_class is None:
        return None
    actions = getattr(view_func, "actions", None)
    if actions is not None:
        methods = {method.upper() for method in actions}
    else:
        methods = {
            method.upper()
            for method in view_class.http_method_names
            if hasattr(view_class, method) and method != "options"
        }
    methods.add("OPTIONS")
    if "GET" in methods:
        methods.add("HEAD")
    return methods

"""Under /api/: a method an endpoint does not have answers 405, and a body that is not JSON
415, before anything else.

DRF decides the method last: authentication, permissions and throttles run first, so
`TRACE /api/v1/auth/token/` answered 401 and a tenant member's `PUT /api/v1/hosts/`
answered 404 (operators' endpoints hide from members). Which methods an endpoint has is in
the public schema; the answer to one it does not have is the same for everybody: 405 with
the error shape and an `Allow` header.

DRF also calls a parser only for a body that has bytes in it. An empty body with a form
type (`application/x-www-form-urlencoded`, `multipart/form-data`) reached the view as an
empty form, in which DRF reads a missing boolean as false: `POST .../maintenance/` with
nothing in it took a device out of maintenance. So the media type is judged here, on what
the request declares, whatever its length: a POST, PUT or PATCH whose Content-Type none of
the view's parsers takes (the API's take JSON only: composer.api.parsers), or that carries
bytes without a Content-Type, answers 415 with the error shape. A POST with neither a body
nor a Content-Type (`curl -X POST`, `fetch(url, {method: "POST"})`) is an empty request,
which is what the actions without a body (sync, heal, decompose, acknowledge) expect.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.deprecation import MiddlewareMixin
from rest_framework.utils.mediatypes import media_type_matches

from composer.api.errors import error_body

BODY_METHODS = {"POST", "PUT", "PATCH"}
# How much of a refused Content-Type the answer repeats.
SHOWN_MEDIA_TYPE = 100


class ApiMethodsFirst(MiddlewareMixin):
    """MIDDLEWARE entry: the 405 and 415 of an API endpoint, before its view runs."""

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
        if allowed is not None and request.method not in allowed:
            body = error_body(
                code="method_not_allowed", detail=f'Method "{request.method}" not allowed.'
            )
            return JsonResponse(body, status=405, headers={"Allow": ", ".join(sorted(allowed))})
        detail = refused_media_type(request, view_func)
        if detail is not None:
            return JsonResponse(
                error_body(code="unsupported_media_type", detail=detail), status=415
            )
        return None


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


def refused_media_type(request: HttpRequest, view_func: Callable[..., Any]) -> str | None:
    """Why a DRF view's POST, PUT or PATCH is refused for its media type (the 415's
    detail), or None when its parsers take it or it declares no type and carries nothing."""
    view_class = getattr(view_func, "cls", None)
    if view_class is None or request.method not in BODY_METHODS:
        return None
    accepted = [parser.media_type for parser in view_class.parser_classes]
    wanted = " or ".join(accepted) or "no body"
    declared = (request.META.get("CONTENT_TYPE") or "").strip()
    if not declared:
        if _content_length(request) == 0:
            return None
        return f"The body has no Content-Type; send {wanted}."
    if any(media_type_matches(media_type, declared) for media_type in accepted):
        return None
    shown = declared.split(";")[0].strip()[:SHOWN_MEDIA_TYPE]
    return f'Unsupported media type "{shown}" in request; send {wanted}.'


def _content_length(request: HttpRequest) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except (TypeError, ValueError):
        return 0

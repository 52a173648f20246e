"""Small answers the console's views (both apps') share: who asked from where, and a
redirect that htmx follows as well as a browser."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect


def remote_addr(request: HttpRequest) -> str | None:
    return request.META.get("REMOTE_ADDR") or None


def is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def htmx_redirect(request: HttpRequest, url: str) -> HttpResponse:
    """An `HX-Redirect` for htmx, a plain 302 otherwise."""
    if is_htmx(request):
        response = HttpResponse(status=200)
        response["HX-Redirect"] = url
        return response
    return redirect(url)

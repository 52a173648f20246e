"""The server-error handler: JSON for API clients, the plain 500 page for browsers."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.defaults import server_error as html_server_error

API_PREFIX = "/api/"


def server_error(request: HttpRequest) -> HttpResponse:
    """An unexpected error: API clients get the documented error shape, never HTML.

    Nothing about the error itself is shown; it is logged by Django's request logger.
    """
    if request.path.startswith(API_PREFIX):
        return JsonResponse(
            {
                "code": "server_error",
                "detail": "The server could not complete the request; it has been logged.",
                "field": None,
                "errors": {},
            },
            status=500,
        )
    return html_server_error(request)

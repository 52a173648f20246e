"""The server-error handler: JSON for API clients, the plain 500 page for browsers.

A request cut short because the database went away (its connection terminated by a
failover or a restart, the server unreachable) is not a bug in Composer: it answers 503
with Retry-After, so that a client tries again, instead of 500. Nothing is half-made by
it: each change a service makes is one transaction, rolled back whole when cut short. A
change may have been saved before the answer failed, and the answer says so: a create
retried with the same Idempotency-Key finds what a request that did commit made.
"""

from __future__ import annotations

import sys

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import loader
from django.views.defaults import server_error as html_server_error

API_PREFIX = "/api/"
DATABASE_RETRY_AFTER_S = 5
DATABASE_AWAY_READ = (
    "The database could not be reached while answering; nothing was changed. Try again in a "
    "few seconds."
)
DATABASE_AWAY_WRITE = (
    "The database could not be reached while answering; your change may or may not have been "
    "saved. Check before sending it again, or send it again with the same Idempotency-Key "
    "(a create is then not made twice)."
)
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def server_error(request: HttpRequest) -> HttpResponse:
    """An unexpected error: API clients get the documented error shape, never HTML.

    Nothing about the error itself is shown; it is logged by Django's request logger.
    Django calls this while handling the exception, so `sys.exc_info()` names it.
    """
    if isinstance(sys.exc_info()[1], OperationalError | InterfaceError):
        return database_away(request)
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


def database_away(request: HttpRequest) -> HttpResponse:
    """503 with Retry-After: the error shape for API clients, a page for browsers."""
    response: HttpResponse
    reading = request.method in SAFE_METHODS
    if request.path.startswith(API_PREFIX):
        detail = DATABASE_AWAY_READ if reading else DATABASE_AWAY_WRITE
        response = JsonResponse(
            {"code": "database_unavailable", "detail": detail, "field": None, "errors": {}},
            status=503,
        )
    else:
        page = loader.get_template("503.html").render(
            {"retry_after_s": DATABASE_RETRY_AFTER_S, "reading": reading, "path": request.path}
        )
        response = HttpResponse(page, status=503)
    response["Retry-After"] = str(DATABASE_RETRY_AFTER_S)
    return response

"""The first middleware: a request id for each request, and the HTTP series.

See `composer.monitoring.requestid` for where the id goes. The series count by method and
status class only: a path or view label would make a series per URL an attacker invents.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponseBase

from composer.monitoring.metrics import HTTP_REQUEST_DURATION, HTTP_REQUESTS
from composer.monitoring.requestid import (
    request_id_clean,
    request_id_new,
    request_id_reset,
    request_id_set,
)

__all__ = ["RequestMiddleware"]

_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class RequestMiddleware:
    """Sets the request id (from `X-Request-ID` when acceptable, else new), answers it in
    `X-Request-ID`, and counts and times the request."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        rid = request_id_clean(request.headers.get("X-Request-ID")) or request_id_new()
        request.request_id = rid  # type: ignore[attr-defined]
        token = request_id_set(rid)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
        finally:
            request_id_reset(token)
        response["X-Request-ID"] = rid
        method = request.method if request.method in _METHODS else "other"
        HTTP_REQUESTS.labels(method=method, status=f"{response.status_code // 100}xx").inc()
        HTTP_REQUEST_DURATION.labels(method=method).observe(time.perf_counter() - started)
        return response

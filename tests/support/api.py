"""Assertions shared by the API tests: the one error shape, query counts, pagination."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext

ERROR_KEYS = {"code", "detail", "field", "errors"}


def assert_error(
    response: Any, status: int, code: str, *, field: str | None = None
) -> dict[str, Any]:
    """The response is a JSON error with this status, code and field; returns the body."""
    assert response.status_code == status, (response.status_code, response.content[:500])
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = response.json()
    assert set(body) == ERROR_KEYS, body
    assert body["code"] == code, body
    assert body["field"] == field, body
    assert isinstance(body["detail"], str) and body["detail"], body
    assert isinstance(body["errors"], dict), body
    if field is not None and code == "invalid":
        assert body["errors"][field], body
    return body


def count_queries(call: Callable[[], Any]) -> int:
    """How many SQL queries `call()` makes; the call must succeed with 200."""
    with CaptureQueriesContext(connection) as queries:
        response = call()
    assert response.status_code == 200, (response.status_code, response.content[:500])
    return len(queries)


def results(response: Any) -> list[dict[str, Any]]:
    """The rows of a paginated 200 response."""
    assert response.status_code == 200, (response.status_code, response.content[:500])
    body = response.json()
    assert set(body) == {"count", "next", "previous", "results"}, body
    return body["results"]

"""An unexpected error answers JSON under /api/ and the plain 500 page elsewhere; a database
that went away answers 503 with Retry-After."""

from __future__ import annotations

import json
from typing import Any
from unittest import mock

import pytest
from django.db import InterfaceError, OperationalError
from django.http import HttpResponse
from django.test import RequestFactory

from composer.views.errors import server_error


def test_an_api_client_gets_the_error_shape_not_html() -> None:
    response = server_error(RequestFactory().get("/api/v1/devices/"))

    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert json.loads(response.content)["code"] == "server_error"


def test_a_browser_gets_the_500_page() -> None:
    response = server_error(RequestFactory().get("/fabric/devices/"))

    assert response.status_code == 500
    assert b"<html" in response.content.lower() or b"<!doctype" in response.content.lower()


def _during(exc: Exception, path: str, method: str = "get") -> HttpResponse:
    """What the handler answers while Django handles `exc` (it is called so)."""
    try:
        raise exc
    except Exception:
        return server_error(getattr(RequestFactory(), method)(path))


@pytest.mark.parametrize(
    "exc", [OperationalError("server closed the connection"), InterfaceError("")]
)
def test_a_database_that_went_away_answers_503_with_retry_after_not_500(exc: Exception) -> None:
    api = _during(exc, "/api/v1/devices/")
    assert (api.status_code, api["Retry-After"]) == (503, "5")
    assert json.loads(api.content)["code"] == "database_unavailable"

    page = _during(exc, "/fabric/devices/")
    assert (page.status_code, page["Retry-After"]) == (503, "5")
    assert b"The database could not be reached" in page.content
    assert b"Nothing was changed" in page.content

    posted = _during(exc, "/compositions/new/", "post")
    assert b"may or may not have been saved" in posted.content  # never "nothing was changed"
    assert b"Nothing was changed" not in posted.content


def test_another_error_is_still_a_500() -> None:
    assert _during(ValueError("a bug"), "/api/v1/devices/").status_code == 500


@pytest.mark.django_db
def test_a_compose_cut_short_by_the_database_answers_503_and_a_retry_makes_it_once(
    api_as: Any, alice: Any, acme: Any, synced: Any
) -> None:
    """The chaos run of issue 11: connections terminated mid-request answered 500."""
    client = api_as(alice)
    client.raise_request_exception = False
    body = {"tenant": acme.slug, "name": "cut", "spec": {"items": [{"kind": "gpu", "count": 1}]}}
    key = {"HTTP_IDEMPOTENCY_KEY": "cut-once"}
    with mock.patch(
        "composer.api.compositions.composition_request",
        side_effect=OperationalError("terminating connection due to administrator command"),
    ):
        cut = client.post("/api/v1/compositions/", body, format="json", **key)
    assert cut.status_code == 503, cut.content
    assert cut["Retry-After"] == "5" and cut.json()["code"] == "database_unavailable"
    assert "may or may not have been saved" in cut.json()["detail"]  # a write: say so

    first = client.post("/api/v1/compositions/", body, format="json", **key)
    again = client.post("/api/v1/compositions/", body, format="json", **key)
    assert first.status_code == 202, first.content
    assert again.json()["id"] == first.json()["id"]

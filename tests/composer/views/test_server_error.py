"""An unexpected error answers JSON under /api/ and the plain 500 page elsewhere."""

from __future__ import annotations

import json

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

"""The OpenAPI schema generates cleanly and validates; the docs are served from local files."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from drf_spectacular.validation import validate_schema

pytestmark = pytest.mark.django_db

ENDPOINTS = [
    "/api/v1/auth/token/",
    "/api/v1/pools/",
    "/api/v1/pools/{slug}/",
    "/api/v1/devices/",
    "/api/v1/devices/{id}/",
    "/api/v1/hosts/",
    "/api/v1/enclosures/",
    "/api/v1/switches/",
    "/api/v1/links/",
    "/api/v1/fabric-managers/",
    "/api/v1/fabric-managers/{id}/sync/",
    "/api/v1/racks/",
    "/api/v1/power-feeds/",
    "/api/v1/jobs/",
    "/api/v1/jobs/{id}/",
    "/api/v1/templates/",
    "/api/v1/templates/{slug}/",
    "/api/v1/quotas/",
    "/api/v1/quotas/{id}/",
    "/api/v1/compositions/",
    "/api/v1/compositions/{id}/",
    "/api/v1/compositions/preview/",
    "/api/v1/compositions/{id}/decompose/",
    "/api/v1/compositions/{id}/heal/",
]


@pytest.fixture
def schema(api: Any) -> dict[str, Any]:
    response = api.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    return response.json()


def test_the_schema_is_valid_openapi_3(schema: dict[str, Any]) -> None:
    assert schema["openapi"].startswith("3.")
    validate_schema(schema)


def test_the_schema_lists_every_endpoint(schema: dict[str, Any]) -> None:
    assert set(ENDPOINTS) <= set(schema["paths"])


def test_the_schema_generates_without_warnings(tmp_path: Path) -> None:
    # --fail-on-warn raises on any warning; --validate checks against the OpenAPI 3 spec.
    call_command(
        "spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml")
    )


def test_every_operation_documents_the_error_shape(schema: dict[str, Any]) -> None:
    assert set(schema["components"]["schemas"]["Error"]["required"]) == {
        "code",
        "detail",
        "field",
        "errors",
    }
    devices = schema["paths"]["/api/v1/devices/"]["get"]["responses"]
    assert {"200", "400", "401", "404"} <= set(devices)
    assert devices["400"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"
    }
    sync = schema["paths"]["/api/v1/fabric-managers/{id}/sync/"]["post"]["responses"]
    assert {"202", "401", "404"} <= set(sync)
    token = schema["paths"]["/api/v1/auth/token/"]["post"]["responses"]
    assert {"200", "400", "429"} <= set(token)
    assert "401" not in token  # anyone may ask for a token


def test_the_schema_documents_the_device_filters(schema: dict[str, Any]) -> None:
    names = {p["name"] for p in schema["paths"]["/api/v1/devices/"]["get"]["parameters"]}
    assert {
        "kind",
        "state",
        "health",
        "pool",
        "model",
        "q",
        "ordering",
        "page",
        "page_size",
    } <= names


def test_the_docs_are_served_from_local_static_files(api: Any) -> None:
    response = api.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui.css" in html
    # No CDN: nothing is loaded from another host.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    for cdn in ("jsdelivr", "unpkg", "cdnjs", "googleapis"):
        assert cdn not in html

"""composer.api.errors: every error is {code, detail, field, errors}, never an HTML page."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import exceptions

from composer.api.errors import exception_handler, flatten_errors
from composer.errors import ComposerError, InvalidTransition, StaleState
from tests.support.api import ERROR_KEYS, assert_error


def _handle(exc: Exception) -> Any:
    response = exception_handler(exc, {})
    assert response is not None
    assert set(response.data) == ERROR_KEYS
    return response


def test_a_drf_validation_error_names_the_first_field() -> None:
    response = _handle(exceptions.ValidationError({"size_gib": ["Too big."], "name": ["Blank."]}))
    assert response.status_code == 400
    assert response.data == {
        "code": "invalid",
        "detail": "Too big.",
        "field": "size_gib",
        "errors": {"size_gib": ["Too big."], "name": ["Blank."]},
    }


def test_a_non_field_validation_error_has_no_field() -> None:
    response = _handle(exceptions.ValidationError("Nope."))
    assert (response.data["field"], response.data["detail"]) == (None, "Nope.")
    assert response.data["errors"] == {"non_field_errors": ["Nope."]}


def test_the_field_is_named_even_after_non_field_errors() -> None:
    response = _handle(
        exceptions.ValidationError({"non_field_errors": ["Clash."], "pool": ["Unknown."]})
    )
    assert (response.data["field"], response.data["detail"]) == ("pool", "Unknown.")


def test_nested_errors_are_flattened_with_dotted_paths() -> None:
    assert flatten_errors(
        {"devices": [{}, {"size_gib": ["Too big."]}], "spec": {"gpus": ["No."]}}
    ) == {
        "devices.1.size_gib": ["Too big."],
        "spec.gpus": ["No."],
    }


def test_a_django_validation_error_is_400() -> None:
    response = _handle(DjangoValidationError({"driver": ["Unknown driver 'x'."]}))
    assert response.status_code == 400
    assert (response.data["code"], response.data["field"]) == ("invalid", "driver")
    plain = _handle(DjangoValidationError("Broken."))
    assert (plain.data["field"], plain.data["detail"]) == (None, "Broken.")
    all_ = _handle(DjangoValidationError({"__all__": ["Clash."]}))
    assert all_.data["errors"] == {"non_field_errors": ["Clash."]}


@pytest.mark.parametrize(
    ("exc", "status", "code"),
    [
        (StaleState("Someone else got there first."), 409, "stale_state"),
        (InvalidTransition("ACTIVE cannot go to REQUESTED."), 409, "invalid_transition"),
        (ComposerError("Generic."), 400, "composer_error"),
    ],
)
def test_composer_errors_keep_their_code_and_status(
    exc: ComposerError, status: int, code: str
) -> None:
    response = _handle(exc)
    assert (response.status_code, response.data["code"]) == (status, code)
    assert response.data["detail"] == exc.message


def test_a_composer_error_names_its_field() -> None:
    class NoCapacity(ComposerError):
        code = "no_capacity"
        status_code = 422

    response = _handle(NoCapacity("Only 2 GPUs are free.", field="gpus"))
    assert response.status_code == 422
    assert response.data == {
        "code": "no_capacity",
        "detail": "Only 2 GPUs are free.",
        "field": "gpus",
        "errors": {"gpus": ["Only 2 GPUs are free."]},
    }


@pytest.mark.parametrize(
    ("exc", "status", "code"),
    [
        (Http404("No Device matches the given query."), 404, "not_found"),
        (DjangoPermissionDenied(), 403, "permission_denied"),
        (exceptions.NotFound(), 404, "not_found"),
        (exceptions.PermissionDenied(), 403, "permission_denied"),
        (exceptions.NotAuthenticated(), 401, "not_authenticated"),
        (exceptions.AuthenticationFailed(), 401, "authentication_failed"),
        (exceptions.MethodNotAllowed("PUT"), 405, "method_not_allowed"),
        (exceptions.NotAcceptable(), 406, "not_acceptable"),
        (exceptions.UnsupportedMediaType("text/xml"), 415, "unsupported_media_type"),
        (exceptions.Throttled(wait=12), 429, "throttled"),
        (exceptions.ParseError(), 400, "parse_error"),
    ],
)
def test_drf_and_django_exceptions_map_to_stable_codes(
    exc: Exception, status: int, code: str
) -> None:
    response = _handle(exc)
    assert (response.status_code, response.data["code"]) == (status, code)
    assert response.data["detail"]
    assert response.data["errors"] == {}


def test_a_throttled_response_says_when_to_retry() -> None:
    assert _handle(exceptions.Throttled(wait=12))["Retry-After"] == "12"


def test_a_401_carries_the_token_challenge() -> None:
    response = _handle(exceptions.NotAuthenticated())
    assert response["WWW-Authenticate"] == "Token"


def test_unknown_exceptions_are_left_to_django() -> None:
    assert exception_handler(RuntimeError("bug"), {}) is None


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/nope/",
        "/api/v1/devices/1/extra/",
        "/api/v1/fabric-managers/1/explode/",
        "/api/v1/alerts/%0A/",
        "/api/v1/a%0Ab/c%0D/",
        "/api/v2/devices/",
        "/api/nope/",
    ],
)
def test_unknown_api_paths_are_json_404s(path: str, api_as: Any, admin_user: Any) -> None:
    assert_error(api_as(admin_user).get(path), 404, "not_found")
    assert_error(api_as(admin_user).post(path), 404, "not_found")
    assert_error(api_as(admin_user).generic("TRACE", path), 404, "not_found")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("who", "method", "path", "allow"),
    [
        (None, "TRACE", "/api/v1/auth/token/", "DELETE, OPTIONS, POST"),
        (None, "PUT", "/api/v1/devices/", "GET, HEAD, OPTIONS"),
        ("alice", "PUT", "/api/v1/hosts/", "GET, HEAD, OPTIONS"),
        ("alice", "DELETE", "/api/v1/simulator/faults/", "OPTIONS, POST"),
        ("admin_user", "PATCH", "/api/v1/devices/1/maintenance/", "GET, HEAD, OPTIONS, POST"),
        (None, "POST", "/api/schema/", "GET, HEAD, OPTIONS"),
    ],
)
def test_a_method_an_endpoint_lacks_is_405_for_everybody_before_anything_else(
    who: str | None, method: str, path: str, allow: str, api: Any, request: Any
) -> None:
    """Before authentication (no 401) and before hiding operators' endpoints (no 404)."""
    if who is not None:
        api.force_authenticate(request.getfixturevalue(who))
    response = api.generic(method, path)
    assert_error(response, 405, "method_not_allowed")
    assert response["Allow"] == allow


@pytest.mark.django_db
def test_operators_endpoints_still_hide_from_members(api_as: Any, alice: Any) -> None:
    assert_error(api_as(alice).get("/api/v1/hosts/"), 404, "not_found")


@pytest.mark.django_db
def test_the_api_root_lists_every_resource(api_as: Any, alice: Any) -> None:
    body = api_as(alice).get("/api/v1/").json()
    assert {"pools", "devices", "hosts", "jobs", "fabric-managers", "power-feeds"} <= set(body)

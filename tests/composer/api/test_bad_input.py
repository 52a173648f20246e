"""Hostile and careless input answers a 4xx with the error shape, never a 500 or worse:
deep nesting, unstorable text, huge bodies, forms and multipart, unprintable names."""

from __future__ import annotations

import json
from typing import Any

import pytest

from composer.models import Composition, Template
from fabric.models import Device, FabricManager, Switch
from tests.support.api import assert_error

pytestmark = pytest.mark.django_db

DEEP_ARRAY = "[" * 100_000 + "]" * 100_000
DEEP_OBJECT = '{"a":' * 5_000 + "1" + "}" * 5_000
# Deep enough to pass json.loads, too deep for the API.
NESTED_40 = '{"name": "x", "spec": ' + '{"a": ' * 40 + "1" + "}" * 40 + "}"
FAULT = "/api/v1/simulator/faults/"
COMPOSE = "/api/v1/compositions/"
PREVIEW = "/api/v1/compositions/preview/"
TOKEN = "/api/v1/auth/token/"


def _json(api: Any, url: str, body: str) -> Any:
    return api.post(url, data=body, content_type="application/json")


@pytest.mark.parametrize("body", [DEEP_ARRAY, DEEP_OBJECT, NESTED_40], ids=["array", "obj", "40"])
@pytest.mark.parametrize("url", [COMPOSE, PREVIEW, FAULT])
def test_deeply_nested_json_is_a_parse_error(
    api_as: Any, admin_user: Any, alice: Any, url: str, body: str
) -> None:
    user = admin_user if url == FAULT else alice
    error = assert_error(_json(api_as(user), url, body), 400, "parse_error")
    assert "nested more than 32 levels" in error["detail"]


@pytest.mark.parametrize("body", [DEEP_ARRAY, DEEP_OBJECT], ids=["array", "object"])
def test_deep_json_to_the_anonymous_token_endpoint_is_a_parse_error(api: Any, body: str) -> None:
    assert_error(_json(api, TOKEN, body), 400, "parse_error")


@pytest.mark.parametrize(
    "target_id", ["cxl\u0000spine", "cxl\ud800spine"], ids=["nul", "lone-surrogate"]
)
def test_unstorable_text_in_a_fault_target_is_a_field_error(
    api_as: Any, admin_user: Any, synced: FabricManager, target_id: str
) -> None:
    body = json.dumps({"target_type": "switch", "target_id": target_id, "action": "fail"})
    error = assert_error(_json(api_as(admin_user), FAULT, body), 400, "invalid", field="target_id")
    assert "cannot be stored" in error["detail"]


def test_unstorable_text_deep_in_a_spec_names_the_place(api_as: Any, alice: Any) -> None:
    body = '{"name": "x", "spec": {"items": [{"kind": "gpu", "model": "H\\u0000"}]}}'
    assert_error(_json(api_as(alice), PREVIEW, body), 400, "invalid", field="spec.items[0].model")


def test_a_body_over_the_limit_is_413_before_it_is_parsed(
    api_as: Any, alice: Any, settings: Any
) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = json.dumps({"name": "x" * 2000, "template": "t"})
    error = assert_error(_json(api_as(alice), COMPOSE, body), 413, "request_too_large")
    assert "at most 1,000 bytes" in error["detail"]
    assert not Composition.objects.exists()


def test_a_body_without_a_length_is_read_no_further_than_the_limit(settings: Any) -> None:
    """A stream longer than its declared length (or without one) is cut at the limit."""
    from io import BytesIO

    from composer.api.parsers import JSONParser, RequestTooLarge

    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10
    stream = BytesIO(b'{"a": "' + b"x" * 10_000 + b'"}')
    with pytest.raises(RequestTooLarge):
        JSONParser().parse(stream, parser_context={})
    assert stream.tell() == 11


@pytest.mark.parametrize(
    "content_type", ["multipart/form-data; boundary=xyz", "application/x-www-form-urlencoded"]
)
@pytest.mark.parametrize("url", [COMPOSE, PREVIEW, FAULT, TOKEN])
def test_form_and_multipart_bodies_are_415_with_the_error_shape(
    api_as: Any, api: Any, admin_user: Any, alice: Any, url: str, content_type: str
) -> None:
    client = api if url == TOKEN else api_as(admin_user if url == FAULT else alice)
    body = "--xyz--\r\n" if content_type.startswith("multipart") else "on=1"
    response = client.generic("POST", url, data=body, content_type=content_type)
    assert_error(response, 415, "unsupported_media_type")


@pytest.mark.parametrize("body", ["", "--xyz--\r\n", "garbage"], ids=["empty", "no-parts", "junk"])
def test_an_empty_or_broken_multipart_body_is_415(
    api_as: Any, alice: Any, synced: FabricManager, body: str
) -> None:
    response = api_as(alice).generic(
        "POST", COMPOSE, data=body, content_type="multipart/form-data; boundary=xyz"
    )
    assert_error(response, 415, "unsupported_media_type")
    assert not Composition.objects.exists()


def test_a_form_without_on_leaves_a_device_in_maintenance(
    api_as: Any, admin_user: Any, synced: FabricManager
) -> None:
    device = Device.objects.filter(kind="gpu").order_by("pk").first()
    url = f"/api/v1/devices/{device.pk}/maintenance/"
    api = api_as(admin_user)
    assert api.post(url, {"on": True}, format="json").status_code == 200
    response = api.post(url, data="reason=x", content_type="application/x-www-form-urlencoded")
    assert_error(response, 415, "unsupported_media_type")
    assert_error(api.post(url, {}, format="json"), 400, "invalid", field="on")
    device.refresh_from_db()
    assert device.state == "maintenance"


FORM_TYPES = ["application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/plain"]


@pytest.mark.parametrize("content_type", FORM_TYPES)
def test_an_empty_form_body_leaves_a_device_in_maintenance(
    api_as: Any, admin_user: Any, synced: FabricManager, content_type: str
) -> None:
    """No body is parsed at all, so only its declared type can refuse it."""
    device = Device.objects.filter(kind="gpu").order_by("pk").first()
    url = f"/api/v1/devices/{device.pk}/maintenance/"
    api = api_as(admin_user)
    assert api.post(url, {"on": True}, format="json").status_code == 200
    response = api.generic("POST", url, data="", content_type=content_type)
    error = assert_error(response, 415, "unsupported_media_type")
    assert content_type.split(";")[0] in error["detail"]
    device.refresh_from_db()
    assert device.state == "maintenance"


@pytest.mark.parametrize("method", ["PUT", "PATCH"])
def test_an_empty_form_body_to_a_template_is_415(api_as: Any, admin_user: Any, method: str) -> None:
    body = {"name": "t", "slug": "t", "spec": {"items": [{"kind": "gpu", "count": 1}]}}
    api = api_as(admin_user)
    assert api.post("/api/v1/templates/", body).status_code == 201
    response = api.generic(
        method, "/api/v1/templates/t/", data="", content_type="application/x-www-form-urlencoded"
    )
    assert_error(response, 415, "unsupported_media_type")
    assert Template.objects.get().name == "t"


def test_a_method_the_endpoint_lacks_is_405_before_the_media_type(api_as: Any, alice: Any) -> None:
    response = api_as(alice).generic(
        "PUT", COMPOSE, data="", content_type="application/x-www-form-urlencoded"
    )
    assert_error(response, 405, "method_not_allowed")


def test_endpoints_without_a_body_take_a_bare_post_or_an_empty_json_one(
    api_as: Any, admin_user: Any, synced: FabricManager
) -> None:
    """Sync, heal, decompose and acknowledge take no body: a POST without one and without a
    Content-Type (as `curl -X POST` and `fetch` send it) works, and so does an empty JSON one;
    a declared form type is refused like anywhere else."""
    url = f"/api/v1/fabric-managers/{synced.pk}/sync/"
    api = api_as(admin_user)
    request = api.post(url)
    assert "CONTENT_TYPE" not in request.wsgi_request.META
    assert request.status_code == 202, request.content
    assert api.generic("POST", url, data="", content_type="application/json").status_code == 202
    form = api.generic("POST", url, data="", content_type="application/x-www-form-urlencoded")
    assert_error(form, 415, "unsupported_media_type")


def test_a_body_without_a_content_type_is_415(api_as: Any, alice: Any) -> None:
    response = api_as(alice).generic("POST", PREVIEW, data='{"name": "x"}', content_type="")
    assert_error(response, 415, "unsupported_media_type")


def test_json_with_a_charset_is_taken(api_as: Any, alice: Any, synced: FabricManager) -> None:
    body = '{"name": "x", "spec": {"items": [{"kind": "gpu", "count": 1}]}}'
    response = api_as(alice).generic(
        "POST", PREVIEW, data=body, content_type="application/json; charset=utf-8"
    )
    assert response.status_code == 200, response.content


UNPRINTABLE = ["\x1b[31mred", "bell\x07", "nul\x00", "rtl\u202eevil", "two\nlines"]


@pytest.mark.parametrize("name", UNPRINTABLE)
def test_a_composition_name_with_control_characters_is_refused(
    api_as: Any, alice: Any, synced: FabricManager, name: str
) -> None:
    body = {"name": name, "spec": {"items": [{"kind": "gpu", "count": 1}]}}
    error = assert_error(api_as(alice).post(COMPOSE, body), 400, "invalid", field="name")
    assert "U+" in error["detail"] or "NUL" in error["detail"]
    assert not Composition.objects.exists()


@pytest.mark.parametrize(
    ("field", "value"),
    [("name", "\x1b[2Jwipe"), ("description", "ok\nbut\x1b[31mred")],
)
def test_a_template_with_control_characters_is_refused(
    api_as: Any, admin_user: Any, field: str, value: str
) -> None:
    body = {"name": "t", "slug": "t", "spec": {"items": [{"kind": "gpu", "count": 1}]}}
    body[field] = value
    assert_error(api_as(admin_user).post("/api/v1/templates/", body), 400, "invalid", field=field)
    assert not Template.objects.exists()


def test_a_template_description_may_span_lines(api_as: Any, admin_user: Any) -> None:
    body = {
        "name": "t",
        "slug": "t",
        "description": "Two GPUs.\n\tFor inference.",
        "spec": {"items": [{"kind": "gpu", "count": 1}]},
    }
    assert api_as(admin_user).post("/api/v1/templates/", body).status_code == 201


def test_a_quota_model_with_an_escape_is_refused(api_as: Any, admin_user: Any, acme: Any) -> None:
    body = {"tenant": acme.slug, "kind": "gpu", "model": "H100\x1b[0m", "max_count": 2}
    assert_error(api_as(admin_user).post("/api/v1/quotas/", body), 400, "invalid", field="model")


def test_a_maintenance_reason_with_an_escape_is_refused(
    api_as: Any, admin_user: Any, synced: FabricManager
) -> None:
    switch = Switch.objects.order_by("pk").first()
    url = f"/api/v1/switches/{switch.pk}/maintenance/"
    body = {"on": True, "reason": "firmware \x1b]0;pwned\x07"}
    assert_error(api_as(admin_user).post(url, body), 400, "invalid", field="reason")
    switch.refresh_from_db()
    assert switch.state != "maintenance"


def test_an_unknown_minimum_is_a_field_error_not_a_rejection(
    api_as: Any, alice: Any, synced: FabricManager
) -> None:
    spec = {"items": [{"kind": "gpu", "count": 1, "minima": {"bogus": 3}}]}
    for url in (COMPOSE, PREVIEW):
        error = assert_error(
            api_as(alice).post(url, {"name": "m", "spec": spec}),
            400,
            "invalid_spec",
            field="spec.items[0].minima.bogus",
        )
        assert "'bogus'" in error["detail"] and "memory_gib" in error["detail"]
    assert not Composition.objects.exists()


def test_a_minimum_on_a_number_the_devices_report_is_placed(
    api_as: Any, alice: Any, synced: FabricManager
) -> None:
    gpu = Device.objects.filter(kind="gpu").order_by("pk").first()
    number = next(k for k, v in gpu.attributes.items() if isinstance(v, int | float))
    spec = {"items": [{"kind": "gpu", "count": 1, "minima": {number: 0, "memory_gib": 1}}]}
    response = api_as(alice).post(PREVIEW, {"spec": spec})
    assert response.status_code == 200, response.content
    assert response.json()["ok"] is True


def test_same_switch_with_a_spread_across_switches_names_the_policy(
    api_as: Any, alice: Any, synced: FabricManager
) -> None:
    spec = {"items": [{"kind": "gpu", "count": 2}], "same_switch": True, "policy": "switch"}
    for url in (COMPOSE, PREVIEW):
        error = assert_error(
            api_as(alice).post(url, {"name": "s", "spec": spec}),
            400,
            "invalid_spec",
            field="spec.policy",
        )
        assert error["detail"].startswith("Spread across switches puts each device")
    assert not Composition.objects.exists()

"""The schema says what the API does: both audiences' shapes, strict JSON types, the error
responses each operation can give, bounds on parameters, and words for API users only."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.utils import timezone

from composer.api.serializers.spec import SPEC_PROPERTIES, SPEC_SCHEMA, spec_type_errors
from composer.services.health_poll import health_poll_run
from composer.specs import KEYS
from fabric.models import Device, FabricManager, Pool
from fabric.simulator.faults import fault_inject
from tests.support.api import assert_error, results
from tests.support.compose import composed

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema(api: Any) -> dict[str, Any]:
    response = api.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    return response.json()


def _component(schema: dict[str, Any], name: str) -> dict[str, Any]:
    component: dict[str, Any] = schema["components"]["schemas"][name]
    return component


@pytest.mark.parametrize(
    ("url", "shapes"),
    [
        ("/api/v1/devices/", ("Device", "TenantDevice")),
        ("/api/v1/pools/", ("OperatorPool", "Pool")),
        ("/api/v1/alerts/", ("Alert", "TenantAlert")),
    ],
)
def test_each_audience_s_shape_is_one_of_the_documented_two(
    schema: dict[str, Any],
    api_as: Any,
    admin_user: Any,
    alice: Any,
    synced: FabricManager,
    url: str,
    shapes: tuple[str, str],
) -> None:
    """Operators get every field of the first; members exactly the second, which is closed."""
    if url == "/api/v1/pools/":
        Pool.objects.create(slug="gpus", name="GPUs", kind="gpu")
    if url == "/api/v1/alerts/":
        from fabric.models import Alert, Switch

        switch = Switch.objects.order_by("pk").first()
        Alert.objects.create(
            manager=synced,
            source_type="switch",
            source_id=switch.pk,
            source_name=switch.name,
            rule="element_failed",
            severity="critical",
            message="Switch failed",
            opened_at=timezone.now(),
            last_seen_at=timezone.now(),
        )
    operator, tenant = (_component(schema, name) for name in shapes)
    assert tenant["additionalProperties"] is False
    for user, shape in ((admin_user, operator), (alice, tenant)):
        rows = results(api_as(user).get(url))
        if user == alice and url == "/api/v1/alerts/":
            continue  # alice's compositions are not hurt: she sees none, which is right
        assert rows, url
        assert set(shape["required"]) <= set(rows[0]) <= set(shape["properties"]), (url, user)
    listed = schema["paths"][url]["get"]["responses"]["200"]["content"]["application/json"]
    page = _component(schema, listed["schema"]["$ref"].rsplit("/", 1)[1])
    items = _component(schema, page["properties"]["results"]["items"]["$ref"].rsplit("/", 1)[1])
    assert [ref["$ref"].rsplit("/", 1)[1] for ref in items["oneOf"]] == list(shapes)


def test_the_spec_schema_covers_every_key_the_service_takes() -> None:
    assert set(KEYS) == set(SPEC_SCHEMA["properties"]) <= set(SPEC_PROPERTIES)
    assert SPEC_SCHEMA["additionalProperties"] is False


@pytest.mark.parametrize(
    ("spec", "where"),
    [
        ({"items": [{"kind": "gpu", "count": "2"}]}, "items[0].count"),
        ({"items": [{"kind": "gpu", "count": True}]}, "items[0].count"),
        (
            {"items": [{"kind": "gpu", "minima": {"memory_gib": "80"}}]},
            "items[0].minima.memory_gib",
        ),
        ({"items": [{"kind": "gpu", "model": 7}]}, "items[0].model"),
        ({"items": None}, "items"),
        ({"memory_gib": 1.5}, "memory_gib"),
        ({"memory_gib": None}, "memory_gib"),
        ({"host": True}, "host"),
        ({"policy": ""}, "policy"),
        ({"same_switch": 0}, "same_switch"),
        ({"self_heal": "true"}, "self_heal"),
    ],
)
def test_a_spec_value_of_another_json_type_is_refused_naming_it(
    spec: dict[str, Any], where: str, api_as: Any, alice: Any, synced: FabricManager
) -> None:
    assert where in spec_type_errors(spec)
    body = {"name": "x", "spec": spec}
    assert_error(
        api_as(alice).post("/api/v1/compositions/preview/", body),
        400,
        "invalid_spec",
        field=f"spec.{where}",
    )


def test_a_spec_of_the_schema_s_types_passes_the_type_check() -> None:
    spec = {
        "items": [{"kind": "gpu", "model": None, "count": 2, "minima": {"memory_gib": 80.5}}],
        "memory_gib": 512,
        "storage_tb": 1,
        "cores": 8,
        "host_memory_gib": 0,
        "host": 3,
        "max_latency_ns": None,
        "policy": "switch",
        "same_switch": False,
        "critical": True,
        "self_heal": False,
    }
    assert spec_type_errors(spec) == {}
    assert spec_type_errors({**spec, "host": "host-a-01"}) == {}


@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        ("/api/v1/auth/token/", {"username": 1, "password": "x"}, "username"),
        ("/api/v1/quotas/", {"tenant": "acme", "kind": "gpu", "model": 0}, "model"),
        ("/api/v1/templates/", {"name": 5, "slug": "t", "spec": {"cores": 1}}, "name"),
        (
            "/api/v1/templates/",
            {"name": "t", "slug": "t", "spec": {"cores": 1}, "is_active": 1},
            "is_active",
        ),
        ("/api/v1/compositions/preview/", {"template": 3}, "template"),
        ("/api/v1/compositions/preview/", {"spec": {"cores": 1}, "host": 1.5}, "host"),
        ("DEVICE", {"on": "yes"}, "on"),
        ("DEVICE", {"on": 1}, "on"),
        ("DEVICE", {"on": True, "reason": 0}, "reason"),
    ],
)
def test_body_fields_take_only_their_json_type(
    url: str,
    body: dict[str, Any],
    field: str,
    api_as: Any,
    admin_user: Any,
    acme: Any,
    synced: FabricManager,
) -> None:
    if url == "DEVICE":
        url = f"/api/v1/devices/{Device.objects.order_by('pk').first().pk}/maintenance/"
    assert_error(api_as(admin_user).post(url, body), 400, "invalid", field=field)


def test_operators_endpoints_document_their_404(schema: dict[str, Any]) -> None:
    for path in ("/api/v1/topology/", "/api/v1/paths/", "/api/v1/failure-domains/impact/"):
        assert "404" in schema["paths"][path]["get"]["responses"], path
    assert "404" not in schema["paths"]["/api/v1/compositions/preview/"]["post"]["responses"]


def test_operations_with_a_body_document_413_and_415(schema: dict[str, Any]) -> None:
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            if isinstance(operation, dict) and "requestBody" in operation:
                assert {"413", "415"} <= set(operation["responses"]), (method, path)
                assert set(operation["requestBody"]["content"]) == {"application/json"}


def test_every_post_put_and_patch_documents_415(schema: dict[str, Any]) -> None:
    """A declared form type is refused even where no body is taken (sync, heal, ...)."""
    for path, methods in schema["paths"].items():
        for method in {"post", "put", "patch"} & set(methods):
            assert "415" in methods[method]["responses"], (method, path)
    sync = schema["paths"]["/api/v1/fabric-managers/{id}/sync/"]["post"]
    assert "requestBody" not in sync and "413" not in sync["responses"]


def test_optional_query_parameters_may_be_empty_and_ids_are_bounded(
    schema: dict[str, Any],
) -> None:
    parameters = {p["name"]: p for p in schema["paths"]["/api/v1/devices/"]["get"]["parameters"]}
    assert all(p["allowEmptyValue"] for p in parameters.values())
    assert parameters["manager"]["schema"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 2**63 - 1,
    }
    assert parameters["enclosure"]["schema"]["type"] == "string"
    assert parameters["q"]["schema"]["maxLength"] == 100
    alerts = {p["name"]: p for p in schema["paths"]["/api/v1/alerts/"]["get"]["parameters"]}
    assert alerts["is_acknowledged"]["schema"]["type"] == "boolean"
    assert alerts["since"]["schema"] == {"type": "string", "format": "date-time"}


# What a reader of the API docs cannot follow: the house style, repository files, code paths.
INTERNAL = re.compile(
    r"STYLE|\.py\b|docs/|shared/|objects\.for_user|get_queryset|"
    r"\b(?:composer|fabric)\.[a-z_]+\.[a-z_]+|\b(?:composer|fabric)\.(?:services|selectors|api)\b"
)


def test_the_schema_speaks_to_api_users_never_of_the_code(schema: dict[str, Any]) -> None:
    texts: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("description", "summary", "title") and isinstance(value, str):
                    texts.append(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    leaks = [text for text in texts if INTERNAL.search(text)]
    assert not leaks, json.dumps(leaks, indent=1)


def test_a_real_alert_s_blast_radius_is_the_documented_one_for_each_audience(
    schema: dict[str, Any], api_as: Any, admin_user: Any, alice: Any, acme: Any, synced: Any
) -> None:
    """The radius an alert stores (lost and degraded, the headline) and the cut a member gets
    hold the schema's required keys and no undocumented ones, at every depth that has a
    component of its own."""
    composition = composed(
        tenant=acme,
        user=alice,
        name="acme-infer",
        spec={"items": [{"kind": "gpu", "model": "L40S 48GB", "count": 1}]},
    )
    chassis = composition.allocations.get(device__kind="gpu").device.enclosure
    fault_inject(manager=synced, target_type="enclosure", target_id=chassis.name, action="fail")
    assert health_poll_run(manager=synced).opened
    for user, shape in ((admin_user, "BlastRadius"), (alice, "TenantBlastRadius")):
        component = _component(schema, shape)
        rows = results(api_as(user).get("/api/v1/alerts/"))
        assert rows, user
        for row in rows:
            radius = row["blast_radius"]
            assert (
                set(component.get("required", [])) <= set(radius) <= set(component["properties"])
            ), (user, sorted(radius))
            reference = _component(schema, "CompositionRef")
            for ref in radius.get("compositions", []) + radius.get("compositions_degraded", []):
                assert set(reference["required"]) <= set(ref) <= set(reference["properties"])
    assert _component(schema, "TenantBlastRadius")["additionalProperties"] is False

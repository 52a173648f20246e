"""/api/v1/templates/: everyone signed in reads; operators write."""

from __future__ import annotations

from typing import Any

import pytest

from composer.models import Template
from tests.support.api import assert_error, count_queries, results

pytestmark = pytest.mark.django_db

URL = "/api/v1/templates/"
SPEC = {"items": [{"kind": "gpu", "count": 2}], "memory_gib": 1024, "max_latency_ns": 600}


@pytest.fixture
def templates(db: None) -> dict[str, Template]:
    out = {}
    for slug, active in (("inference-2gpu-bigmem", True), ("retired", False)):
        template = Template(name=slug, slug=slug, spec=SPEC, is_active=active)
        template.full_clean()
        template.save()
        out[slug] = template
    return out


@pytest.mark.parametrize(
    ("persona", "visible"),
    [
        ("admin_user", {"inference-2gpu-bigmem", "retired"}),
        ("alice", {"inference-2gpu-bigmem"}),
        ("bob", {"inference-2gpu-bigmem"}),
        ("carol", {"inference-2gpu-bigmem"}),
    ],
)
def test_everyone_signed_in_reads_templates_operators_also_inactive_ones(
    persona: str, visible: set[str], templates: Any, api_as: Any, request: pytest.FixtureRequest
) -> None:
    client = api_as(request.getfixturevalue(persona))
    assert {row["slug"] for row in results(client.get(URL))} == visible
    detail = client.get(f"{URL}inference-2gpu-bigmem/").json()
    assert detail["spec"]["memory_gib"] == 1024 and detail["spec"]["policy"] == "none"


def test_an_inactive_template_is_404_for_members(templates: Any, alice: Any, api_as: Any) -> None:
    assert_error(api_as(alice).get(f"{URL}retired/"), 404, "not_found")


@pytest.mark.parametrize("persona", ["alice", "bob", "carol"])
def test_members_may_not_write_templates(
    persona: str, templates: Any, api_as: Any, request: pytest.FixtureRequest
) -> None:
    client = api_as(request.getfixturevalue(persona))
    body = {"name": "x", "slug": "x", "spec": SPEC}
    assert_error(client.post(URL, body, format="json"), 403, "permission_denied")
    assert_error(
        client.patch(f"{URL}inference-2gpu-bigmem/", {"is_active": False}, format="json"),
        403,
        "permission_denied",
    )
    assert_error(client.delete(f"{URL}inference-2gpu-bigmem/"), 403, "permission_denied")
    assert (
        Template.objects.count() == 2
        and Template.objects.get(slug="inference-2gpu-bigmem").is_active
    )


def test_operators_create_change_and_delete_templates_stored_normalised(
    admin_user: Any, api_as: Any
) -> None:
    client = api_as(admin_user)
    response = client.post(
        URL,
        {
            "name": "Training",
            "slug": "training-8gpu",
            "spec": {"items": [{"kind": "gpu", "count": 8}]},
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    assert response.json()["spec"]["items"] == [
        {"kind": "gpu", "model": None, "count": 8, "minima": {}}
    ]
    response = client.patch(f"{URL}training-8gpu/", {"description": "8 GPUs"}, format="json")
    assert response.status_code == 200 and response.json()["description"] == "8 GPUs"
    assert client.delete(f"{URL}training-8gpu/").status_code == 204
    assert not Template.objects.exists()


@pytest.mark.parametrize(
    "spec",
    [
        {"items": [{"kind": "gpu", "count": -1}]},
        {"memory_gib": "lots"},
        {},
        "nope",
        {"items": [{"kind": "gpu", "count": "8"}]},  # a string, where the schema says integer
        {"policy": ""},
        {"same_switch": 1},
    ],
)
def test_a_bad_template_spec_is_a_field_error(admin_user: Any, api_as: Any, spec: Any) -> None:
    body = assert_error(
        api_as(admin_user).post(URL, {"name": "x", "slug": "x", "spec": spec}, format="json"),
        400,
        "invalid",
        field="spec",
    )
    assert body["detail"]
    assert not Template.objects.exists()


def test_the_template_list_costs_the_same_queries_for_few_and_many(
    templates: Any, admin_user: Any, api_as: Any
) -> None:
    client = api_as(admin_user)
    few = count_queries(lambda: client.get(URL))
    for i in range(5):
        Template.objects.create(name=f"t{i}", slug=f"t{i}", spec=SPEC)
    assert count_queries(lambda: client.get(URL)) == few

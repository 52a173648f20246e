"""/api/v1/compositions/: list, detail, request (202 / 422), preview, decompose, jobs."""

from __future__ import annotations

from typing import Any

import pytest

from composer.choices import CompositionState, JobKind, JobStatus
from composer.models import Allocation, Composition, Job, Quota, StateChange, Template
from composer.services.compositions import composition_request
from fabric.choices import DeviceState
from fabric.models import Device, FabricManager
from tests.support.api import assert_error, count_queries, results

pytestmark = pytest.mark.django_db

URL = "/api/v1/compositions/"
ONE_GPU = {"items": [{"kind": "gpu", "count": 1}]}
TWO_GPUS_AND_MEMORY = {"items": [{"kind": "gpu", "count": 2}], "memory_gib": 256}


def nothing_written() -> bool:
    return not (
        Composition.objects.exists()
        or Allocation.objects.exists()
        or Job.objects.filter(kind=JobKind.COMPOSE).exists()
        or StateChange.objects.exists()
    )


@pytest.fixture
def acme_ready(
    synced: FabricManager, acme: Any, alice: Any, django_capture_on_commit_callbacks: Any
) -> Composition:
    with django_capture_on_commit_callbacks(execute=True):
        composition = composition_request(
            tenant=acme, requested_by=alice, spec=TWO_GPUS_AND_MEMORY, name="acme-1"
        )
    composition.refresh_from_db()
    assert composition.state == CompositionState.READY, composition.failure_reason
    return composition


@pytest.fixture
def globex_placing(synced: FabricManager, globex: Any, carol: Any) -> Composition:
    """Placed and claimed, its compose job not run (no on-commit): still PLACING."""
    return composition_request(tenant=globex, requested_by=carol, spec=ONE_GPU, name="globex-1")


@pytest.fixture
def inference(db: None) -> Template:
    template = Template(
        name="inference-2gpu-bigmem",
        slug="inference-2gpu-bigmem",
        spec={"items": [{"kind": "gpu", "count": 2}], "memory_gib": 512},
    )
    template.full_clean()
    template.save()
    return template


# --- list and detail ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("persona", "visible"),
    [
        ("admin_user", {"acme-1", "globex-1"}),
        ("alice", {"acme-1"}),
        ("bob", {"acme-1"}),
        ("carol", {"globex-1"}),
    ],
)
def test_each_persona_lists_only_the_compositions_it_may_see(
    persona: str,
    visible: set[str],
    acme_ready: Composition,
    globex_placing: Composition,
    api_as: Any,
    request: pytest.FixtureRequest,
) -> None:
    rows = results(api_as(request.getfixturevalue(persona)).get(URL))
    assert {row["name"] for row in rows} == visible
    for row in rows:
        assert row["job"] and "/api/v1/jobs/" in row["job"]


@pytest.mark.parametrize("persona", ["admin_user", "alice", "bob"])
def test_the_detail_has_devices_plan_history_and_job_but_no_fabric_internals(
    persona: str, acme_ready: Composition, api_as: Any, request: pytest.FixtureRequest
) -> None:
    response = api_as(request.getfixturevalue(persona)).get(f"{URL}{acme_ready.pk}/")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["state"] == "ready" and body["host"]["name"] == acme_ready.host.name
    kinds = sorted(a["device"]["kind"] for a in body["allocations"])
    assert kinds == ["cxl_memory", "gpu", "gpu"]
    assert {a["device"]["model"] for a in body["allocations"] if a["device"]["kind"] == "gpu"}
    assert [a["gib"] for a in body["allocations"] if a["gib"]] == [256]
    assert body["placement"]["ok"] is True and body["placement"]["explanation"]
    assert body["placement"]["score"] == pytest.approx(acme_ready.score)
    assert [h["to_state"] for h in body["history"]] == [
        "requested",
        "placing",
        "binding",
        "ready",
    ]
    job = api_as(request.getfixturevalue(persona)).get(body["job"]).json()
    assert job["kind"] == "compose" and job["status"] == "succeeded" and job["log_lines"]
    text = response.content.decode()
    for internal in ('"serial"', '"binding_id"', '"enclosure"', '"device:', '"external_id"'):
        assert internal not in text, internal
    serial = Device.objects.filter(kind="gpu").exclude(serial="").first()
    assert serial is None or serial.serial not in text


def test_carol_never_sees_acmes_composition(
    acme_ready: Composition, carol: Any, api_as: Any
) -> None:
    assert_error(api_as(carol).get(f"{URL}{acme_ready.pk}/"), 404, "not_found")
    assert_error(api_as(carol).post(f"{URL}{acme_ready.pk}/decompose/"), 404, "not_found")
    assert Composition.objects.get(pk=acme_ready.pk).state == CompositionState.READY


def test_anonymous_callers_get_401(acme_ready: Composition, api: Any) -> None:
    assert_error(api.get(URL), 401, "not_authenticated")
    assert_error(api.post(URL, {}, format="json"), 401, "not_authenticated")


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("state=ready", {"acme-1"}),
        ("state=placing&state=ready", {"acme-1", "globex-1"}),
        ("tenant=globex", {"globex-1"}),
        ("q=ACME", {"acme-1"}),
        ("template=nothing-like-it", set()),
    ],
)
def test_operators_filter_compositions(
    query: str,
    names: set[str],
    acme_ready: Composition,
    globex_placing: Composition,
    admin_user: Any,
    api_as: Any,
) -> None:
    rows = results(api_as(admin_user).get(f"{URL}?{query}"))
    assert {row["name"] for row in rows} == names


def test_a_member_filtering_on_another_tenant_gets_an_empty_list(
    acme_ready: Composition, globex_placing: Composition, alice: Any, api_as: Any
) -> None:
    assert results(api_as(alice).get(f"{URL}?tenant=globex")) == []


def test_a_bad_state_filter_names_the_parameter(admin_user: Any, api_as: Any) -> None:
    assert_error(api_as(admin_user).get(f"{URL}?state=sideways"), 400, "invalid", field="state")


def test_the_list_costs_the_same_queries_for_few_and_many_compositions(
    synced: FabricManager, acme: Any, alice: Any, admin_user: Any, api_as: Any
) -> None:
    client = api_as(admin_user)
    composition_request(tenant=acme, requested_by=alice, spec=ONE_GPU, name="c-0")
    few = count_queries(lambda: client.get(URL))
    for i in range(1, 4):
        composition_request(tenant=acme, requested_by=alice, spec=ONE_GPU, name=f"c-{i}")
    many = count_queries(lambda: client.get(URL))
    assert few == many
    assert len(results(client.get(URL))) == 4


def test_the_detail_costs_a_fixed_number_of_queries(
    acme_ready: Composition, admin_user: Any, api_as: Any
) -> None:
    client = api_as(admin_user)
    assert count_queries(lambda: client.get(f"{URL}{acme_ready.pk}/")) <= 6


# --- request --------------------------------------------------------------------------------


def test_alice_composes_gets_202_with_the_job_url_and_it_becomes_ready(
    synced: FabricManager,
    alice: Any,
    api_as: Any,
    driver: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = api_as(alice).post(
            URL, {"name": "web", "spec": TWO_GPUS_AND_MEMORY}, format="json"
        )

    assert response.status_code == 202, response.content
    body = response.json()
    assert body["state"] == "placing" and body["tenant"]["slug"] == "acme"
    assert response["Location"].endswith(f"{URL}{body['id']}/")
    job = Job.objects.get(target_type="composition", target_id=body["id"])
    assert body["job"].endswith(f"/api/v1/jobs/{job.pk}/")
    composition = Composition.objects.get(pk=body["id"])
    assert composition.state == CompositionState.READY, composition.failure_reason
    assert composition.requested_by == alice
    assert {b.binding_id for b in driver.bindings()} == set(
        composition.allocations.values_list("binding_id", flat=True)
    )
    detail = api_as(alice).get(f"{URL}{body['id']}/").json()
    assert detail["state"] == "ready"
    job_body = api_as(alice).get(body["job"]).json()
    assert job_body["status"] == JobStatus.SUCCEEDED and job_body["log_lines"]
    assert job_body["tenant"]["slug"] == "acme"


def test_compose_and_decompose_jobs_are_listed_for_the_tenant_only(
    acme_ready: Composition,
    alice: Any,
    carol: Any,
    api_as: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = api_as(alice).post(f"{URL}{acme_ready.pk}/decompose/")
    assert response.status_code == 202, response.content
    kinds = {row["kind"] for row in results(api_as(alice).get("/api/v1/jobs/"))}
    assert kinds == {"compose", "decompose"}
    assert results(api_as(carol).get("/api/v1/jobs/")) == []


def test_a_template_by_slug_composes(
    synced: FabricManager, inference: Template, alice: Any, api_as: Any
) -> None:
    response = api_as(alice).post(URL, {"name": "infer", "template": inference.slug}, format="json")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["template"] == inference.slug and body["spec"]["memory_gib"] == 512


def test_a_host_by_name_is_honoured(synced: FabricManager, alice: Any, api_as: Any) -> None:
    from fabric.models import Host

    host = Host.objects.order_by("name").last()
    response = api_as(alice).post(
        URL, {"name": "pinned", "spec": ONE_GPU, "host": host.name}, format="json"
    )
    assert response.status_code == 202, response.content
    assert response.json()["host"]["name"] == host.name


def test_bob_read_only_gets_403_and_nothing_is_written(
    synced: FabricManager, bob: Any, api_as: Any
) -> None:
    assert_error(
        api_as(bob).post(URL, {"name": "x", "spec": ONE_GPU}, format="json"),
        403,
        "permission_denied",
    )
    assert nothing_written()


def test_bob_cannot_decompose(acme_ready: Composition, bob: Any, api_as: Any) -> None:
    assert_error(api_as(bob).post(f"{URL}{acme_ready.pk}/decompose/"), 403, "permission_denied")
    assert not Job.objects.filter(kind=JobKind.DECOMPOSE).exists()


def test_operators_must_name_the_tenant(
    synced: FabricManager, globex: Any, admin_user: Any, api_as: Any
) -> None:
    client = api_as(admin_user)
    assert_error(
        client.post(URL, {"name": "x", "spec": ONE_GPU}, format="json"),
        400,
        "invalid",
        field="tenant",
    )
    assert nothing_written()
    response = client.post(URL, {"name": "x", "tenant": "globex", "spec": ONE_GPU}, format="json")
    assert response.status_code == 202 and response.json()["tenant"]["slug"] == "globex"


def test_a_member_cannot_compose_for_a_tenant_it_does_not_belong_to(
    synced: FabricManager, globex: Any, alice: Any, api_as: Any
) -> None:
    assert_error(
        api_as(alice).post(URL, {"name": "x", "tenant": "globex", "spec": ONE_GPU}, format="json"),
        400,
        "invalid",
        field="tenant",
    )
    assert nothing_written()


def test_a_member_of_several_tenants_must_name_one(
    synced: FabricManager, acme: Any, globex: Any, alice: Any, api_as: Any
) -> None:
    from composer.models import Membership

    Membership.objects.create(user=alice, tenant=globex, role="member")
    client = api_as(alice)
    assert_error(
        client.post(URL, {"name": "x", "spec": ONE_GPU}, format="json"),
        400,
        "invalid",
        field="tenant",
    )
    response = client.post(URL, {"name": "x", "tenant": "globex", "spec": ONE_GPU}, format="json")
    assert response.status_code == 202 and response.json()["tenant"]["slug"] == "globex"


def test_a_retry_with_the_same_idempotency_key_returns_the_first_result(
    synced: FabricManager, alice: Any, api_as: Any
) -> None:
    client = api_as(alice)
    body = {"name": "once", "spec": ONE_GPU}
    first = client.post(URL, body, format="json", HTTP_IDEMPOTENCY_KEY="retry-1")
    again = client.post(URL, body, format="json", HTTP_IDEMPOTENCY_KEY="retry-1")
    assert (first.status_code, again.status_code) == (202, 202)
    assert again.json()["id"] == first.json()["id"] and again.json()["job"] == first.json()["job"]
    assert Composition.objects.count() == 1 and Allocation.objects.count() == 1
    assert Job.objects.filter(kind=JobKind.COMPOSE).count() == 1
    other = client.post(
        URL, {**body, "name": "twice"}, format="json", HTTP_IDEMPOTENCY_KEY="retry-2"
    )
    assert other.status_code == 202 and other.json()["id"] != first.json()["id"]


def test_a_rejected_placement_answers_422_with_funnel_and_nearest_and_retries_the_same(
    synced: FabricManager, alice: Any, api_as: Any
) -> None:
    client = api_as(alice)
    body = {"name": "too-close", "spec": {**ONE_GPU, "max_latency_ns": 1}}
    first = client.post(URL, body, format="json", HTTP_IDEMPOTENCY_KEY="r-1")
    again = client.post(URL, body, format="json", HTTP_IDEMPOTENCY_KEY="r-1")

    for response in (first, again):
        assert response.status_code == 422, response.content
        payload = response.json()
        assert payload["code"] == "placement_rejected" and payload["detail"]
        assert payload["field"] is None and payload["errors"] == {}
        assert payload["rejection"]["ok"] is False and payload["rejection"]["funnel"]
        assert "nearest" in payload["rejection"] and payload["rejection"]["message"]
    assert first.json()["composition"] == again.json()["composition"]
    composition = Composition.objects.get()
    assert composition.state == CompositionState.REJECTED
    assert not Allocation.objects.exists() and not Job.objects.exists()
    detail = client.get(first.json()["composition"]).json()
    assert detail["state"] == "rejected" and detail["job"] is None


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({"spec": ONE_GPU}, "invalid_spec", "name"),
        ({"name": "x"}, "invalid", "template"),
        ({"name": "x", "template": "no-such-template"}, "invalid", "template"),
        ({"name": "x", "spec": "two gpus"}, "invalid", "spec"),
        (
            {"name": "x", "spec": {"items": [{"kind": "gpu", "count": -1}]}},
            "invalid_spec",
            "spec.items[0].count",
        ),
        (
            {"name": "x", "spec": {"items": [{"kind": "gpu", "count": 10**9}]}},
            "invalid_spec",
            "spec.items[0].count",
        ),
        (
            {"name": "x", "spec": {"items": [{"kind": "gpu", "count": 5}]}},
            "invalid_spec",
            "spec.items[0].count",
        ),
        (
            {"name": "x", "spec": {"items": [{"kind": "gpu", "model": "B300", "count": 1}]}},
            "invalid_spec",
            "spec.items[0].model",
        ),
        (
            {"name": "x", "spec": {"items": [{"kind": "quantum", "count": 1}]}},
            "invalid_spec",
            "spec.items[0].kind",
        ),
        ({"name": "x", "spec": {"memory_gib": "lots"}}, "invalid_spec", "spec.memory_gib"),
        ({"name": "x", "spec": {"memory_gib": 4096}}, "invalid_spec", "spec.memory_gib"),
        ({"name": "x", "spec": ONE_GPU, "host": "no-such-host"}, "invalid_spec", "host"),
        ({"name": "x", "spec": ONE_GPU, "host": "999999"}, "invalid_spec", "host"),
        ({"name": "x", "spec": {**ONE_GPU, "colour": "red"}}, "invalid_spec", "spec.colour"),
    ],
)
def test_bad_input_names_the_field_and_creates_nothing(
    synced: FabricManager, alice: Any, api_as: Any, body: dict[str, Any], code: str, field: str
) -> None:
    assert_error(api_as(alice).post(URL, body, format="json"), 400, code, field=field)
    assert nothing_written()
    assert set(Device.objects.values_list("state", flat=True)) == {DeviceState.FREE}


def test_preview_of_a_gpu_share_says_the_share_of_each_device(
    synced: FabricManager, api_as: Any, alice: Any
) -> None:
    response = api_as(alice).post(
        f"{URL}preview/", {"spec": {"items": [{"kind": "gpu", "share": 250}]}}, format="json"
    )
    assert response.status_code == 200, response.content
    plan = response.json()
    assert [(d["kind"], d["share"]) for d in plan["devices"]] == [("gpu", 250)]
    assert nothing_written()


def test_a_request_over_quota_is_409_naming_quota_and_excess(
    synced: FabricManager, acme: Any, alice: Any, api_as: Any
) -> None:
    Quota.objects.create(tenant=acme, kind="gpu", max_count=1)
    body = assert_error(
        api_as(alice).post(URL, {"name": "x", "spec": TWO_GPUS_AND_MEMORY}, format="json"),
        409,
        "quota_exceeded",
        field="spec.items[0].count",
    )
    assert "GPU quota of Acme by 1" in body["detail"]
    assert nothing_written()


# --- preview --------------------------------------------------------------------------------


@pytest.mark.parametrize("persona", ["alice", "bob"])
def test_preview_shows_the_plan_and_writes_nothing(
    persona: str, synced: FabricManager, api_as: Any, request: pytest.FixtureRequest
) -> None:
    response = api_as(request.getfixturevalue(persona)).post(
        f"{URL}preview/", {"spec": TWO_GPUS_AND_MEMORY}, format="json"
    )
    assert response.status_code == 200, response.content
    plan = response.json()
    assert plan["ok"] is True and plan["host_name"] and plan["explanation"]
    assert len(plan["devices"]) == 2 and plan["memory"][0]["gib"] == 256
    assert "device:" not in response.content.decode()
    assert nothing_written()
    assert set(Device.objects.values_list("state", flat=True)) == {DeviceState.FREE}


def test_preview_of_a_template_shows_the_rejection_with_funnel_and_nearest(
    synced: FabricManager, inference: Template, alice: Any, api_as: Any
) -> None:
    response = api_as(alice).post(
        f"{URL}preview/",
        {"template": inference.slug, "spec": {"max_latency_ns": 1}},
        format="json",
    )
    assert response.status_code == 200, response.content
    plan = response.json()
    assert plan["ok"] is False and plan["funnel"] and plan["message"] and "nearest" in plan
    assert nothing_written()


def test_preview_bad_input_names_the_field(synced: FabricManager, carol: Any, api_as: Any) -> None:
    assert_error(
        api_as(carol).post(f"{URL}preview/", {"spec": {"memory_gib": "lots"}}, format="json"),
        400,
        "invalid_spec",
        field="spec.memory_gib",
    )
    assert nothing_written()


def test_preview_of_named_devices_explains_the_choice(
    synced: FabricManager, alice: Any, api_as: Any
) -> None:
    gpu = Device.objects.filter(kind="gpu").order_by("name").first()
    assert gpu is not None
    response = api_as(alice).post(
        f"{URL}preview/", {"spec": {"devices": [{"device": gpu.name}]}}, format="json"
    )
    assert response.status_code == 200, response.content
    plan = response.json()
    assert [d["name"] for d in plan["devices"]] == [gpu.name]
    assert plan["explanation"][0].startswith("Named devices taken as asked, on host ")
    assert nothing_written()


def test_a_named_device_of_the_wrong_type_names_the_field(
    synced: FabricManager, alice: Any, api_as: Any
) -> None:
    assert_error(
        api_as(alice).post(
            f"{URL}preview/", {"spec": {"devices": [{"device": True}]}}, format="json"
        ),
        400,
        "invalid_spec",
        field="spec.devices[0].device",
    )


# --- decompose ------------------------------------------------------------------------------


def test_alice_decomposes_with_202_and_the_job_and_it_is_released(
    acme_ready: Composition,
    alice: Any,
    api_as: Any,
    driver: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = api_as(alice).post(f"{URL}{acme_ready.pk}/decompose/")
    assert response.status_code == 202, response.content
    job = response.json()
    assert job["kind"] == "decompose" and response["Location"] == job["url"]
    acme_ready.refresh_from_db()
    assert acme_ready.state == CompositionState.RELEASED
    assert not list(driver.bindings())
    assert api_as(alice).get(f"{URL}{acme_ready.pk}/").json()["job"] == job["url"]


def test_decompose_while_binding_is_409_composition_busy(
    globex_placing: Composition, carol: Any, api_as: Any
) -> None:
    assert_error(
        api_as(carol).post(f"{URL}{globex_placing.pk}/decompose/"),
        409,
        "composition_busy",
        field="state",
    )
    assert not Job.objects.filter(kind=JobKind.DECOMPOSE).exists()


def test_decompose_of_a_released_composition_is_409_invalid_transition(
    acme_ready: Composition, admin_user: Any, api_as: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = api_as(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(f"{URL}{acme_ready.pk}/decompose/").status_code == 202
    assert_error(
        client.post(f"{URL}{acme_ready.pk}/decompose/"), 409, "invalid_transition", field="state"
    )

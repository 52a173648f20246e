"""Composing through Redfish: POST /Systems (constrained and specific), DELETE (decompose),
202 and the task monitor, If-Match, and errors that name the property."""

from __future__ import annotations

from typing import Any

import pytest

from composer.choices import CompositionState, JobKind, JobStatus
from composer.models import Allocation, Composition, Job, Quota, StateChange
from fabric.models import Device, FabricManager, Host

pytestmark = pytest.mark.django_db
V1 = "/redfish/v1"
SYSTEMS = f"{V1}/Systems"
H100 = "H100 PCIe 80GB"
TWO_H100_AND_A_TIB = {
    "Name": "trainer",
    "Processors": {
        "Members": [{"@Redfish.RequestedCount": 2, "ProcessorType": "GPU", "Model": H100}]
    },
    "Memory": {"Members": [{"@Redfish.RequestedCount": 1, "CapacityMiB": 512 * 1024}]},
}


def error_ids(answer: Any) -> list[str]:
    body = answer.json()["error"]
    assert body["message"]
    return [
        info["MessageId"].split(".", 1)[0] + "." + info["MessageId"].rsplit(".", 1)[-1]
        for info in body["@Message.ExtendedInfo"]
    ]


def related(answer: Any) -> list[str]:
    return answer.json()["error"]["@Message.ExtendedInfo"][0].get("RelatedProperties", [])


def composed(client: Any, body: dict[str, Any], capture: Any) -> tuple[Any, Composition]:
    """POST the body with the compose job run (eager, after commit); the answer and the
    composition it made."""
    with capture(execute=True):
        answer = client.post(SYSTEMS, body)
    assert answer.status_code == 202, answer.content
    created = answer.json()["Links"]["CreatedResources"][0]["@odata.id"]
    return answer, Composition.objects.get(pk=int(created.rsplit("/", 1)[1]))


def test_a_constrained_request_composes_two_gpus_of_a_model_and_memory_through_the_job_path(
    synced: FabricManager, alice: Any, redfish_as: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = redfish_as(alice)
    answer, composition = composed(client, TWO_H100_AND_A_TIB, django_capture_on_commit_callbacks)
    monitor = answer["Location"]
    assert monitor.endswith("/Monitor") and answer.json()["TaskMonitor"] == monitor
    composition.refresh_from_db()
    assert composition.state == CompositionState.READY, composition.failure_reason
    assert composition.tenant.slug == "acme" and composition.name == "trainer"
    held = Allocation.objects.filter(composition=composition, released_at__isnull=True)
    assert sorted(a.device.model for a in held if a.device.kind == "gpu") == [H100, H100]
    assert sum(a.gib or 0 for a in held) == 512
    job = Job.objects.get(kind=JobKind.COMPOSE, target_id=composition.pk)
    assert job.status == JobStatus.SUCCEEDED
    assert StateChange.objects.filter(composition=composition, to_state="ready").exists()
    done = client.get(monitor)
    assert done.status_code == 201, done.content
    assert done["Location"] == f"{SYSTEMS}/{composition.pk}"
    blocks = [b["@odata.id"] for b in done.json()["Links"]["ResourceBlocks"]]
    assert len(blocks) == 4  # the host, two GPUs, the memory device
    task = client.get(answer.json()["@odata.id"]).json()
    assert (task["TaskState"], task["PercentComplete"]) == ("Completed", 100)


def test_a_specific_request_composes_exactly_the_named_blocks(
    pooled: FabricManager, alice: Any, redfish_as: Any, django_capture_on_commit_callbacks: Any
) -> None:
    gpu = Device.objects.filter(kind="gpu", model=H100).order_by("pk").last()
    assert gpu is not None
    host = Host.objects.order_by("pk").first()
    assert host is not None
    body = {
        "Name": "exact",
        "Links": {
            "ResourceBlocks": [
                {"@odata.id": f"{V1}/CompositionService/ResourceBlocks/host-{host.pk}"},
                {"@odata.id": f"{V1}/CompositionService/ResourceBlocks/gpu-{gpu.pk}"},
            ]
        },
    }
    client = redfish_as(alice)
    _, composition = composed(client, body, django_capture_on_commit_callbacks)
    composition.refresh_from_db()
    assert composition.state == CompositionState.READY, composition.failure_reason
    assert composition.host_id == host.pk
    assert [a.device_id for a in composition.allocations.all()] == [gpu.pk]

    again = client.post(SYSTEMS, {**body, "Name": "again"})
    assert again.status_code == 409
    assert error_ids(again) == ["Composition.ResourceBlockInUse"]
    assert related(again) == ["#/Links/ResourceBlocks/1"]


def test_delete_decomposes_with_a_task_and_a_stale_if_match_is_refused(
    synced: FabricManager, alice: Any, redfish_as: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = redfish_as(alice)
    _, composition = composed(client, TWO_H100_AND_A_TIB, django_capture_on_commit_callbacks)
    path = f"{SYSTEMS}/{composition.pk}"
    read = client.get(path)
    assert read.status_code == 200
    tag = read["ETag"]
    assert client.get(path)["ETag"] == tag  # stable while nothing changes
    stale = client.delete(path, If_Match='W/"not-the-one"')
    assert stale.status_code == 412
    assert error_ids(stale) == ["Base.PreconditionFailed"]
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.delete(path, If_Match=tag)
    assert answer.status_code == 202, answer.content
    composition.refresh_from_db()
    assert composition.state == CompositionState.RELEASED
    assert not Allocation.objects.filter(composition=composition, released_at__isnull=True)
    assert client.get(answer["Location"]).status_code == 204
    assert client.get(path).status_code == 404


def test_a_task_monitor_answers_202_while_the_job_is_queued(
    synced: FabricManager, alice: Any, redfish_as: Any
) -> None:
    client = redfish_as(alice)
    answer = client.post(SYSTEMS, TWO_H100_AND_A_TIB)  # no on-commit: the job stays queued
    assert answer.status_code == 202
    waiting = client.get(answer["Location"])
    assert waiting.status_code == 202
    assert waiting["Location"] == answer["Location"] and waiting["Retry-After"]
    assert waiting.json()["TaskState"] == "New"


@pytest.mark.parametrize(
    ("body", "status", "message", "pointer"),
    [
        (
            {"Processors": [{"ProcessorType": "GPU", "Model": "Z9000"}]},
            400,
            "Base.PropertyValueNotInList",
            "#/Processors/0/Model",
        ),
        (
            {"Processors": [{"ProcessorType": "DSP"}]},
            400,
            "Base.PropertyValueNotInList",
            "#/Processors/0/ProcessorType",
        ),
        (
            {"Processors": [{"ProcessorType": "GPU", "@Redfish.RequestedCount": 0}]},
            400,
            "Base.PropertyValueOutOfRange",
            "#/Processors/0/@Redfish.RequestedCount",
        ),
        (
            {"Processors": [{"ProcessorType": "GPU", "@Redfish.RequestedCount": 9}]},
            400,
            "Base.PropertyValueOutOfRange",
            "#/Processors/0/@Redfish.RequestedCount",
        ),
        ({"Memory": [{"@Redfish.RequestedCount": 1}]}, 400, "Base.PropertyMissing", None),
        ({"Processors": [{"Colour": "red"}]}, 400, "Base.PropertyUnknown", None),
        ({"Name": "x"}, 400, "Base.CreateFailedMissingReqProperties", None),
        (
            {
                "Links": {
                    "ResourceBlocks": [
                        {"@odata.id": f"{V1}/CompositionService/ResourceBlocks/gpu-0"}
                    ]
                }
            },
            400,
            "Composition.ResourceBlockNotFound",
            "#/Links/ResourceBlocks/0",
        ),
        (
            {
                "Processors": [{"ProcessorType": "GPU", "@Redfish.RequestedCount": 2}],
                "Oem": {"Composer": {"Policy": "sideways"}},
            },
            400,
            "Base.PropertyValueNotInList",
            "#/Oem/Composer/Policy",
        ),
    ],
)
def test_bad_requests_are_refused_naming_the_property_and_write_nothing(
    synced: FabricManager,
    alice: Any,
    redfish_as: Any,
    body: dict[str, Any],
    status: int,
    message: str,
    pointer: str | None,
) -> None:
    answer = redfish_as(alice).post(SYSTEMS, body)
    assert answer.status_code == status, answer.content
    assert error_ids(answer) == [message]
    if pointer:
        assert related(answer) == [pointer]
    assert not Composition.objects.exists()


def test_over_quota_is_resource_exhaustion_and_nothing_fitting_is_no_resource_match(
    synced: FabricManager, alice: Any, acme: Any, redfish_as: Any
) -> None:
    quota = Quota(tenant=acme, kind="gpu", max_count=1)
    quota.full_clean()
    quota.save()
    client = redfish_as(alice)
    over = client.post(SYSTEMS, TWO_H100_AND_A_TIB)
    assert over.status_code == 409
    assert error_ids(over) == ["Base.ResourceExhaustion"]
    assert related(over) == ["#/Processors/Members/0/@Redfish.RequestedCount"]
    quota.delete()
    first = client.post(SYSTEMS, TWO_H100_AND_A_TIB)
    assert first.status_code == 202
    second = client.post(SYSTEMS, {**TWO_H100_AND_A_TIB, "Name": "second"})
    assert second.status_code == 409
    assert error_ids(second) == ["Composition.NoResourceMatch"]


def test_read_only_members_cannot_compose_and_outsiders_cannot_see_or_delete(
    synced: FabricManager,
    alice: Any,
    bob: Any,
    carol: Any,
    redfish_as: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    refused = redfish_as(bob).post(SYSTEMS, TWO_H100_AND_A_TIB)
    assert refused.status_code == 403
    assert error_ids(refused) == ["Base.InsufficientPrivilege"]
    _, composition = composed(
        redfish_as(alice), TWO_H100_AND_A_TIB, django_capture_on_commit_callbacks
    )
    path = f"{SYSTEMS}/{composition.pk}"
    assert redfish_as(carol).delete(path).status_code == 404
    assert redfish_as(bob).delete(path).status_code == 403
    job = Job.objects.get(kind=JobKind.COMPOSE, target_id=composition.pk)
    for where in (f"{V1}/TaskService/Tasks/{job.pk}", f"{V1}/TaskService/Tasks/{job.pk}/Monitor"):
        assert redfish_as(carol).get(where).status_code == 404
        assert redfish_as(bob).get(where).status_code in (200, 201)
    listed = redfish_as(carol).get(f"{V1}/TaskService/Tasks").json()
    assert listed["Members"] == []


def test_operators_name_the_tenant_or_act_for_the_only_one(
    synced: FabricManager,
    admin_user: Any,
    alice: Any,
    carol: Any,
    redfish_as: Any,
) -> None:
    client = redfish_as(admin_user)
    unnamed = client.post(SYSTEMS, TWO_H100_AND_A_TIB)
    assert unnamed.status_code == 400
    assert related(unnamed) == ["#/Oem/Composer/Tenant"]
    unknown = client.post(SYSTEMS, {**TWO_H100_AND_A_TIB, "Oem": {"Composer": {"Tenant": "x"}}})
    assert error_ids(unknown) == ["Base.PropertyValueNotInList"]
    named = client.post(SYSTEMS, {**TWO_H100_AND_A_TIB, "Oem": {"Composer": {"Tenant": "globex"}}})
    assert named.status_code == 202, named.content
    assert Composition.objects.get().tenant.slug == "globex"


def test_drives_nics_and_host_cores_compose_too(
    synced: FabricManager, alice: Any, redfish_as: Any, django_capture_on_commit_callbacks: Any
) -> None:
    body = {
        "Name": "io",
        "Drives": [{"@Redfish.RequestedCount": 1}],
        "NetworkInterfaces": {"Members": [{}]},
        "ProcessorSummary": {"CoreCount": 4},
    }
    _, composition = composed(redfish_as(alice), body, django_capture_on_commit_callbacks)
    composition.refresh_from_db()
    assert composition.state == CompositionState.READY, composition.failure_reason
    kinds = sorted(a.device.kind for a in composition.allocations.all())
    assert kinds == ["nic", "nvme"] and composition.spec["cores"] == 4


def test_an_operator_acts_for_the_only_tenant_without_naming_it(
    synced: FabricManager, admin_user: Any, alice: Any, redfish_as: Any
) -> None:
    answer = redfish_as(admin_user).post(SYSTEMS, TWO_H100_AND_A_TIB)
    assert answer.status_code == 202, answer.content
    composition = Composition.objects.get()
    assert (composition.tenant.slug, composition.requested_by) == ("acme", admin_user)


def test_a_read_only_member_may_not_reserve(
    synced: FabricManager, bob: Any, redfish_as: Any
) -> None:
    reserve = {
        "RequestType": "PreviewReserve",
        "Manifest": {"Stanzas": [{"StanzaType": "ComposeSystem", "Request": TWO_H100_AND_A_TIB}]},
    }
    compose = f"{V1}/CompositionService/Actions/CompositionService.Compose"
    refused = redfish_as(bob).post(compose, reserve)
    assert refused.status_code == 403
    assert error_ids(refused) == ["Base.InsufficientPrivilege"]
    assert not Composition.objects.exists()


def test_the_monitor_of_a_compose_that_failed_answers_the_reason_never_a_500(
    synced: FabricManager, alice: Any, redfish_as: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from fabric.simulator import store

    store.operation_fault_set(
        fabric=store.fabric_get("sim"), operation="bind", mode="permanent", count=1
    )
    client = redfish_as(alice)
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(SYSTEMS, TWO_H100_AND_A_TIB)
    assert answer.status_code == 202, answer.content
    assert Composition.objects.get().state == CompositionState.FAILED
    failed = client.get(answer["Location"])
    assert failed.status_code == 409
    assert error_ids(failed) == ["Base.GeneralError"]
    task = client.get(answer.json()["@odata.id"]).json()
    assert (task["TaskState"], task["TaskStatus"]) == ("Exception", "Critical")
    assert task["Messages"][0]["Resolution"] == failed.json()["error"]["message"]


def test_a_get_of_the_compose_action_is_405_with_allow(alice: Any, redfish_as: Any) -> None:
    answer = redfish_as(alice).get(f"{V1}/CompositionService/Actions/CompositionService.Compose")
    assert answer.status_code == 405
    assert answer["Allow"] == "POST"
    assert error_ids(answer) == ["Base.OperationNotAllowed"]


@pytest.mark.parametrize(
    "path",
    [
        f"{SYSTEMS}/99999999999999999999999",
        f"{V1}/TaskService/Tasks/99999999999999999999999",
        f"{V1}/TaskService/Tasks/99999999999999999999999/Monitor",
        f"{V1}/CompositionService/CompositionReservations/99999999999999999999999",
        f"{V1}/TaskService/Tasks/%C2%B2",
        f"{V1}/TaskService/Tasks/%C2%B2/Monitor",
        f"{V1}/CompositionService/CompositionReservations/%C2%B2",
        f"{V1}/Fabrics/%C2%B2",
        f"{SYSTEMS}/%C2%B2",
    ],
)
def test_an_id_no_row_can_have_is_404_not_500(alice: Any, redfish_as: Any, path: str) -> None:
    assert redfish_as(alice).get(path).status_code in (404, 405)
    assert redfish_as(alice).delete(path).status_code in (404, 405)


def test_non_ascii_digits_in_a_block_a_reservation_or_last_event_id_are_refused(
    synced: FabricManager, alice: Any, redfish_as: Any
) -> None:
    client = redfish_as(alice)
    named = {
        "Links": {
            "ResourceBlocks": [{"@odata.id": f"{V1}/CompositionService/ResourceBlocks/gpu-²"}]
        }
    }
    assert client.post(SYSTEMS, named).status_code == 400
    apply = {"RequestType": "Apply", "ReservationId": "²"}
    action = f"{V1}/CompositionService/Actions/CompositionService.Compose"
    assert client.post(action, apply).status_code in (400, 404)
    assert client.get(f"{V1}/EventService/SSE", Last_Event_ID="²").status_code == 400


def test_a_post_retried_with_its_idempotency_key_gets_the_first_task(
    synced: FabricManager, alice: Any, redfish_as: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = redfish_as(alice)
    body = {key: value for key, value in TWO_H100_AND_A_TIB.items() if key != "Name"}
    with django_capture_on_commit_callbacks(execute=True):
        first = client.post(SYSTEMS, body, Idempotency_Key="retry-7")
        again = client.post(SYSTEMS, body, Idempotency_Key="retry-7")
    assert first.status_code == again.status_code == 202, again.content
    assert again["Location"] == first["Location"]
    assert Composition.objects.filter(idempotency_key="retry-7").count() == 1
    assert Composition.objects.count() == 1

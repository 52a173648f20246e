"""Rule 1 across both front doors: composes through Redfish and through the REST API, side by
side on real threads against PostgreSQL, never allocate one block twice.

Skipped on SQLite (the `postgres` fixture says why); CI runs it on PostgreSQL.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from composer.choices import CompositionState
from composer.models import Allocation, Composition
from fabric.models import Device, FabricManager

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
EACH = 4  # requests through each door; the tiny world has 4 GPUs


def test_redfish_and_rest_composes_racing_for_the_gpus_get_each_gpu_once(
    postgres: None, synced: FabricManager, alice: Any, carol: Any, redfish_as: Any
) -> None:
    gpus = Device.objects.filter(kind="gpu").count()
    redfish = [redfish_as(alice) for _ in range(EACH)]
    rest = []
    for _ in range(EACH):
        client = APIClient()
        client.force_authenticate(user=carol)
        rest.append(client)
    start = threading.Barrier(2 * EACH)
    statuses: list[int] = []
    errors: list[BaseException] = []

    def run(send: Any) -> None:
        try:
            start.wait(timeout=30)
            statuses.append(send())
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)
        finally:
            connection.close()

    def through_redfish(index: int) -> Any:
        body = {"Name": f"rf-{index}", "Processors": [{"ProcessorType": "GPU"}]}
        return lambda: redfish[index].post("/redfish/v1/Systems", body).status_code

    def through_rest(index: int) -> Any:
        body = {"name": f"api-{index}", "spec": {"items": [{"kind": "gpu", "count": 1}]}}
        return lambda: rest[index].post("/api/v1/compositions/", body, format="json").status_code

    senders = [through_redfish(i) for i in range(EACH)] + [through_rest(i) for i in range(EACH)]
    threads = [threading.Thread(target=run, args=(send,)) for send in senders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors

    assert Counter(statuses)[202] == gpus, statuses  # as many granted as there are GPUs
    assert set(statuses) <= {202, 409, 422}, statuses  # the rest told nothing fits
    live = Allocation.objects.filter(released_at__isnull=True, device__kind="gpu")
    held = Counter(live.values_list("device_id", flat=True))
    assert len(held) == gpus and set(held.values()) == {1}
    ready = Composition.objects.filter(state=CompositionState.READY)
    assert ready.count() == gpus
    assert {c.tenant.slug for c in ready} <= {"acme", "globex"}


def test_two_tenants_naming_the_same_block_at_once_get_it_once(
    postgres: None, pooled: FabricManager, alice: Any, carol: Any, redfish_as: Any
) -> None:
    gpu = Device.objects.filter(kind="gpu").order_by("pk").first()
    assert gpu is not None
    link = {"@odata.id": f"/redfish/v1/CompositionService/ResourceBlocks/gpu-{gpu.pk}"}
    clients = [redfish_as(alice), redfish_as(carol)] * 2
    start = threading.Barrier(len(clients))
    answers: list[Any] = []

    def run(index: int) -> None:
        try:
            start.wait(timeout=30)
            body = {"Name": f"exact-{index}", "Links": {"ResourceBlocks": [link]}}
            answers.append(clients[index].post("/redfish/v1/Systems", body))
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(clients))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    statuses = sorted(a.status_code for a in answers)
    assert statuses[0] == 202 and statuses.count(202) == 1, statuses
    for answer in answers:
        if answer.status_code != 202:
            assert answer.status_code in (400, 409), answer.content
            assert answer.json()["error"]["@Message.ExtendedInfo"][0]["MessageId"].startswith(
                "Composition."
            )
    live = Allocation.objects.filter(device=gpu, released_at__isnull=True)
    assert live.count() == 1
